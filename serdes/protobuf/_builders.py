"""Protobuf builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._builders import CLIENT, AsyncSerdeBuilder, Construction, SerdeBuilder
from .._confluent import builder_bases
from ._async import AsyncProtobufDeserializer, AsyncProtobufSerializer
from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.protobuf import (  # noqa: I001
        ProtobufSerializerBuilder as _ConfluentProtobufSerializerBuilder,
        ProtobufDeserializerBuilder as _ConfluentProtobufDeserializerBuilder,
        AsyncProtobufSerializerBuilder as _ConfluentAsyncProtobufSerializerBuilder,
        AsyncProtobufDeserializerBuilder as _ConfluentAsyncProtobufDeserializerBuilder,
    )
else:
    # confluent-kafka 2.16 added the builders: on an older release serdes' builder classes still
    # import, and constructing one raises serdes.ConfluentVersionError naming 2.16
    (_ConfluentProtobufSerializerBuilder, _ConfluentProtobufDeserializerBuilder,
     _ConfluentAsyncProtobufSerializerBuilder, _ConfluentAsyncProtobufDeserializerBuilder) = builder_bases(
        "confluent_kafka.schema_registry.protobuf", "Protobuf", "serdes.protobuf")


__all__ = [
    "ProtobufSerializerBuilder", "ProtobufDeserializerBuilder",
    "AsyncProtobufSerializerBuilder", "AsyncProtobufDeserializerBuilder",
]

# the (Async)ProtobufSerializer / (Async)ProtobufDeserializer constructor calls of confluent-kafka's
# builders; a message type is required as there (the constructors themselves accept serdes' dynamic mode)
_SERIALIZER = Construction(
    ("_msg_type", CLIENT, "_serializer_conf", "_rule_conf", "_rule_registry"), "_serializer_init",
    required={"_msg_type": "Protobuf serializer requires a message type; call set_message_type()"},
)
_DESERIALIZER = Construction(
    ("_msg_type", "_deserializer_conf", CLIENT, "_rule_conf", "_rule_registry"), "_deserializer_init",
    required={"_msg_type": "Protobuf deserializer requires a message type; call set_message_type()"},
)


class ProtobufSerializerBuilder(SerdeBuilder[ProtobufSerializer], _ConfluentProtobufSerializerBuilder):
    """confluent-kafka's ``ProtobufSerializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufSerializer`."""

    _serde, _construction = ProtobufSerializer, _SERIALIZER


class ProtobufDeserializerBuilder(SerdeBuilder[ProtobufDeserializer], _ConfluentProtobufDeserializerBuilder):
    """confluent-kafka's ``ProtobufDeserializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufDeserializer`."""

    _serde, _construction = ProtobufDeserializer, _DESERIALIZER


class AsyncProtobufSerializerBuilder(  # type: ignore[misc]
    AsyncSerdeBuilder[AsyncProtobufSerializer], _ConfluentAsyncProtobufSerializerBuilder,
):
    """confluent-kafka's ``AsyncProtobufSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufSerializer`."""

    _serde, _construction = AsyncProtobufSerializer, _SERIALIZER


class AsyncProtobufDeserializerBuilder(  # type: ignore[misc]
    AsyncSerdeBuilder[AsyncProtobufDeserializer], _ConfluentAsyncProtobufDeserializerBuilder,
):
    """confluent-kafka's ``AsyncProtobufDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufDeserializer`."""

    _serde, _construction = AsyncProtobufDeserializer, _DESERIALIZER
