#!/usr/bin/env bash
# The Rust checks of the native extension (rust/), as CI runs them (.ci/run):
#   cargo fmt --check                            rust/rustfmt.toml's layout
#   cargo clippy --all-targets -- -D warnings    every lint a failure, tests included
#   ... and --features abi3                      the same on the limited-API code paths
#   cargo test                                   the unit tests (rust/src/**/tests.rs, rust/src/tests/)
# Usage: bash scripts/check-rust.sh [cargo test args, e.g. a test name filter]
# Every step runs and is timed; the exit status is the first failing step's. `cargo fmt` (without
# --check) rewrites the files.
# The tests link libpython (no `extension-module` feature: that one is for the importable build)
# and embed this Python, which must find its standard library and site-packages (the encoder tests
# compare with fastavro): PYO3_PYTHON, LD_LIBRARY_PATH, PYTHONHOME and PYTHONPATH are set from it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../rust"
PY=$(command -v "${PYTHON:-python}")
export PYO3_PYTHON=$PY
eval "$("$PY" -c '
import shlex, site, sys, sysconfig
print("export LD_LIBRARY_PATH=" + shlex.quote(sysconfig.get_config_var("LIBDIR") or ""))
print("export PYTHONHOME=" + shlex.quote(sys.base_prefix))
print("export PYTHONPATH=" + shlex.quote(":".join(site.getsitepackages())))
')"
rc=0
step() {
    local name=$1 t0 step_rc
    shift
    t0=$(date +%s%N)
    "$@"
    step_rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '== rust: %-28s exit %d in %d.%ds\n' "$name" "$step_rc" $((ms / 1000)) $((ms % 1000 / 100))
    (( step_rc == 0 || rc != 0 )) || rc=$step_rc
}
step "cargo fmt --check" cargo fmt --check
step "cargo clippy --all-targets" cargo clippy -q --all-targets -- -D warnings
step "cargo clippy abi3" cargo clippy -q --all-targets --features abi3 -- -D warnings
step "cargo test" cargo test -q "$@"
exit $rc
