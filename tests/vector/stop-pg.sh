#!/usr/bin/env bash
# Usage: tests/vector/stop-pg.sh DATADIR
# Stop the PostgreSQL 18 that tests/vector/start-pg.sh started on DATADIR (fast shutdown: open
# sessions are ended), and wait until it has. Does nothing when it does not run; keeps DATADIR
# (remove it for a fresh cluster next time).
set -euo pipefail
say() { echo "tests/vector/stop-pg.sh: $*" >&2; }
[ $# -eq 1 ] || { say "usage: $0 DATADIR"; exit 2; }
data=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
pg=$(echo "$root"/target/vector-venv/lib/python3*/site-packages/pgserver/pginstall)
[ -x "$pg/bin/pg_ctl" ] || { say "PostgreSQL 18 is not installed: run tests/vector/setup.sh first"; exit 1; }
[ -f "$data/postmaster.pid" ] || exit 0
as_pg=()
if [ "$(id -u)" = 0 ]; then
  as_pg=(runuser -u "$(stat -c %U "$data")" --)
fi
if "${as_pg[@]}" "$pg/bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  "${as_pg[@]}" env LC_ALL=C "$pg/bin/pg_ctl" -D "$data" -m fast -w -t 60 -s stop || { say "PostgreSQL on $data did not stop"; exit 1; }
fi
