#!/usr/bin/env bash
# Install the official AG-UI client the end-to-end tests drive agentd's AG-UI endpoint with:
# @ag-ui/client from npm, pinned by package-lock.json (exact versions, integrity hashes), into
# tests/ag-ui/node_modules, where tests/ag-ui/client.mjs imports it. Does nothing when it is
# already installed from the current lock; fails loudly when node/npm are missing or the
# package does not import. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/ag-ui

command -v node >/dev/null 2>&1 || { echo "tests/ag-ui/setup.sh: node is required (install Node.js 18+)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "tests/ag-ui/setup.sh: npm is required (install Node.js 18+)" >&2; exit 1; }

if ! cmp -s "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock" 2>/dev/null; then
  echo "tests/ag-ui/setup.sh: installing the AG-UI client (npm ci)" >&2
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
  cp "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock"
fi
(cd "$here" && node --input-type=module -e '
  const { HttpAgent, verifyEvents } = await import("@ag-ui/client");
  if (typeof HttpAgent !== "function" || typeof verifyEvents !== "function") throw new Error("HttpAgent/verifyEvents missing");
') || { echo "tests/ag-ui/setup.sh: the AG-UI client (@ag-ui/client) does not import" >&2; exit 1; }
