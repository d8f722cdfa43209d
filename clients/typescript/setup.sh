#!/usr/bin/env bash
# Installs the TypeScript client's pinned dependencies (npm ci) when package-lock.json changed since
# the last install, then builds the client into dist/ (JavaScript and .d.ts).
#
#   clients/typescript/setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

stamp=node_modules/.agentd-setup-stamp
wanted="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
  echo "setup.sh: node_modules is up to date with package-lock.json"
else
  npm ci --no-audit --no-fund
  echo "$wanted" >"$stamp"
fi
npm run --silent build
echo "setup.sh: built $(pwd)/dist"
