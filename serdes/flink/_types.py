"""Typed streams whose elements travel between operators as encoded bytes.

PyFlink picks the Python worker's coder for an operator's input/output from a protobuf
*description* of the Java ``TypeInformation`` (``pyflink/fn_execution/coders.py:
from_type_info_proto``); the description has a fixed set of type names and no room for a
user coder.  ``PICKLED_BYTE_ARRAY`` therefore means cloudpickle for every element on every
hop.  serdes instead declares the Java type as ``byte[]`` (``Types.PRIMITIVE_ARRAY(Types.BYTE())``,
handled by the ``BinaryCoder`` on the Python side and ``BytePrimitiveArraySerializer`` on the
Java side) and *wraps the user functions* so that they see message objects:

    bytes --parse--> user function --SerializeToString--> bytes

:class:`TypedStream` / :class:`KeyedTypedStream` do the wrapping for ``map``, ``flat_map``,
``filter``, ``key_by`` and ``process``; :class:`ProtobufValueStateDescriptor` keeps keyed
state as message bytes (``runtime_context.get_state`` inside a wrapped function returns a
state whose ``value()``/``update()`` take message objects).
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from pyflink.common import Types
from pyflink.common.typeinfo import PrimitiveArrayTypeInfo, TypeInformation
from pyflink.datastream import (
    DataStream,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
)
from pyflink.datastream.state import ValueStateDescriptor


class BytesCodecTypeInfo(PrimitiveArrayTypeInfo):
    """A ``TypeInformation`` that is ``byte[]`` for Java and an object for user functions.

    Subclasses provide :meth:`encoder` and :meth:`decoder` returning small picklable callables.
    """

    def __init__(self) -> None:
        super().__init__(Types.BYTE())

    def encoder(self) -> Callable[[Any], bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def decoder(self) -> Callable[[bytes], Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.__dict__.get("_key") == other.__dict__.get("_key")

    def __hash__(self) -> int:
        return hash((type(self), self.__dict__.get("_key")))


class ProtobufTypeInformation(BytesCodecTypeInfo):
    """Protobuf messages of a generated class, carried as wire bytes (``byte[]`` in Java)."""

    def __init__(self, message_class: type) -> None:
        super().__init__()
        self.message_class = message_class
        self._key = message_class.DESCRIPTOR.full_name

    def encoder(self) -> Callable[[Any], bytes]:
        return operator.methodcaller("SerializeToString")

    def decoder(self) -> Callable[[bytes], Any]:
        return self.message_class.FromString

    def __repr__(self) -> str:
        return f"ProtobufTypeInformation({self._key})"


class _DescriptorDecoder:
    """Picklable decoder that rebuilds a dynamic message class from a FileDescriptorSet."""

    def __init__(self, fds_bytes: bytes, full_name: str) -> None:
        self.fds_bytes = fds_bytes
        self.full_name = full_name
        self._from_string = None

    def __getstate__(self):
        return {"fds_bytes": self.fds_bytes, "full_name": self.full_name, "_from_string": None}

    def message_class(self) -> type:
        from google.protobuf import message_factory

        from ..protobuf._descriptor_sets import pool_from_set

        pool = pool_from_set(self.fds_bytes)
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(self.full_name))

    def __call__(self, data: bytes):
        if self._from_string is None:
            self._from_string = self.message_class().FromString
        return self._from_string(data)


def file_descriptor_set(descriptor) -> bytes:
    """Serialized ``FileDescriptorSet`` with the message's file and its dependencies."""
    from google.protobuf import descriptor_pb2

    from ..protobuf._descriptor_sets import files_in_import_order

    # CopyToProto, not serialized_pb as in compat.descriptor_set_for: these bytes travel with jobs
    # and savepoints already written, so they stay byte-for-byte what earlier versions wrote
    ordered = []
    for fd in files_in_import_order(descriptor.file):
        proto = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(proto)
        ordered.append(proto)
    return descriptor_pb2.FileDescriptorSet(file=ordered).SerializeToString()


class DynamicProtobufTypeInformation(BytesCodecTypeInfo):
    """Descriptor-bound variant: messages of a (possibly dynamic) descriptor.

    The descriptor travels with the job as a serialized ``FileDescriptorSet``; the worker
    rebuilds the message class once, so no generated ``_pb2`` module is needed there.
    """

    def __init__(self, descriptor) -> None:
        super().__init__()
        self._key = descriptor.full_name
        self._fds = file_descriptor_set(descriptor)

    def encoder(self) -> Callable[[Any], bytes]:
        return operator.methodcaller("SerializeToString")

    def decoder(self) -> Callable[[bytes], Any]:
        return _DescriptorDecoder(self._fds, self._key)

    def __repr__(self) -> str:
        return f"DynamicProtobufTypeInformation({self._key})"


# ---------------------------------------------------------------------------------------------
# keyed state
# ---------------------------------------------------------------------------------------------


class ProtobufValueStateDescriptor(ValueStateDescriptor):
    """``ValueStateDescriptor`` storing messages as wire bytes (``byte[]`` state serializer).

    ``retain_descriptor=True`` (default, protobuf type infos only) also keeps the writer's
    ``FileDescriptorSet`` in keyed state ``<name>.serdes-descriptor`` and checks it against the
    job's class on the first access after a restore (see ``serdes/flink/_state.py``);
    an incompatible change raises :class:`~serdes.flink.StateSchemaIncompatibleError`.
    """

    def __init__(self, name: str, type_info, retain_descriptor: bool = True) -> None:
        if not isinstance(type_info, BytesCodecTypeInfo):
            type_info = ProtobufTypeInformation(type_info)
        super().__init__(name, Types.PRIMITIVE_ARRAY(Types.BYTE()))
        self.codec_type_info = type_info
        self._dec = type_info.decoder()
        self._enc = type_info.encoder()
        self.retain_descriptor = retain_descriptor and isinstance(
            type_info, (ProtobufTypeInformation, DynamicProtobufTypeInformation))


class CodecValueState:
    """ValueState facade: ``value()`` parses, ``update()`` serializes."""

    __slots__ = ("_state", "_dec", "_enc")

    def __init__(self, state, dec, enc) -> None:
        self._state, self._dec, self._enc = state, dec, enc

    def value(self):
        raw = self._state.value()
        return None if raw is None else self._dec(raw)

    def update(self, value) -> None:
        self._state.update(None if value is None else self._enc(value))

    def clear(self) -> None:
        self._state.clear()


def get_typed_state(runtime_context, descriptor):
    """``runtime_context.get_state`` that understands :class:`ProtobufValueStateDescriptor`."""
    raw = runtime_context.get_state(descriptor)
    if isinstance(descriptor, ProtobufValueStateDescriptor):
        _fix_embedded_bytes_state(raw)
        if getattr(descriptor, "retain_descriptor", False):
            from ._state import DESCRIPTOR_STATE_SUFFIX, SchemaCheckedValueState, descriptor_set_bytes

            fds, full_name = descriptor_set_bytes(descriptor.codec_type_info)
            name = descriptor.get_name()
            schema = runtime_context.get_state(
                ValueStateDescriptor(name + DESCRIPTOR_STATE_SUFFIX, Types.PRIMITIVE_ARRAY(Types.BYTE())))
            _fix_embedded_bytes_state(schema)
            return SchemaCheckedValueState(raw, schema, descriptor._dec, descriptor._enc, fds, full_name, name)
        return CodecValueState(raw, descriptor._dec, descriptor._enc)
    return raw


def _fix_embedded_bytes_state(state) -> None:
    """Thread mode (pemja) converts ``byte[]`` state with an ``ArrayDataConverter``: a tuple of
    ints per value, and ``value()`` of an empty state raises ``TypeError`` (PyFlink 2.2.1).
    pemja already maps ``byte[]`` <-> ``bytes``, so use the identity converter instead."""
    conv = getattr(state, "_value_converter", None)
    if conv is None:
        return
    from pyflink.fn_execution.embedded.converters import ArrayDataConverter, IdentityDataConverter

    if isinstance(conv, ArrayDataConverter):
        state._value_converter = IdentityDataConverter()


class _TypedRuntimeContext:
    """Proxy handing out :class:`CodecValueState` for protobuf state descriptors."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def get_state(self, descriptor):
        return get_typed_state(self._ctx, descriptor)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


# ---------------------------------------------------------------------------------------------
# function wrappers
# ---------------------------------------------------------------------------------------------


def _identity(x):
    return x


def _call_open(fn, runtime_context):
    if hasattr(fn, "open"):
        fn.open(_TypedRuntimeContext(runtime_context))


def _call_close(fn):
    if hasattr(fn, "close"):
        fn.close()


def _wrap_outputs(outputs, enc):
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

    _method: str = ""

    def __init__(self, fn, dec, enc=None) -> None:
        self.fn, self.dec, self.enc = fn, dec, enc
        # a Function subclass instance is called through its method, a plain callable directly
        self._call = getattr(fn, self._method) if self._method and hasattr(fn, self._method) else fn

    def open(self, runtime_context):
        _call_open(self.fn, runtime_context)

    def close(self):
        _call_close(self.fn)


class _MapWrapper(_Delegating, MapFunction):
    _method = "map"

    def map(self, value):
        return self.enc(self._call(self.dec(value)))


class _FlatMapWrapper(_Delegating, FlatMapFunction):
    _method = "flat_map"

    def flat_map(self, value):
        out = self._call(self.dec(value))
        if out is not None:
            enc = self.enc
            for v in out:
                yield enc(v)


class _FilterWrapper(_Delegating, FilterFunction):
    _method = "filter"

    def filter(self, value):
        return self._call(self.dec(value))


class _KeySelectorWrapper(_Delegating, KeySelector):
    _method = "get_key"

    def get_key(self, value):
        return self._call(self.dec(value))


class _ProcessWrapper(_Delegating, ProcessFunction):
    def process_element(self, value, ctx):
        return _wrap_outputs(self.fn.process_element(self.dec(value), ctx), self.enc)


class _KeyedProcessWrapper(_Delegating, KeyedProcessFunction):
    def process_element(self, value, ctx):
        return _wrap_outputs(self.fn.process_element(self.dec(value), ctx), self.enc)

    def on_timer(self, timestamp, ctx):
        return _wrap_outputs(self.fn.on_timer(timestamp, ctx), self.enc)


def _out(output_type):
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

    def _result(self, ds, typed, output_type):
        return TypedStream(ds, output_type) if typed else ds

    def map(self, func, output_type: Optional[TypeInformation] = None):
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.map(_MapWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def flat_map(self, func, output_type: Optional[TypeInformation] = None):
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.flat_map(_FlatMapWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def filter(self, func) -> "TypedStream":
        return TypedStream(self.data_stream.filter(_FilterWrapper(func, self._dec)), self.type_info)

    def process(self, func: ProcessFunction, output_type: Optional[TypeInformation] = None):
        enc, j_type, typed = _out(output_type)
        ds = self.data_stream.process(_ProcessWrapper(func, self._dec, enc), output_type=j_type)
        return self._result(ds, typed, output_type)

    def key_by(self, key_selector, key_type: Optional[TypeInformation] = None) -> "KeyedTypedStream":
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

    def process(self, func, output_type: Optional[TypeInformation] = None):
        enc, j_type, typed = _out(output_type)
        if isinstance(func, KeyedProcessFunction):
            wrapper = _KeyedProcessWrapper(func, self._dec, enc)
        else:
            wrapper = _ProcessWrapper(func, self._dec, enc)
        ds = self.data_stream.process(wrapper, output_type=j_type)
        return self._result(ds, typed, output_type)

    def key_by(self, key_selector, key_type=None):  # re-keying a keyed stream
        return TypedStream(self.data_stream, self.type_info).key_by(key_selector, key_type)
