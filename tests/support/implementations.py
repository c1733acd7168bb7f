"""The ``implementation`` fixture: run a test once on serdes' native extension and once as pure Python.

serdes picks its implementation when a serde, decoder or encoder is built (:func:`serdes._native.active`),
so a test that builds its serdes inside the fixture runs on the native code (``"native"``) or on the
pure-Python reference (``"pure"``, the whole test inside :func:`serdes._native.forced_pure`). The
fixture is registered for the whole suite by tests/conftest.py; use it with
``pytestmark = pytest.mark.usefixtures("implementation")`` for a whole module, or as an argument
when the test needs the value, an :class:`Implementation`:

* ``implementation.name``: ``"native"`` or ``"pure"`` (e.g. for a child interpreter to rebuild it);
* ``implementation.compile_decoder(...)``: :func:`serdes.avro._codegen.compile_decoder`'s signature;
  the native ``AvroDecoder`` or the pure generated decoder. On the native leg it fails the test when
  the native build silently fell back to pure Python for a schema it supports (``expect_native=False``
  for the schemas it leaves to pure Python on purpose);
* ``implementation.compile_encoder(...)``: :func:`serdes.avro._codegen.compile_encoder`'s signature;
  :func:`serdes.avro._native_encoder.compile_native_encoder` on the native leg, the pure one on the other.

The native leg skips, with the reason, when the extension is not active here (not built: a checkout
without a Rust toolchain, or SERDES_PURE_PYTHON=1); CI's ``pip install -e .`` builds it, so both legs
run there. The helpers below (:func:`native_module`, :func:`require_native`, :func:`is_native`) are
for tests that need the extension itself rather than one run per implementation.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Iterator, Optional

import pytest

from serdes import _native
from serdes._limits import DEFAULT_LIMITS, Limits

__all__ = ["IMPLEMENTATIONS", "Implementation", "implementation", "is_native", "native_module", "require_native"]

IMPLEMENTATIONS = ("native", "pure")


def native_module() -> ModuleType:
    """The extension module, or skip the test saying why there is none."""
    mod = _native.native
    if mod is None:
        pytest.skip(f"native extension unavailable: {_native.pure_python_reason} (CI builds it: scripts/build-native.sh)")
    return mod


def require_native() -> None:
    """Skip unless the native extension is built and not disabled."""
    native_module()


def is_native(dec: Any) -> bool:
    """Whether ``dec`` is the extension's ``AvroDecoder`` (not the pure generated decoder)."""
    return type(dec).__name__ == "AvroDecoder" and type(dec).__module__.startswith("serdes._serdes_native")


class Implementation:
    """One of serdes' two implementations, as the ``implementation`` fixture's value."""

    def __init__(self, name: str, native: Optional[ModuleType]) -> None:
        self.name = name
        # the extension module on the native leg, None on the pure one
        self.native = native

    def __repr__(self) -> str:
        return f"Implementation({self.name!r})"

    def compile_decoder(
        self,
        writer: Any,
        reader: Any = None,
        return_record_name: bool = False,
        from_dict: Optional[Callable[[Any, Any], Any]] = None,
        with_ctx: bool = True,
        limits: Limits = DEFAULT_LIMITS,
        expect_native: bool = True,
    ) -> Any:
        from serdes.avro._codegen import compile_decoder
        from serdes.avro._native_decoder import compile_native_decoder

        if self.native is None:
            return compile_decoder(writer, reader, return_record_name, from_dict, with_ctx, limits)
        dec = compile_native_decoder(writer, reader, return_record_name, from_dict, limits, native=self.native)
        if expect_native:
            assert is_native(dec), "the native build fell back to pure Python for a schema it supports"
        elif not is_native(dec) and not with_ctx:
            # the fallback is the pure decoder built with a context argument: give the caller the
            # form it asked for
            return compile_decoder(writer, reader, return_record_name, from_dict, False, limits)
        return dec  # AvroDecoder(data, offset=0, ctx=None): both call forms

    def compile_encoder(self, *args: Any, **kwargs: Any) -> Any:
        """``encode(obj, ctx)``, taking :func:`serdes.avro._codegen.compile_encoder`'s arguments."""
        from serdes.avro._codegen import compile_encoder
        from serdes.avro._native_encoder import compile_native_encoder

        # compile_native_encoder asks _native.active(): native here, as the fixture never forces pure
        # on this leg (it builds the pure encoder when the schema is one it leaves to pure Python)
        return compile_native_encoder(*args, **kwargs) if self.native is not None else compile_encoder(*args, **kwargs)


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request: pytest.FixtureRequest) -> Iterator[Implementation]:
    """Function-scoped: the whole test (and the fixtures it sets up after this one) builds its
    serdes with this implementation."""
    if request.param == "native":
        mod = _native.active()
        if mod is None:
            pytest.skip(f"serdes' native extension is not active ({_native.pure_python_reason}); CI builds it")
        yield Implementation("native", mod)
        return
    with _native.forced_pure():
        yield Implementation("pure", None)
