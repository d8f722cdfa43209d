#!/usr/bin/env bash
# Install the official A2A SDK (PyPI `a2a-sdk`, client side, pinned with hashes with all its
# dependencies) into target/a2a-venv for the A2A tests' client (tests/a2a/client.py). Does nothing
# when it is installed at the pinned versions; fails loudly without python3 (3.10+, with venv).
# scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/a2a
venv=target/a2a-venv

command -v python3 >/dev/null 2>&1 || { echo "tests/a2a/setup.sh: python3 (3.10+, with venv) is required" >&2; exit 1; }
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "tests/a2a/setup.sh: python3 is $(python3 -V 2>&1); a2a-sdk needs 3.10+" >&2; exit 1; }
if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
  echo "tests/a2a/setup.sh: installing a2a-sdk into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
"$venv/bin/python" -c "from a2a.client import A2ACardResolver, ClientConfig, ClientFactory; from a2a.types.a2a_pb2 import SendMessageRequest; from a2a.utils.constants import PROTOCOL_VERSION_CURRENT as v; assert v == '1.0', v" || {
  echo "tests/a2a/setup.sh: a2a-sdk does not import (or does not speak A2A 1.0)" >&2; exit 1; }
