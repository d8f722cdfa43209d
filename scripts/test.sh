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

cluster_dir=""
cleanup() {
  if [ -n "$cluster_dir" ]; then
    as_pg_user "$pg_bin/pg_ctl" -D "$cluster_dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$cluster_dir"
  fi
}
trap cleanup EXIT

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

start_cluster() {
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
  cluster_dir=$(mktemp -d -t agentd-pg.XXXXXX)
  chmod 755 "$cluster_dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$cluster_dir"; fi
  local port
  port=$(free_port)
  as_pg_user "$pg_bin/initdb" -D "$cluster_dir/data" -U postgres --auth=trust -E UTF8 >"$cluster_dir/initdb.log"
  as_pg_user "$pg_bin/pg_ctl" -D "$cluster_dir/data" -l "$cluster_dir/server.log" -w -t 60 \
    -o "-p $port -k $cluster_dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" \
    start >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "test.sh: started a throw-away PostgreSQL on port $port" >&2
}

if [ -z "${DATABASE_URL:-}" ]; then
  start_cluster
fi

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --no-fail-fast "$@"
else
  echo "test.sh: cargo-nextest not found, using cargo test" >&2
  cargo test --no-fail-fast "$@"
fi
