#!/usr/bin/env bash
# Users get the native path without a Rust toolchain: build serdes' wheel (`pip wheel .`, the
# extension compiled by setuptools-rust), install it into a venv with cargo hidden from PATH, and
# run core unit tests against the INSTALLED package with the extension loaded.
#
#   bash scripts/check-wheel.sh [pytest args]     (default: the TESTS below)
#   SERDES_WHEEL_ABI3=1 bash scripts/check-wheel.sh   (the abi3 wheel)
#
# By default the wheel is CPython-version specific (cp311-cp311-linux_x86_64 here), the published
# one: the extension's hot paths use CPython API outside the limited API (docs/native.md, "Wheels").
# SERDES_WHEEL_ABI3=1 builds the stable-ABI wheel instead (cp310-abi3, serdes/_serdes_native.abi3.so:
# bdist_wheel's py_limited_api, so setuptools-rust builds with pyo3/abi3-py310 and the crate takes
# its cfg(Py_LIMITED_API) paths), checks its tag, and runs the same tests with the .abi3.so loaded;
# CI runs both. The venv lives under ~/.cache/serdes/venvs/wheel-<hash of
# python + pyproject.toml's requirements>, built once; each run replaces serdes in it with the new
# wheel (--force-reinstall --no-deps). The cargo build starts from an empty target directory: with a
# shared one, setuptools-rust packed a wheel without the extension on the second build.
# The tests run from a copy of tests/ outside the checkout, so `import serdes` can only find the
# venv's; a root conftest.py there fails the session unless serdes comes from the venv with the
# native extension loaded. SERDES_WHEEL_DIR=DIR keeps the wheel there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
PY=$(command -v "${PYTHON:-python}")
cache="${XDG_CACHE_HOME:-$HOME/.cache}/serdes"
TESTS=(tests/unit/test_avro_native.py tests/unit/test_wire.py tests/unit/test_avro.py)
(( $# )) && TESTS=("$@")
abi3=${SERDES_WHEEL_ABI3:-0}
# the stable ABI of the oldest supported CPython (pyproject.toml's requires-python)
ABI3_TAG=cp310
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

# 1. the wheel, from the committed tree (no rust/target, no in-place build)
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tmp" --one-top-level=src
wheels=${SERDES_WHEEL_DIR:-$tmp/wheels}
mkdir -p "$wheels"
rm -f "$wheels"/serdes-*.whl
so_re='serdes/_serdes_native\..*\.so'
if (( abi3 )); then
    # bdist_wheel's py_limited_api: setuptools-rust then builds with pyo3/abi3-py310 and names the
    # module .abi3.so, and the wheel is tagged cp310-abi3 (DIST_EXTRA_CONFIG reaches pip's
    # isolated build; setuptools reads it as one more setup.cfg)
    printf '[bdist_wheel]\npy_limited_api = %s\n' "$ABI3_TAG" >"$tmp/abi3.cfg"
    export DIST_EXTRA_CONFIG=$tmp/abi3.cfg
    so_re='serdes/_serdes_native\.abi3\.so'
fi
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$wheels" "$tmp/src"
unset DIST_EXTRA_CONFIG
wheel=$(ls "$wheels"/serdes-*.whl)
echo "== [$(( $(date +%s) - t0 ))s] built $(basename "$wheel")"
if (( abi3 )) && [[ $(basename "$wheel") != *-$ABI3_TAG-abi3-* ]]; then
    echo "FAIL: $(basename "$wheel") is not tagged $ABI3_TAG-abi3" >&2; exit 1
fi
# (zipfile, not `unzip -l | grep -q`: under pipefail grep's early exit fails unzip with SIGPIPE)
"$PY" - "$wheel" "$so_re" <<'PYEOF' || { echo "FAIL: no extension ($so_re) in $wheel" >&2; exit 1; }
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
sys.exit(0 if any(re.fullmatch(sys.argv[2], n) for n in names) else 1)
PYEOF

# 2. the venv, cargo and rustc hidden from PATH from here on
clean_path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do
    [[ -n $d && ! -x $d/cargo && ! -x $d/rustc ]] && printf '%s:' "$d"; done)
export PATH=${clean_path%:} CARGO_HOME=/nonexistent RUSTUP_HOME=/nonexistent
if command -v cargo >/dev/null 2>&1; then echo "FAIL: cargo still on PATH" >&2; exit 1; fi
key=$( { "$PY" -c 'import sys; print(sys.version)'; "$PY" -c '
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"]))'; } | sha256sum | cut -c1-16)
venv="$cache/venvs/wheel-$key"
mkdir -p "$cache/venvs"
exec {lock_fd}>"$venv.lock"
flock "$lock_fd"
if [[ ! -f $venv/.serdes-complete ]]; then
    rm -rf "$venv"
    echo "== creating $venv"
    "$PY" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel[test]"
    touch "$venv/.serdes-complete"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
echo "== [$(( $(date +%s) - t0 ))s] installed into $venv"

# 3. the tests, outside the checkout
mkdir "$tmp/run"
cp -r "$repo/tests" "$tmp/run/tests"
cp "$repo/pyproject.toml" "$tmp/run/"  # [tool.pytest.ini_options]: markers, pythonpath (no serdes here)
cat >"$tmp/run/conftest.py" <<PYEOF
import serdes, serdes._native as n

def pytest_sessionstart(session):
    assert serdes.__file__.startswith("$venv/"), f"serdes imported from {serdes.__file__}, not the venv"
    assert n.implementation() == "native", f"native extension not loaded: {n.pure_python_reason}"
    assert $abi3 == n.native.__file__.endswith(".abi3.so"), f"abi3 is $abi3, loaded {n.native.__file__}"
    print(f"serdes {serdes.__file__}, extension {n.native.__file__}, native ABI {n.NATIVE_ABI}")
PYEOF
cd "$tmp/run"
set +e
env -u PYTHONPATH -u SERDES_PURE_PYTHON "$venv/bin/python" -m pytest -q -p no:cacheprovider -s --timeout=900 "${TESTS[@]}" 2>&1 \
    | grep -v '^$' | tail -n 25
rc=${PIPESTATUS[0]}
set -e
echo "== [$(( $(date +%s) - t0 ))s] wheel tests exit $rc"
exit "$rc"
