"""Typed streams: a ``DataStream`` of ``byte[]`` whose user functions see decoded objects.

:class:`TypedStream` / :class:`KeyedTypedStream` wrap the functions given to ``map``,
``flat_map``, ``filter``, ``key_by`` and ``process`` (``_wrappers.py``) with the stream's
:class:`~serdes.flink.BytesCodecTypeInfo` codec; the elements travel between operators as encoded
bytes (no pickling), see ``_typeinfo.py``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream import DataStream, KeyedProcessFunction, OutputTag, ProcessFunction

from ._typeinfo import BytesCodecTypeInfo
from ._wrappers import (
    _FilterWrapper,
    _FlatMapWrapper,
    _KeyedProcessWrapper,
    _KeySelectorWrapper,
    _MapWrapper,
    _ProcessWrapper,
    _identity,
)

__all__ = ["TypedStream", "KeyedTypedStream"]


def _out(output_type: Optional[TypeInformation]) -> Tuple[Callable[[Any], Any], Optional[TypeInformation], bool]:
    """(encoder, java output type, typed?) for a requested output type."""
    if isinstance(output_type, BytesCodecTypeInfo):
        return output_type.encoder(), output_type, True
    return _identity, output_type, False


class TypedStream:
    """A ``DataStream`` of ``byte[]`` whose user functions see decoded objects.

    Operations whose ``output_type`` is a :class:`BytesCodecTypeInfo` return another
    :class:`TypedStream`; any other ``output_type`` (or ``None``: pickled) returns a plain
    ``DataStream``.  ``data_stream`` is the underlying byte stream.
    """

    def __init__(self, data_stream: DataStream, type_info: BytesCodecTypeInfo) -> None:
        self.data_stream = data_stream
        self.type_info = type_info
        self._dec = type_info.decoder()

    @classmethod
    def from_objects(cls, data_stream: DataStream, type_info: BytesCodecTypeInfo) -> "TypedStream":
        """Serialize a stream of message objects (e.g. pickled) into a typed byte stream."""
        return cls(data_stream.map(type_info.encoder(), output_type=type_info), type_info)

    def _result(self, ds: DataStream, typed: bool, output_type: Optional[TypeInformation]) -> Union["TypedStream", DataStream]:
        if typed:
            assert isinstance(output_type, BytesCodecTypeInfo)
            return TypedStream(ds, output_type)
        return ds

    def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> Union["TypedStream", DataStream]:
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.map(_MapWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def flat_map(self, func: Any, output_type: Optional[TypeInformation] = None) -> Union["TypedStream", DataStream]:
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.flat_map(_FlatMapWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def filter(self, func: Any) -> "TypedStream":
        return TypedStream(self.data_stream.filter(_FilterWrapper(func, self._dec)), self.type_info)

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> Union["TypedStream", DataStream]:
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.process(_ProcessWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def key_by(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> "KeyedTypedStream":
        keyed = self.data_stream.key_by(_KeySelectorWrapper(key_selector, self._dec), key_type=key_type)
        return KeyedTypedStream(keyed, self.type_info)

    def to_objects(self) -> DataStream:
        """Plain (pickled) DataStream of decoded objects."""
        return self.data_stream.map(self._dec)

    def name(self, name: str) -> "TypedStream":
        self.data_stream.name(name)
        return self

    def uid(self, uid: str) -> "TypedStream":
        self.data_stream.uid(uid)
        return self

    def set_parallelism(self, parallelism: int) -> "TypedStream":
        self.data_stream.set_parallelism(parallelism)
        return self

    def get_side_output(self, tag: OutputTag) -> DataStream:
        return self.data_stream.get_side_output(tag)

    def __repr__(self) -> str:
        return f"TypedStream({self.type_info!r})"


class KeyedTypedStream(TypedStream):
    """Result of :meth:`TypedStream.key_by`; ``process`` takes a ``KeyedProcessFunction``."""

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> Union["TypedStream", DataStream]:
        enc, j_type, typed = _out(output_type)
        wrapper: ProcessFunction  # PyFlink's process() takes either kind (annotated as ProcessFunction)
        if isinstance(func, KeyedProcessFunction):
            wrapper = _KeyedProcessWrapper(func, self._dec, enc)  # type: ignore[assignment]
        else:
            wrapper = _ProcessWrapper(func, self._dec, enc)
        ds = self.data_stream.process(wrapper, output_type=j_type)
        return self._result(ds, typed, output_type)

    def key_by(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> "KeyedTypedStream":
        # re-keying a keyed stream
        return TypedStream(self.data_stream, self.type_info).key_by(key_selector, key_type)
