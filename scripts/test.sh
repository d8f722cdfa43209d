#!/usr/bin/env bash
# Run the whole test suite with cargo-nextest (installed from crates.io, pinned, when missing; the
# suite does not run under `cargo test`).
#
# Uses DATABASE_URL when it is set (a server where the user may create databases: every test gets
# a fresh one). Otherwise, when PostgreSQL's binaries are installed, starts a throw-away cluster in
# a temporary directory on a free port and removes it afterwards. scripts/test-env.sh says what
# else is set up first. Extra arguments go to `cargo nextest run`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds never need a database: queries are checked against the committed .sqlx/ data.
export SQLX_OFFLINE=true

# shellcheck source=scripts/test-env.sh
. scripts/test-env.sh
trap test_env_stop EXIT
test_env_start

cargo nextest run --no-fail-fast "$@"
