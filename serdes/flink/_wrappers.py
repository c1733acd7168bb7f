"""PyFlink functions that wrap a user's function with a byte codec: bytes in, objects to the user.

    bytes --decode--> user function --encode--> bytes

:class:`~serdes.flink.TypedStream` wraps each user function it is given in one of these; the
wrapper passes ``open``/``close`` through with a runtime context whose protobuf state descriptors
are typed (``_typed_state.py``). Side outputs (``(OutputTag, value)``) pass unencoded.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional

from pyflink.datastream import (
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
)

from ._descriptor_codec import PICKLE_MODULE
from ._typed_state import call_close, call_open


def _identity(x: Any) -> Any:
    return x


_identity.__module__ = PICKLE_MODULE


def _wrap_outputs(outputs: Optional[Iterable[Any]], enc: Callable[[Any], Any]) -> Iterator[Any]:
    if outputs is None:
        return
    for out in outputs:
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], OutputTag):
            yield out
        else:
            yield enc(out)


class _Delegating:
    """Shared by the wrappers: hold the user's function and the bytes <-> message codecs, and pass
    ``open``/``close`` through (with a runtime context whose state descriptors are typed)."""

    __module__ = PICKLE_MODULE
    _method: str = ""

    def __init__(self, fn: Any, dec: Callable[[bytes], Any], enc: Optional[Callable[[Any], Any]] = None) -> None:
        self.fn, self.dec, self.enc = fn, dec, enc
        # a Function subclass instance is called through its method, a plain callable directly
        self._call = getattr(fn, self._method) if self._method and hasattr(fn, self._method) else fn

    def open(self, runtime_context: RuntimeContext) -> None:
        # no speedups here: the operation and its keyed state are the user's function's, which
        # serdes only wraps; PyFlink's own per-record and key-change code runs
        call_open(self.fn, runtime_context)

    def close(self) -> None:
        call_close(self.fn)


class _MapWrapper(_Delegating, MapFunction):
    __module__ = PICKLE_MODULE
    _method = "map"

    def map(self, value: Any) -> Any:
        return self.enc(self._call(self.dec(value)))  # type: ignore[misc]


class _FlatMapWrapper(_Delegating, FlatMapFunction):
    __module__ = PICKLE_MODULE
    _method = "flat_map"

    def flat_map(self, value: Any) -> Iterator[Any]:
        out = self._call(self.dec(value))
        if out is not None:
            enc = self.enc
            for v in out:
                yield enc(v)  # type: ignore[misc]


class _FilterWrapper(_Delegating, FilterFunction):
    __module__ = PICKLE_MODULE
    _method = "filter"

    def filter(self, value: Any) -> Any:
        return self._call(self.dec(value))


class _KeySelectorWrapper(_Delegating, KeySelector):
    __module__ = PICKLE_MODULE
    _method = "get_key"

    def get_key(self, value: Any) -> Any:
        return self._call(self.dec(value))


class _ProcessWrapper(_Delegating, ProcessFunction):
    __module__ = PICKLE_MODULE

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        return _wrap_outputs(self.fn.process_element(self.dec(value), ctx), self.enc)  # type: ignore[arg-type]


class _KeyedProcessWrapper(_Delegating, KeyedProcessFunction):
    __module__ = PICKLE_MODULE

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        return _wrap_outputs(self.fn.process_element(self.dec(value), ctx), self.enc)  # type: ignore[arg-type]

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        return _wrap_outputs(self.fn.on_timer(timestamp, ctx), self.enc)  # type: ignore[arg-type]
