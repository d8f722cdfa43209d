#!/usr/bin/env bash
# Regenerates the low-level client agentd_client/_generated/ from ../../openapi/openapi.json with
# the pinned openapi-python-client (requirements-gen.txt).
#
#   clients/python/generate.sh          regenerate in place
#   clients/python/generate.sh --check  fail when the committed code differs from a regeneration
#
# The generator is installed in a virtual environment at $AGENTD_PY_GEN_VENV (default
# clients/python/.venv-gen), created on first use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
spec="$here/../../openapi/openapi.json"
target="$here/agentd_client/_generated"
venv="${AGENTD_PY_GEN_VENV:-$here/.venv-gen}"
pinned="$(sed -n 's/^openapi-python-client==//p' "$here/requirements-gen.txt")"

mode=write
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if [[ "$("$venv/bin/openapi-python-client" --version 2>/dev/null || true)" != *"version: $pinned"* ]]; then
  echo "generate.sh: installing openapi-python-client $pinned into $venv" >&2
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-gen.txt"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The generator's warnings (the operations it skips, listed in README.md) go to stderr.
PATH="$venv/bin:$PATH" "$venv/bin/openapi-python-client" generate \
  --path "$spec" --meta none --config "$here/openapi-python-client.yaml" \
  --output-path "$work/_generated" >"$work/generator.log" 2>&1 || {
  cat "$work/generator.log" >&2
  echo "generate.sh: openapi-python-client failed" >&2
  exit 1
}
find "$work/_generated" -name __pycache__ -prune -exec rm -rf {} +

if [[ $mode == check ]]; then
  if ! diff -r -q -x __pycache__ "$work/_generated" "$target" >"$work/diff.txt" 2>&1; then
    cat "$work/diff.txt" >&2
    echo "error: the generated Python client (clients/python/agentd_client/_generated) is out of" \
      "date with openapi/openapi.json. Fix: run clients/python/generate.sh and commit the result." >&2
    exit 1
  fi
  echo "generate.sh: the generated Python client is up to date"
else
  rm -rf "$target"
  mv "$work/_generated" "$target"
  echo "generate.sh: regenerated $target"
fi
