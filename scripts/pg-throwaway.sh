# shellcheck shell=bash
# Sourced by scripts/test-env.sh, tests/browser/run.sh and tests/recipe/run.sh: a throw-away
# PostgreSQL cluster in a temporary directory on a free port, for machines where DATABASE_URL is
# not set.
#
#   pg_throwaway_start   starts it and exports DATABASE_URL (exits when PostgreSQL is missing)
#   pg_throwaway_stop    stops it and removes its directory (safe to call when none was started)
#   free_port            prints a free TCP port on 127.0.0.1

pg_throwaway_dir=""
pg_bin=""

# initdb and postgres refuse to run as root; run them as the postgres user then.
as_pg_user() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

pg_throwaway_start() {
  if command -v initdb >/dev/null 2>&1; then
    pg_bin=$(dirname "$(command -v initdb)")
  else
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  fi
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
    echo "error: DATABASE_URL is not set and PostgreSQL is not installed (no initdb found)." >&2
    echo "       Install PostgreSQL (e.g. apt-get install postgresql) or set DATABASE_URL." >&2
    exit 1
  fi
  pg_throwaway_dir=$(mktemp -d -t agentd-pg.XXXXXX)
  chmod 755 "$pg_throwaway_dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$pg_throwaway_dir"; fi
  local port
  port=$(free_port)
  as_pg_user "$pg_bin/initdb" -D "$pg_throwaway_dir/data" -U postgres --auth=trust -E UTF8 >"$pg_throwaway_dir/initdb.log"
  as_pg_user "$pg_bin/pg_ctl" -D "$pg_throwaway_dir/data" -l "$pg_throwaway_dir/server.log" -w -t 60 \
    -o "-p $port -k $pg_throwaway_dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" \
    start >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "started a throw-away PostgreSQL on port $port" >&2
}

pg_throwaway_stop() {
  if [ -n "$pg_throwaway_dir" ]; then
    as_pg_user "$pg_bin/pg_ctl" -D "$pg_throwaway_dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$pg_throwaway_dir"
    pg_throwaway_dir=""
  fi
}
