"""The ``implementation`` fixture: run a test once with the native extension and once as pure Python.

serdes picks its implementation when a serde is built (:func:`serdes._native.active`), so a test
that builds its serdes inside the fixture runs on the native dispatcher (``"native"``) or on the
pure-Python reference (``"pure"``, built under :func:`serdes._native.forced_pure`). Use it with
``pytestmark = pytest.mark.usefixtures("implementation")`` for a whole module, or as an argument.

The native leg skips when the extension is not active here (not built: a checkout without a Rust
toolchain, or SERDES_PURE_PYTHON=1); CI's ``pip install -e .`` builds it, so both legs run there.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from serdes import _native

__all__ = ["implementation", "IMPLEMENTATIONS"]

IMPLEMENTATIONS = ("native", "pure")


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "native":
        if _native.active() is None:
            pytest.skip(f"serdes' native extension is not active ({_native.pure_python_reason}); CI builds it")
        yield "native"
        return
    with _native.forced_pure():
        yield "pure"
