"""The one seam to serdes' compiled extension (``serdes._serdes_native``, built from ``rust/``).

Every module that can use native code asks here: :data:`native` is the extension module, or
``None`` when serdes runs as pure Python -- because ``SERDES_PURE_PYTHON=1`` forces it (the tests
run both implementations that way), or because the extension was not built (no Rust toolchain at
install time: setuptools-rust skips the optional extension instead of failing the install). In the
second case importing serdes warns once, in one line, so a slow install is never a silent surprise.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator, Optional

from . import _native_opcodes

__all__ = [
    "native", "NATIVE_ABI", "pure_python_reason", "implementation", "active", "forced_pure", "format_hash",
]

#: how to replace a stale or missing build (named in the warnings)
REBUILD = "`bash scripts/build-native.sh` in a checkout, else reinstall serdes (`pip install -e .` / `pip install serdes`)"


def format_hash(sources: Iterable[str], package: Path = Path(__file__).parent) -> str:
    """The ABI version of the program format: a hash of the Python sources (relative to the serdes
    package) that build the extension's programs and call its constructors.

    rust/build.rs computes the same hash of the same files when the extension is built, and the
    extension reports it (``abi_version()``) with the list it hashed (``FORMAT_SOURCES``). The
    normalisation is build.rs': ``\r`` removed, trailing spaces and tabs stripped, blank and
    comment-only lines dropped, every kept line followed by ``\n``, each file preceded by
    ``== <path>\n``; the first 16 hex digits of SHA-256."""
    h = hashlib.sha256()
    for rel in sources:
        h.update(f"== {rel}\n".encode())
        text = (package / rel).read_bytes().decode("utf-8")
        for line in text.replace("\r", "").split("\n"):
            line = line.rstrip(" \t")
            stripped = line.lstrip(" \t")
            if stripped and not stripped.startswith("#"):
                h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()[:16]


def _expected_abi(mod: ModuleType) -> "tuple[str, Optional[str]]":
    """The ABI this Python code expects of ``mod`` (the hash of its program-format sources, as
    they are here), or ``("", reason)`` when the build is too old to say what it hashed."""
    sources = getattr(mod, "FORMAT_SOURCES", None)
    if not isinstance(sources, (list, tuple)) or not all(isinstance(s, str) for s in sources):
        return "", "the build predates the program-format hash"
    try:
        return format_hash(sources), None
    except (OSError, UnicodeDecodeError) as e:
        return "", f"its program-format sources cannot be read ({e})"


def opcode_mismatch(mod: ModuleType) -> Optional[str]:
    """Why ``mod``'s opcode tables (``OPCODES``) are not :func:`serdes._native_opcodes.tables`
    (the opcodes the lowerings build programs with), or ``None`` when they are the same."""
    theirs = getattr(mod, "OPCODES", None)
    ours = _native_opcodes.tables()
    if theirs == ours:
        return None
    if not isinstance(theirs, dict):
        return "it exports no opcode table"
    diff = []
    for program, ops in ours.items():
        built = theirs.get(program)
        built = built if isinstance(built, dict) else {}
        diff += [f"{program} {name}: {ops.get(name)!r} here, {built.get(name)!r} built"
                 for name in sorted(set(ops) | set(built)) if ops.get(name) != built.get(name)]
    return "its opcodes differ from serdes/_native_opcodes.py's (" + "; ".join(diff[:4] or ["another program"]) + ")"


#: the extension's ABI: the hash of the program format it was built from, as these sources give it
#: (None when no extension is loaded)
NATIVE_ABI: Optional[str] = None


def _load() -> "tuple[Optional[ModuleType], Optional[str]]":
    if os.environ.get("SERDES_PURE_PYTHON", "") not in ("", "0"):
        return None, "SERDES_PURE_PYTHON is set"
    try:
        from . import _serdes_native as mod  # type: ignore[attr-defined]
    except ImportError as e:
        reason = f"the native extension is not built ({e})"
        warnings.warn(
            "serdes: native extension not built, running pure Python (install with a Rust toolchain "
            "for the compiled fast path; SERDES_PURE_PYTHON=1 silences this)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None, reason
    abi = mod.abi_version()
    expected, why = _expected_abi(mod)
    if abi != expected:
        # a stale build (left by an older checkout, or installed beside newer sources) reads
        # another program format: refuse all of it rather than half-use it
        reason = f"the native extension is stale: ABI {abi!r}, the sources here expect {expected or why}"
        warnings.warn(
            f"serdes: {reason}; running pure Python -- rebuild it with {REBUILD}",
            RuntimeWarning,
            stacklevel=3,
        )
        return None, reason
    mismatch = opcode_mismatch(mod)
    if mismatch is not None:
        # the Rust side and the Python side of the program format were edited apart: a serdes bug
        # no rebuild of these sources mends, and nothing native can run correctly with it
        reason = f"the native extension does not read these sources' programs: {mismatch}"
        warnings.warn(f"serdes: {reason}; running pure Python", RuntimeWarning, stacklevel=3)
        return None, reason
    global NATIVE_ABI
    NATIVE_ABI = abi
    return mod, None


native, pure_python_reason = _load()

# forced_pure() depth: serdes objects built inside it use the pure-Python implementation
_forced = 0


def active() -> Optional[ModuleType]:
    """The extension module for code being built now, or ``None`` for pure Python.

    serdes asks this when it builds a decoder, encoder or dispatcher (never per record), so one
    process can hold both implementations side by side -- the benchmarks' ``native`` and ``pure``
    lanes and the tests that compare them."""
    return None if _forced else native


@contextmanager
def forced_pure() -> Iterator[None]:
    """Build pure-Python serdes objects inside the block, whatever is installed (tests, benchmarks).
    Not thread-safe: meant for set-up code, not for concurrent construction."""
    global _forced
    _forced += 1
    try:
        yield
    finally:
        _forced -= 1


def implementation() -> str:
    """``"native"`` or ``"pure"``: which implementation this process builds."""
    return "native" if active() is not None else "pure"
