#!/usr/bin/env bash
# Install the protocols' own conformance tools the end-to-end tests run against agentd, from npm,
# pinned by package-lock.json (exact versions, integrity hashes), into tests/conformance/node_modules:
# the MCP conformance suite (@modelcontextprotocol/conformance), the official MCP TypeScript SDK
# (@modelcontextprotocol/sdk, its client in ts-client.mjs) and Node.js 22 itself (npm's `node`
# package: the suite needs Node >= 22, the machine may have an older one). Does nothing when it is
# already installed from the current lock; fails loudly when npm is missing or a tool does not
# start. scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/conformance

command -v npm >/dev/null 2>&1 || { echo "tests/conformance/setup.sh: npm is required (install Node.js 18+)" >&2; exit 1; }

if ! cmp -s "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock" 2>/dev/null; then
  echo "tests/conformance/setup.sh: installing the conformance tools and Node.js 22 (npm ci)" >&2
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
  cp "$here/package-lock.json" "$here/node_modules/.agentd-installed-lock"
fi
node22="$here/node_modules/.bin/node"
version=$("$node22" --version 2>/dev/null) || { echo "tests/conformance/setup.sh: npm's Node.js 22 does not run ($node22)" >&2; exit 1; }
case "$version" in
  v22.*) ;;
  *) echo "tests/conformance/setup.sh: $node22 is $version, not Node.js 22" >&2; exit 1 ;;
esac
"$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" --version >/dev/null \
  || { echo "tests/conformance/setup.sh: the MCP conformance suite does not start" >&2; exit 1; }
(cd "$here" && node_modules/.bin/node --input-type=module -e '
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  if (typeof Client !== "function" || typeof StreamableHTTPClientTransport !== "function") throw new Error("the SDK client is missing");
') || { echo "tests/conformance/setup.sh: the MCP TypeScript SDK does not import" >&2; exit 1; }
