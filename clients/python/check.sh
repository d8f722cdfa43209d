#!/usr/bin/env bash
# Checks the Python client: the generated code is current, the hand-written layer is clean under
# mypy --strict, and the tests pass (the integration tests too when AGENTD_URL names a server
# started with --fake-llm).
#
#   clients/python/check.sh [pytest arguments]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${AGENTD_PY_CLIENT_VENV:-$here/.venv}"

"$here/setup.sh"
AGENTD_PY_GEN_VENV="$venv" "$here/generate.sh" --check
(cd "$here" && "$venv/bin/mypy" --strict -p agentd_client)
(cd "$here" && "$venv/bin/mypy" --strict tests)
cd "$here" && "$venv/bin/python" -m pytest "$@"
