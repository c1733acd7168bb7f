"""The two Avro decoder implementations as one pytest fixture, so the same tests run on both.

``avro_impl`` is parametrised ``pure`` / ``native``: ``avro_impl.compile_decoder(...)`` has the
signature of :func:`serdes.avro._codegen.compile_decoder` and returns the pure generated decoder
or the native ``AvroDecoder`` (failing the test if the native build silently fell back to pure
for a schema it supports); ``with avro_impl.building():`` makes serdes objects built inside it
(deserializers whose decoders are built on their first record) use that implementation. The
``native`` cases skip, with the reason, only when the extension is not built; CI builds it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

import pytest

from serdes import _native
from serdes._limits import DEFAULT_LIMITS, Limits
from serdes.avro._codegen import compile_decoder as _pure_compile
from serdes.avro._native_decoder import compile_native_decoder

IMPLS = ("pure", "native")


def native_module() -> Any:
    """The extension module, or skip the test saying why there is none."""
    mod = _native.native
    if mod is None:
        pytest.skip(f"native extension unavailable: {_native.pure_python_reason} (CI builds it: scripts/build-native.sh)")
    return mod


def is_native(dec: Any) -> bool:
    return type(dec).__name__ == "AvroDecoder" and type(dec).__module__.startswith("serdes._serdes_native")


class AvroImpl:
    def __init__(self, name: str) -> None:
        self.name = name
        self.native = native_module() if name == "native" else None

    def __repr__(self) -> str:
        return f"AvroImpl({self.name})"

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
        if self.native is None:
            return _pure_compile(writer, reader, return_record_name, from_dict, with_ctx, limits)
        dec = compile_native_decoder(writer, reader, return_record_name, from_dict, limits, native=self.native)
        if expect_native:
            assert is_native(dec), "the native build fell back to pure Python for a schema it supports"
        elif not is_native(dec) and not with_ctx:
            return _pure_compile(writer, reader, return_record_name, from_dict, False, limits)
        return dec  # AvroDecoder(data, offset=0, ctx=None): both call forms

    @contextlib.contextmanager
    def building(self) -> Iterator[None]:
        if self.native is None:
            with _native.forced_pure():
                yield
        else:
            assert _native.active() is not None
            yield


@pytest.fixture(scope="session", params=IMPLS)
def avro_impl(request: Any) -> AvroImpl:
    return AvroImpl(request.param)


@pytest.fixture
def avro_building(avro_impl: AvroImpl) -> Iterator[AvroImpl]:
    """Function-scoped: serdes objects built during the test use ``avro_impl``'s implementation."""
    with avro_impl.building():
        yield avro_impl
