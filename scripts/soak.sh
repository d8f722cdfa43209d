#!/usr/bin/env bash
# Run the whole test suite N times back to back (default 5) while stress-ng keeps every core busy,
# with cargo nextest and no retries, and print the failures of each run: the check that no test
# fails by chance on a loaded machine (a flaky test is a defect; see CONTRIBUTING.md).
#
#   scripts/soak.sh [runs] [extra nextest arguments, e.g. a filter: -E 'test(/rpm|budget/)']
#
# Sets up what the suite needs exactly as scripts/test.sh does (scripts/test-env.sh: DATABASE_URL
# when set, else a throw-away cluster; the test peers, clients and model server; PostgreSQL 18 with
# pgvector for the vector tests), so that a run fails only for its tests. Needs stress-ng (Debian:
# apt-get install stress-ng). SOAK_STRESS_WORKERS sets how many CPU hogs run (default: one per
# core; more oversubscribe the machine). Logs go to target/soak/run-<n>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
export SQLX_OFFLINE=true
command -v stress-ng >/dev/null 2>&1 || { echo "soak.sh: stress-ng is required (apt-get install stress-ng)" >&2; exit 1; }

# shellcheck source=scripts/test-env.sh
. scripts/test-env.sh
stress_pid=""
cleanup() {
  [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null || true
  test_env_stop
}
trap cleanup EXIT
test_env_start
# Built once, up front: a source edited while the runs go would be built into the next run.
cargo nextest run --no-run "$@" >/dev/null 2>&1 || cargo nextest run --no-run "$@"

mkdir -p target/soak
stress-ng --cpu "${SOAK_STRESS_WORKERS:-$(nproc)}" --quiet &
stress_pid=$!
total=0
for n in $(seq 1 "$runs"); do
  log="target/soak/run-$n.log"
  start=$(date +%s)
  cargo nextest run --no-fail-fast --retries 0 --color never "$@" >"$log" 2>&1 || true
  took=$(( $(date +%s) - start ))
  failed=$(grep -E '^\s+FAIL \[' "$log" | sed -E 's/.*\) //' | sort -u || true)
  count=$(printf '%s' "$failed" | grep -c . || true)
  total=$((total + count))
  summary=$(grep -E 'Summary \[' "$log" | tail -n 1 | sed -E 's/^\s+//' || true)
  if [ -z "$summary" ]; then
    # No summary: the suite did not run (a build error, say): the run counts as a failure.
    summary="the suite did not run; see $log"
    count=$((count + 1))
    total=$((total + 1))
  fi
  echo "run $n (${took} s): $count failed; $summary"
  if [ -n "$failed" ]; then printf '%s\n' "$failed" | sed 's/^/    /'; fi
done
echo "soak: $total failures in $runs runs"
[ "$total" -eq 0 ]
