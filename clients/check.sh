#!/usr/bin/env bash
# Checks every client in clients/ the way CI does: each client's own check.sh (its generated code
# is current with openapi/openapi.json, it type-checks, its unit tests pass) and its integration
# tests against a real `agentd serve --fake-llm` on a loopback port, with a fresh database.
#
# Needs what the clients need (python3 with venv; node and npm) and PostgreSQL: DATABASE_URL
# pointing at a server where a database may be created, or, when it is unset, PostgreSQL's
# binaries for a throw-away cluster (as scripts/test.sh). Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
export SQLX_OFFLINE=true NO_COLOR=1

say() { echo "clients/check.sh: $*" >&2; }

# shellcheck source=scripts/pg-throwaway.sh
. scripts/pg-throwaway.sh
database=""
admin_url=""
server=""
log=$(mktemp -t agentd-clients.XXXXXX.log)
cleanup() {
  set +e
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
  fi
  if [ -n "$database" ]; then
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 ||
      say "could not drop database $database"
  fi
  pg_throwaway_stop
  rm -f "$log"
}
trap cleanup EXIT

# Versioned with the server: each client's version is Cargo.toml's.
server_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
versions=$(python3 - "$server_version" <<'PY'
import json, pathlib, re, sys
wanted = sys.argv[1]
found = {
    "clients/python/pyproject.toml": re.search(r'^version = "(.*)"$', pathlib.Path("clients/python/pyproject.toml").read_text(), re.M).group(1),
    "clients/python/agentd_client/_version.py": re.search(r'__version__ = "(.*)"', pathlib.Path("clients/python/agentd_client/_version.py").read_text()).group(1),
    "clients/typescript/package.json": json.loads(pathlib.Path("clients/typescript/package.json").read_text())["version"],
}
for path, version in found.items():
    if version != wanted:
        print(f"{path} says {version}")
PY
)
if [ -n "$versions" ]; then
  say "FAILED: the clients' versions must be the server's ($server_version, Cargo.toml): $versions"
  exit 1
fi

say "building agentd"
cargo build --quiet --bin agentd
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

if [ -z "${DATABASE_URL:-}" ]; then
  pg_throwaway_start
fi
admin_url=$DATABASE_URL
database="agentd_clients_$$"
psql "$admin_url" -qc "CREATE DATABASE $database"

DATABASE_URL="${admin_url%/*}/$database" AGENTD_API_KEYS="" RUST_LOG=info \
  "$target_dir/debug/agentd" serve --fake-llm --bind 127.0.0.1:0 >"$log" 2>&1 &
server=$!
addr=""
for _ in $(seq 1 600); do
  addr=$(sed -n 's/.*addr=\([0-9.:]*\).*/\1/p' "$log" | head -n 1)
  [ -n "$addr" ] && break
  if ! kill -0 "$server" 2>/dev/null; then
    cat "$log" >&2
    say "FAILED: agentd serve exited before it listened"
    exit 1
  fi
  sleep 0.1
done
if [ -z "$addr" ]; then
  cat "$log" >&2
  say "FAILED: agentd serve did not log its address within 60 s"
  exit 1
fi
export AGENTD_URL="http://$addr"
say "agentd --fake-llm serves at $AGENTD_URL"

for client in python typescript; do
  say "== clients/$client"
  if ! "clients/$client/check.sh"; then
    say "FAILED: clients/$client/check.sh"
    exit 1
  fi
done
say "passed"
