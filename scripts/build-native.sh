#!/usr/bin/env bash
# Build the native extension in place (serdes/_serdes_native*.so) from rust/ -- what
# `pip install -e .` does, for a checkout or worktree that was not pip-installed.
# Usage: bash scripts/build-native.sh [--debug]
# (--debug: larger stack frames, so the native loops hand shallower values to pure Python than a
# release build does -- docs/native.md, "Guards"; rebuild release afterwards)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile=release
[[ "${1:-}" == "--debug" ]] && profile=debug
flags=(); [[ $profile == release ]] && flags+=(--release)
cargo build -q "${flags[@]}" --features extension-module --manifest-path rust/Cargo.toml
suffix=$(python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# copy then rename: a process that has the old build loaded keeps its (unlinked) file, where
# overwriting it in place would crash that process
cp "rust/target/$profile/lib_serdes_native.so" "serdes/.native.tmp$suffix"
mv -f "serdes/.native.tmp$suffix" "serdes/_serdes_native$suffix"
python -c 'import serdes._native as n; print("serdes native extension:", n.implementation())'
