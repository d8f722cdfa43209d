#!/usr/bin/env bash
# schemathesis against the OpenAPI document a running agentd serves: all operations, all checks,
# positive and negative data (tests/schemathesis/schemathesis.toml says how). Installs the pinned
# schemathesis into target/schemathesis-venv, starts `agentd serve` on a fresh database with an
# API key and the built-in fake model (runs complete; nothing leaves the machine), and fails
# unless schemathesis finds nothing and the valid examples were accepted (a kickoff, a batch, a
# crew and a key created, a CrewAI project imported).
#
# Needs DATABASE_URL (a server where it may create a database) and python3.
# AGENTD_ST_SEED picks the seed (default 1, so that CI is repeatable).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DATABASE_URL:?DATABASE_URL must name a PostgreSQL server}"
here=tests/schemathesis
venv=target/schemathesis-venv

if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
  echo "schemathesis: installing the pinned requirements into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi

SQLX_OFFLINE=true cargo build -q --bin agentd
database=agentd_schemathesis
psql -q -X "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $database" -c "CREATE DATABASE $database" >/dev/null
url=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$DATABASE_URL" "$database")

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# The default provider answers from a script: every run completes.
cat >"$work/answer.toml" <<'TOML'
[[rules]]
reply = { text = "Final Answer: a short, exact answer." }
TOML
cat >"$work/agentd.toml" <<'TOML'
[providers.openai]
kind = "fake"
script = "answer.toml"
TOML
export AGENTD_ST_KEY="schemathesis-$RANDOM$RANDOM"
export AGENTD_ST_SEED="${AGENTD_ST_SEED:-1}"
# Secrets on (a fixed test key), so that their routes answer as they do in production.
export AGENTD_SECRETS_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
# Webhooks on too (a fixed signing secret).
export AGENTD_WEBHOOK_SECRET=whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKio=
DATABASE_URL="$url" AGENTD_BIND=127.0.0.1:0 AGENTD_API_KEYS="$AGENTD_ST_KEY" AGENTD_CONFIG="$work/agentd.toml" \
  RUST_LOG=warn,agentd=info NO_COLOR=1 target/debug/agentd serve 2>"$work/server.log" &
server_pid=$!
base=
for _ in $(seq 1 300); do
  base=$(sed -n 's/.*agentd listening addr=\([0-9.:]*\).*/\1/p' "$work/server.log" | head -n 1)
  [ -n "$base" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "schemathesis: agentd did not start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { cat "$work/server.log" >&2; echo "schemathesis: agentd did not say where it listens" >&2; exit 1; }

status=0
"$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run "http://$base/openapi.json" \
  --seed "$AGENTD_ST_SEED" --no-color --report ndjson --report-dir "$work/report" || status=$?
if grep -q " ERROR \| panicked" "$work/server.log"; then
  grep " ERROR \| panicked" "$work/server.log" | head -n 20 >&2
  echo "schemathesis: FAILED: the server logged errors" >&2
  status=1
fi
report=$(ls "$work"/report/*.ndjson 2>/dev/null | head -n 1)
if [ -z "$report" ]; then
  echo "schemathesis: FAILED: no report was written" >&2
  exit 1
fi
python3 "$here/created.py" "$report" || status=1
exit "$status"
