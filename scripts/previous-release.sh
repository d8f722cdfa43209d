#!/usr/bin/env bash
# Builds the previous release's `agentd` (debug) from this repository's own history and prints its
# path: the binary the rolling-upgrade test (tests/e2e/upgrade.rs) runs next to this tree's.
#
#   scripts/previous-release.sh          # prints e.g. /root/.cache/agentd/releases/0.1.0-1a2b3c4d5e6f/agentd
#
# The previous release is the newest line of RELEASES whose version is not Cargo.toml's (so on a
# release's own commit it is the one before). Its commit is exported with `git archive` and built
# with this tree's target directory (dependencies built once serve both), then kept in
# ~/.cache/agentd/releases/<version>-<commit> (AGENTD_CACHE_DIR overrides ~/.cache/agentd): later
# runs, clean clones included, take no time. Needs the commit in this clone's history: a shallow
# clone fails here, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
export SQLX_OFFLINE=true

say() { echo "previous-release.sh: $*" >&2; }

current=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
release=$(awk -v current="$current" '!/^#/ && NF >= 2 && $1 != current { line = $0 } END { print line }' RELEASES)
if [ -z "$release" ]; then
  say "FAILED: RELEASES names no release other than this tree's ($current)"
  exit 1
fi
read -r version commit _ <<<"$release"
cache="${AGENTD_CACHE_DIR:-$HOME/.cache/agentd}/releases/$version-${commit:0:12}"
if [ -x "$cache/agentd" ]; then
  say "release $version (${commit:0:12}) is built: $cache/agentd"
  echo "$cache/agentd"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  say "FAILED: this clone lacks commit $commit of release $version (RELEASES): a shallow clone?"
  say "        git fetch --unshallow, then run this again"
  exit 1
fi

target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
source="$target_dir/previous-release/$version-${commit:0:12}"
rm -rf "$source"
mkdir -p "$source"
git archive --format=tar "$commit" | tar -x -C "$source"
say "building release $version (${commit:0:12}) from this repository's history (a few minutes, once)"
cargo build --quiet --locked --bin agentd --manifest-path "$source/Cargo.toml" --target-dir "$target_dir"
mkdir -p "$cache"
cp "$target_dir/debug/agentd" "$cache/agentd.partial"
mv "$cache/agentd.partial" "$cache/agentd"
rm -rf "$source"
# Both builds share target/debug/agentd: put this tree's back (cargo relinks it).
rm -f "$target_dir/debug/agentd"
cargo build --quiet --locked --bin agentd
"$cache/agentd" --version >&2
say "built release $version: $cache/agentd"
echo "$cache/agentd"
