#!/usr/bin/env bash
# Install the MCP peers the end-to-end tests run agentd against, from their registries, pinned:
# the reference server @modelcontextprotocol/server-everything (npm, package-lock.json) into
# tests/mcp/node_modules, and the official Python SDK (`mcp`, requirements.txt with hashes) into
# target/mcp-venv. Does nothing when both are already installed at the pinned versions; fails
# loudly when node/npm or python3 are missing. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/mcp
venv=target/mcp-venv

command -v node >/dev/null 2>&1 || { echo "tests/mcp/setup.sh: node is required (install Node.js 18+)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "tests/mcp/setup.sh: npm is required (install Node.js 18+)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "tests/mcp/setup.sh: python3 (3.10+, with venv) is required" >&2; exit 1; }

if ! cmp -s "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock" 2>/dev/null; then
  echo "tests/mcp/setup.sh: installing the MCP reference server (npm ci)" >&2
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
  cp "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock"
fi
if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
  echo "tests/mcp/setup.sh: installing the MCP Python SDK into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
"$venv/bin/python" -c "import mcp.server.mcpserver" || { echo "tests/mcp/setup.sh: the MCP Python SDK does not import" >&2; exit 1; }
test -f "$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js" || {
  echo "tests/mcp/setup.sh: the MCP reference server is not installed" >&2; exit 1; }
