#!/usr/bin/env bash
# Checks the TypeScript client: set up and built, the generated schema current with
# openapi/openapi.json, the sources and the type tests clean under tsc --strict, and the tests
# passing (the integration tests too when AGENTD_URL names a server started with --fake-llm;
# AGENTD_API_KEY when it has keys).
#
#   clients/typescript/check.sh
#   AGENTD_URL=http://127.0.0.1:8080 clients/typescript/check.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

./setup.sh
npm run --silent check:generated
npm run --silent typecheck
if [[ -z "${AGENTD_URL:-}" ]]; then
  echo "check.sh: AGENTD_URL is not set: the integration tests (test/integration.test.mjs) are skipped" >&2
fi
npm test
