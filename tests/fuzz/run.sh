#!/usr/bin/env bash
# Fuzz serdes' native Avro decoder, encoder and dispatcher against the pure-Python path
# (tests/fuzz/fuzz_native.py, atheris/libFuzzer).
#
#   bash tests/fuzz/run.sh [--coverage] [SECONDS] [-- libFuzzer flags]
#
# SECONDS (default 60) bounds the run (-max_total_time). The seeds are tests/fuzz/corpus (read only);
# new inputs go to a throwaway corpus, or to SERDES_FUZZ_CORPUS=DIR to keep them for a later run
# (to minimise new finds into the seeds: SERDES_FUZZ_CORPUS=$PWD/tests/fuzz/corpus bash
# tests/fuzz/run.sh --coverage -- -merge=1 DIR). A finding stops the run, exits non-zero and is
# written to SERDES_FUZZ_ARTIFACTS (default tests/fuzz/findings/): replay it with
#   PYTHONPATH=.:tests/protos <venv>/bin/python tests/fuzz/fuzz_native.py tests/fuzz/findings/crash-...
# --coverage builds the extension with libFuzzer's coverage counters (rustc's sancov passes, in
# ~/.cache/serdes/fuzz-target) and loads it through a copy of the package, so the Rust code guides
# the search too (a few minutes to build; the long run). Without it the Python code is instrumented
# and the native code is checked differentially on every input, unguided.
# atheris lives in ~/.cache/serdes/venvs/fuzz-<python version> (a venv over this Python's
# site-packages, so serdes' dependencies are the ones the tests use).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$PWD
PY=$(command -v "${PYTHON:-python}")
coverage=0
if [[ ${1:-} == --coverage ]]; then coverage=1; shift; fi
seconds=60
if [[ ${1:-} =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
[[ ${1:-} == -- ]] && shift
cache="${XDG_CACHE_HOME:-$HOME/.cache}/serdes"

venv="$cache/venvs/fuzz-$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
mkdir -p "$cache/venvs"
exec {lock_fd}>"$venv.lock"
flock "$lock_fd"
if [[ ! -f $venv/.serdes-complete ]]; then
    rm -rf "$venv"
    "$PY" -m venv --system-site-packages "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "atheris>=3,<4"
    touch "$venv/.serdes-complete"
fi
exec {lock_fd}>&-

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
corpus=${SERDES_FUZZ_CORPUS:-$tmp/corpus}
artifacts=${SERDES_FUZZ_ARTIFACTS:-$repo/tests/fuzz/findings}
mkdir -p "$corpus" "$artifacts"
root=$repo
preload=()
if (( coverage )); then
    target="$cache/fuzz-target"
    triple=$(rustc -vV | sed -n 's/^host: //p')
    RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares" PYO3_PYTHON=$PY \
        CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        cargo build -q --release --features extension-module --target "$triple" --target-dir "$target" \
        --manifest-path rust/Cargo.toml
    suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    cp -r serdes "$tmp/serdes"
    cp "$target/$triple/release/lib_serdes_native.so" "$tmp/serdes/_serdes_native$suffix"
    root=$tmp
    # libFuzzer with the coverage-counter hooks the instrumented extension calls
    preload=(LD_PRELOAD="$("$venv/bin/python" -c 'import atheris, os; print(os.path.join(os.path.dirname(os.path.dirname(atheris.__file__)), "ubsan_with_fuzzer.so"))')")
fi
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$venv/bin/python" "$repo/tests/fuzz/fuzz_native.py" >"$tmp/fuzz_native"
chmod +x "$tmp/fuzz_native"
echo "== fuzzing ${seconds}s (native coverage: $coverage), seeds tests/fuzz/corpus, findings in $artifacts"
cd "$root"
set +e
# ($repo last: the harness imports tests.support; serdes itself comes from $root)
env "${preload[@]}" PYTHONPATH="$root:$repo/tests/protos:$repo" SERDES_FUZZ_EXPECT_ROOT="$root" SERDES_FUZZ_ARGV0="$tmp/fuzz_native" \
    "$venv/bin/python" "$repo/tests/fuzz/fuzz_native.py" "$corpus" "$repo/tests/fuzz/corpus" \
    -max_total_time="$seconds" -max_len=1024 -timeout=30 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" 2>&1 | grep -v '^INFO: Instrumenting'
rc=${PIPESTATUS[0]}
set -e
if (( rc != 0 )); then
    echo "== fuzzing failed (exit $rc); replay a finding with:" >&2
    echo "   cd $repo && PYTHONPATH=.:tests/protos $venv/bin/python tests/fuzz/fuzz_native.py $artifacts/<crash-file>" >&2
fi
exit "$rc"
