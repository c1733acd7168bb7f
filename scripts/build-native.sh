#!/usr/bin/env bash
# Build the native extension in place (serdes/_serdes_native*.so) from rust/ -- what
# `pip install -e .` does, for a checkout or worktree that was not pip-installed.
# Usage: bash scripts/build-native.sh [--debug]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile=release
[[ "${1:-}" == "--debug" ]] && profile=debug
flags=(); [[ $profile == release ]] && flags+=(--release)
cargo build -q "${flags[@]}" --manifest-path rust/Cargo.toml
suffix=$(python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# copy then rename: overwriting the file in place crashes a running process that has it mapped
cp "rust/target/$profile/lib_serdes_native.so" "serdes/.tmp_serdes_native$suffix"
mv -f "serdes/.tmp_serdes_native$suffix" "serdes/_serdes_native$suffix"
python -c 'import serdes._native as n; print("serdes native extension:", n.implementation())'
