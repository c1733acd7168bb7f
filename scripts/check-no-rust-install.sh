#!/usr/bin/env bash
# A machine without a Rust toolchain must still install serdes -- as pure Python, with a one-line
# warning at import -- never a failed install. This builds and installs the package with cargo
# hidden from PATH (into a throwaway --target dir, dependencies taken from the current env) and
# checks that: the install succeeds, no extension is in it, `import serdes` warns once and works.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python}"
PY=$(command -v "$PY")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# PATH without any directory holding cargo or rustc
clean_path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do
    [[ -n $d && ! -x $d/cargo && ! -x $d/rustc ]] && printf '%s:' "$d"; done)
clean_path=${clean_path%:}
# a copy of the tree without build output (rust/target, an in-place .so)
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tmp" --one-top-level=src
env PATH="$clean_path" CARGO_HOME=/nonexistent RUSTUP_HOME=/nonexistent \
    "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$tmp/site" "$tmp/src"
if compgen -G "$tmp/site/serdes/_serdes_native*" >/dev/null; then
    echo "FAIL: an extension was built without a Rust toolchain on PATH" >&2; exit 1
fi
cd "$tmp"
out=$(PYTHONPATH="$tmp/site" "$PY" -c '
import sys, warnings
# an editable install of this checkout (setuptools finder on sys.meta_path) would win over PYTHONPATH
sys.meta_path = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    import serdes, serdes._native as n
msgs = [str(x.message) for x in w if "native extension not built" in str(x.message)]
assert serdes.__file__.startswith(sys.path[1]), serdes.__file__
assert n.implementation() == "pure", n.implementation()
assert len(msgs) == 1, msgs
print(msgs[0])
')
echo "ok: installed without Rust as pure Python; import warns: $out"
