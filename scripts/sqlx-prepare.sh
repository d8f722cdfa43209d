#!/usr/bin/env bash
# Regenerate the offline query data in .sqlx/ (needed after changing any sqlx::query! macro or the
# schema), or with --check, fail when the committed data is stale.
#
# Needs a PostgreSQL server in DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/postgres)
# where a scratch database may be created. Does not need sqlx-cli: the sqlx macros write their data
# to SQLX_OFFLINE_DIR themselves.
set -euo pipefail
cd "$(dirname "$0")/.."

admin_url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
scratch="agentd_prepare_$$"
scratch_url="${admin_url%/*}/$scratch"
out=$(mktemp -d)
cleanup() {
  psql "$admin_url" -qc "DROP DATABASE IF EXISTS $scratch" >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT

psql "$admin_url" -qc "CREATE DATABASE $scratch"
for migration in migrations/*.sql; do
  psql "$scratch_url" -q -v ON_ERROR_STOP=1 -f "$migration" >/dev/null
done

# Force the macros to run again, writing their data to $out.
touch src/lib.rs
SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$out" DATABASE_URL="$scratch_url" cargo check --all-targets --quiet

if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$out" .sqlx >/dev/null; then
    diff -r "$out" .sqlx | head -20 >&2 || true
    echo "error: .sqlx/ is stale: run scripts/sqlx-prepare.sh and commit the result" >&2
    exit 1
  fi
  echo ".sqlx/ is up to date"
else
  rm -rf .sqlx
  cp -r "$out" .sqlx
  echo "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
fi
