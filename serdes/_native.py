"""The one seam to serdes' compiled extension (``serdes._serdes_native``, built from ``rust/``).

Every module that can use native code asks here: :data:`native` is the extension module, or
``None`` when serdes runs as pure Python -- because ``SERDES_PURE_PYTHON=1`` forces it (the tests
run both implementations that way), or because the extension was not built (no Rust toolchain at
install time: setuptools-rust skips the optional extension instead of failing the install). In the
second case importing serdes warns once, in one line, so a slow install is never a silent surprise.
"""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator, Optional

__all__ = ["native", "NATIVE_ABI", "pure_python_reason", "implementation", "active", "forced_pure"]

#: the extension's ``abi_version()`` this Python code was written against
NATIVE_ABI = 1


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
    if abi != NATIVE_ABI:
        # a stale build left in the tree by an older checkout: refuse it rather than misbehave
        warnings.warn(
            f"serdes: native extension ABI {abi} does not match {NATIVE_ABI} (a stale build?); "
            "running pure Python -- rebuild with `pip install -e .`",
            RuntimeWarning,
            stacklevel=3,
        )
        return None, f"native ABI {abi} != {NATIVE_ABI}"
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
