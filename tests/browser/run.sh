#!/usr/bin/env bash
# The dashboard's browser test: builds agentd, gives it a fresh database, a fake LLM (a provider
# of kind = "fake") and an API key, then drives the page in Debian's Chromium through
# playwright-core (tests/browser/dashboard.test.mjs).
#
# Needs node >= 20 with the lockfile's packages (`npm ci --prefix tests/browser`), Chromium at
# /usr/bin/chromium (or $CHROMIUM; `apt-get install chromium`), and PostgreSQL: DATABASE_URL
# pointing at a server where a database may be created, or, when it is unset, PostgreSQL's
# binaries for a throw-away cluster (as scripts/test.sh). Honours CARGO_TARGET_DIR.
# Logs and, on failure, a screenshot are kept in $BROWSER_ARTIFACTS (default: a temporary
# directory, removed after a pass).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SQLX_OFFLINE=true NO_COLOR=1

say() { echo "browser-test: $*" >&2; }

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  say "FAILED: no Chromium at $chromium (apt-get install chromium, or set CHROMIUM)"
  exit 1
fi
if ! command -v node >/dev/null 2>&1; then
  say "FAILED: node is not installed"
  exit 1
fi
if [ ! -f tests/browser/node_modules/playwright-core/package.json ]; then
  say "FAILED: playwright-core is not installed: run npm ci --prefix tests/browser"
  exit 1
fi

artifacts=${BROWSER_ARTIFACTS:-$(mktemp -d -t agentd-browser.XXXXXX)}
mkdir -p "$artifacts"
# shellcheck source=scripts/pg-throwaway.sh
. scripts/pg-throwaway.sh

database=""
admin_url=""
supervisor_pid=""
stop_file="$artifacts/stop"
# A stop file left by an earlier run in the same BROWSER_ARTIFACTS would keep agentd from starting.
rm -f "$stop_file"
pid_file="$artifacts/agentd.pid"
passed=false

cleanup() {
  set +e
  touch "$stop_file"
  if [ -s "$pid_file" ]; then kill -TERM "$(cat "$pid_file")" 2>/dev/null; fi
  if [ -n "$supervisor_pid" ]; then
    for _ in $(seq 1 50); do kill -0 "$supervisor_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$supervisor_pid" 2>/dev/null; then
      [ -s "$pid_file" ] && kill -KILL "$(cat "$pid_file")" 2>/dev/null
      kill -KILL "$supervisor_pid" 2>/dev/null
    fi
    wait "$supervisor_pid" 2>/dev/null
  fi
  if [ -n "$database" ]; then
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 ||
      say "could not drop database $database"
  fi
  pg_throwaway_stop
  if [ "$passed" = true ] && [ -z "${BROWSER_ARTIFACTS:-}" ]; then
    rm -rf "$artifacts"
  elif [ "$passed" != true ]; then
    for log in "$artifacts/agentd.log"; do
      if [ -f "$log" ]; then
        say "last lines of $log:"
        tail -n 25 "$log" >&2
      fi
    done
    say "logs and screenshots are in $artifacts"
  fi
}
trap cleanup EXIT

# Wait until `$1` answers 200 (at most $2 seconds).
wait_ready() {
  local url=$1 seconds=$2
  for _ in $(seq 1 $((seconds * 10))); do
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

started=$(date +%s)
say "building agentd"
cargo build --quiet --bin agentd
target_dir=$(cargo metadata --format-version 1 --no-deps |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')
bin="$target_dir/debug/agentd"

if [ -z "${DATABASE_URL:-}" ]; then
  pg_throwaway_start
fi
admin_url=$DATABASE_URL
database="agentd_browser_$$"
psql "$admin_url" -qc "CREATE DATABASE $database"
database_url="${admin_url%/*}/$database"

reply="Hello from the fake LLM, seen by the browser test."
# The default provider is agentd's fake model (kind = "fake"), so runs show the "fake model" badge.
# Each reply waits 1.5 s, so the test can restart agentd while a run's LLM call is in flight. A task
# saying APPROVAL-DEMO gets a calculator call first (the test's crew makes it need approval), then
# an answer that tells whether the call ran (42) or was rejected.
# An evaluation's judge passes an answer that is the browser test's reply; an EVAL-DEMO v2 task
# about harbours gets an answer that fails it.
node -e 'console.log(JSON.stringify({rules: [
  {name: "judge passes", when: {system: "strict evaluator", message: process.argv[1]}, reply: {text: "{\"pass\": true, \"score\": 1, \"reason\": \"answers the question\"}"}},
  {name: "judge fails", when: {system: "strict evaluator"}, reply: {text: "{\"pass\": false, \"score\": 0, \"reason\": \"does not answer\"}"}},
  {name: "eval v2", when: {message: "EVAL-DEMO v2: harbours"}, reply: {text: "I do not know."}},
  {name: "approved", when: {tool_result: "42"}, reply: {text: "Approved: 42"}},
  {name: "rejected", when: {tool_result: "rejected"}, reply: {text: "Rejected as asked."}},
  {name: "needs approval", when: {message: "APPROVAL-DEMO"}, reply: {tool_calls: [{name: "calculator", arguments: {expression: "6*7"}}]}},
  {name: "waterfall", when: {message: "WATERFALL-DEMO"}, reply: {tool_calls: [{name: "calculator", arguments: {expression: "6*7"}}]}},
  {name: "streamed", when: {message: "STREAM-DEMO"}, reply: {text: "one two three four five six seven eight nine ten", chunk_delay_ms: 300}},
  {name: "browser test", reply: {text: process.argv[1], delay_ms: 1500}}]}))' \
  "$reply" >"$artifacts/fake-llm.json"
printf '[providers.openai]\nkind = "fake"\nscript = "fake-llm.json"\nprices."gpt-4o-mini" = { input = 0.15, output = 0.6 }\n' >"$artifacts/agentd.toml"

port=$(free_port)
api_key="browser-test-$RANDOM$RANDOM"
# agentd serve, started again whenever it exits (the test restarts it with SIGTERM) until cleanup.
(
  while [ ! -e "$stop_file" ]; do
    DATABASE_URL="$database_url" AGENTD_BIND="127.0.0.1:$port" AGENTD_API_KEYS="$api_key" \
      AGENTD_CONFIG="$artifacts/agentd.toml" \
      AGENTD_SHUTDOWN_GRACE_S=0 AGENTD_LEASE_S=5 AGENTD_WORKERS=4 RUST_LOG=info \
      AGENTD_WEBHOOK_SECRET="whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=" \
      AGENTD_ALLOW_PRIVATE_WEBHOOK_HOSTS=127.0.0.1 \
      "$bin" serve >>"$artifacts/agentd.log" 2>&1 &
    echo $! >"$pid_file"
    wait $! || true
    sleep 0.2
  done
) &
supervisor_pid=$!
base="http://127.0.0.1:$port"
if ! wait_ready "$base/readyz" 60; then
  say "FAILED: agentd did not become ready on $base"
  exit 1
fi
say "agentd on $base with a fake provider ($(($(date +%s) - started)) s to set up)"

AGENTD_URL="$base" AGENTD_API_KEY="$api_key" FAKE_LLM_REPLY="$reply" AGENTD_PID_FILE="$pid_file" \
  BROWSER_ARTIFACTS="$artifacts" CHROMIUM="$chromium" \
  node tests/browser/dashboard.test.mjs
passed=true
say "passed in $(($(date +%s) - started)) s"
