#!/usr/bin/env bash
# Install the official Standard Webhooks library (PyPI `standardwebhooks`, pinned with hashes)
# into target/webhooks-venv for the webhook tests' receiver. Does nothing when it is installed at
# the pinned version; fails loudly without python3 (with venv). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/webhooks
venv=target/webhooks-venv

command -v python3 >/dev/null 2>&1 || { echo "tests/webhooks/setup.sh: python3 (3.9+, with venv) is required" >&2; exit 1; }
if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
  echo "tests/webhooks/setup.sh: installing standardwebhooks into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/requirements.txt"
fi
"$venv/bin/python" -c "from standardwebhooks.webhooks import Webhook" || {
  echo "tests/webhooks/setup.sh: standardwebhooks does not import" >&2; exit 1; }
