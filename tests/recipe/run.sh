#!/usr/bin/env bash
# Runs the curl-only integration test of docs/guides/testing-with-the-fake-model.md exactly as
# written there: extracts the shell block that follows the `<!-- ci: curl-integration-test -->`
# marker and runs it from the repository root with the freshly built agentd first on PATH and
# DATABASE_URL pointing at a fresh database.
#
# Needs curl, jq and PostgreSQL: DATABASE_URL pointing at a server where a database may be
# created, or, when it is unset, PostgreSQL's binaries for a throw-away cluster (as
# scripts/test.sh). Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SQLX_OFFLINE=true NO_COLOR=1

say() { echo "recipe-test: $*" >&2; }

for tool in curl jq; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "FAILED: $tool is not installed"
    exit 1
  fi
done

doc=docs/guides/testing-with-the-fake-model.md
marker='<!-- ci: curl-integration-test -->'
if [ ! -f "$doc" ]; then
  say "FAILED: $doc, which holds the curl-only integration test, does not exist"
  exit 1
fi
recipe=$(mktemp -t agentd-recipe.XXXXXX.sh)
# The lines between the opening ```sh fence after the marker and the closing fence.
awk -v marker="$marker" '
  $0 == marker { found = 1; next }
  found == 1 && /^```sh$/ { inside = 1; found = 2; next }
  inside && /^```$/ { exit }
  inside { print }
' "$doc" >"$recipe"
if [ ! -s "$recipe" ]; then
  say "FAILED: no shell block after '$marker' in $doc"
  exit 1
fi

# shellcheck source=scripts/pg-throwaway.sh
. scripts/pg-throwaway.sh
database=""
admin_url=""
cleanup() {
  set +e
  if [ -n "$database" ]; then
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 ||
      say "could not drop database $database"
  fi
  pg_throwaway_stop
  rm -f "$recipe"
}
trap cleanup EXIT

say "building agentd"
cargo build --quiet --bin agentd
target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)

if [ -z "${DATABASE_URL:-}" ]; then
  pg_throwaway_start
fi
admin_url=$DATABASE_URL
database="agentd_recipe_$$"
psql "$admin_url" -qc "CREATE DATABASE $database"

say "running the curl-only integration test of $doc ($(wc -l <"$recipe") lines)"
if ! PATH="$target_dir/debug:$PATH" DATABASE_URL="${admin_url%/*}/$database" RUST_LOG=info \
  timeout 300 bash "$recipe"; then
  say "FAILED: the curl-only integration test of $doc did not pass"
  exit 1
fi
say "passed"
