"""Keyed value state that holds messages as wire bytes (a ``byte[]`` state serializer).

``runtime_context.get_state`` of a :class:`ProtobufValueStateDescriptor`, asked through
:func:`get_typed_state` (which serdes' wrapped functions and keyed operators do for the user),
returns a state whose ``value()`` / ``update()`` take message objects. With
``retain_descriptor`` the state also keeps the writer's descriptor and checks it after a restore
(``_state.py``).
"""

from __future__ import annotations

from typing import Any, Callable

from pyflink.common import Types
from pyflink.datastream import RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

from . import _pyflink
from ._descriptor_codec import PICKLE_MODULE
from ._typeinfo import BytesCodecTypeInfo, DynamicProtobufTypeInformation, ProtobufTypeInformation

__all__ = ["ProtobufValueStateDescriptor", "CodecValueState", "get_typed_state", "TypedRuntimeContext",
           "call_open", "call_close"]


class ProtobufValueStateDescriptor(ValueStateDescriptor):
    """``ValueStateDescriptor`` storing messages as wire bytes (``byte[]`` state serializer).

    ``retain_descriptor=True`` (default, protobuf type infos only) also keeps the writer's
    ``FileDescriptorSet`` in keyed state ``<name>.serdes-descriptor`` and checks it against the
    job's class on the first access after a restore (see ``serdes/flink/_state.py``);
    an incompatible change raises :class:`~serdes.flink.StateSchemaIncompatibleError`.
    """

    __module__ = PICKLE_MODULE

    def __init__(self, name: str, type_info: Any, retain_descriptor: bool = True) -> None:
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

    __module__ = PICKLE_MODULE
    __slots__ = ("_state", "_dec", "_enc")

    def __init__(self, state: Any, dec: Callable[[bytes], Any], enc: Callable[[Any], bytes]) -> None:
        self._state, self._dec, self._enc = state, dec, enc

    def value(self) -> Any:
        raw = self._state.value()
        return None if raw is None else self._dec(raw)

    def update(self, value: Any) -> None:
        self._state.update(None if value is None else self._enc(value))

    def clear(self) -> None:
        self._state.clear()


def get_typed_state(runtime_context: Any, descriptor: Any) -> Any:
    """``runtime_context.get_state`` that understands :class:`ProtobufValueStateDescriptor`."""
    raw = runtime_context.get_state(descriptor)
    if isinstance(descriptor, ProtobufValueStateDescriptor):
        _pyflink.bytes_state_as_bytes(raw)
        # getattr: a descriptor unpickled from a release before retain_descriptor has none
        if getattr(descriptor, "retain_descriptor", False):
            from ._state import DESCRIPTOR_STATE_SUFFIX, SchemaCheckedValueState, descriptor_set_bytes

            fds, full_name = descriptor_set_bytes(descriptor.codec_type_info)
            name = descriptor.get_name()
            schema = runtime_context.get_state(
                ValueStateDescriptor(name + DESCRIPTOR_STATE_SUFFIX, Types.PRIMITIVE_ARRAY(Types.BYTE())))
            _pyflink.bytes_state_as_bytes(schema)
            return SchemaCheckedValueState(raw, schema, descriptor._dec, descriptor._enc, fds, full_name, name)
        return CodecValueState(raw, descriptor._dec, descriptor._enc)
    return raw


class TypedRuntimeContext:
    """Proxy handing out :class:`CodecValueState` for protobuf state descriptors."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self._ctx = ctx

    def get_state(self, descriptor: Any) -> Any:
        return get_typed_state(self._ctx, descriptor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


def call_open(fn: Any, runtime_context: RuntimeContext) -> None:
    """``fn.open`` (when it has one) with a runtime context whose state descriptors are typed."""
    if hasattr(fn, "open"):
        fn.open(TypedRuntimeContext(runtime_context))


def call_close(fn: Any) -> None:
    if hasattr(fn, "close"):
        fn.close()
