#!/usr/bin/env bash
# Creates the virtual environment of the Python client's tests and installs into it the client
# (editable) and the pinned tools of requirements-dev.txt (pytest, mypy, standardwebhooks and the
# code generator).
#
#   clients/python/setup.sh
#
# The environment is at $AGENTD_PY_CLIENT_VENV (default clients/python/.venv). Nothing is done
# when it was already set up from the same requirements and pyproject.toml.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${AGENTD_PY_CLIENT_VENV:-$here/.venv}"
python="${PYTHON:-python3}"
stamp="$venv/.agentd-client-setup"

wanted="$(cat "$here/requirements-dev.txt" "$here/requirements-gen.txt" "$here/pyproject.toml" \
  | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$venv/bin/python" ]]; then
  echo "setup.sh: $venv is up to date"
  exit 0
fi

fail() { echo "setup.sh: $*" >&2; exit 1; }
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv" || fail "cannot create a virtual environment at $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$here/requirements-dev.txt" || fail "installing requirements-dev.txt failed"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  -e "$here" || fail "installing the client failed"
"$venv/bin/python" -c 'import agentd_client, pytest, mypy, standardwebhooks' \
  || fail "the environment at $venv is incomplete"
echo "$wanted" >"$stamp"
echo "setup.sh: set up $venv"
