"""The ``avro_encode_impl`` fixture: run an Avro encoding test on both encoder implementations.

``"native"`` builds serializers/encoders with the compiled extension (skipped, with the reason,
when it is not built here -- CI builds it, so both lanes run there); ``"pure"`` builds them inside
:func:`serdes._native.forced_pure`. Serializers build their encoders lazily (first call), so the
choice stays in force for the whole test. Import the fixture into a test module to use it::

    from tests.support.avro_encode_impl import avro_encode_impl  # noqa: F401
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from serdes import _native

__all__ = ["avro_encode_impl", "require_native", "compile_for"]


def require_native() -> None:
    """Skip unless the native extension is built and not disabled."""
    if _native.native is None:
        pytest.skip(f"native extension not available: {_native.pure_python_reason}")


@pytest.fixture(params=["native", "pure"])
def avro_encode_impl(request: Any) -> Iterator[str]:
    """``"native"`` or ``"pure"``: the Avro encoder implementation serdes builds during the test."""
    if request.param == "native":
        require_native()
        yield "native"
    else:
        with _native.forced_pure():
            yield "pure"


def compile_for(impl: str) -> Callable[..., Any]:
    """The encoder compiler of ``impl``: both take :func:`serdes.avro._codegen.compile_encoder`'s arguments."""
    from serdes.avro._codegen import compile_encoder
    from serdes.avro._native_encoder import compile_native_encoder

    return compile_native_encoder if impl == "native" else compile_encoder
