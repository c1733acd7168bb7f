"""Protobuf builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import Any, Coroutine, Dict, Tuple

# confluent-kafka >= 2.16 (an ImportError before: the format package then has no builders, as there)
from confluent_kafka.schema_registry.protobuf import (  # noqa: I001
    ProtobufSerializerBuilder as _ConfluentProtobufSerializerBuilder,
    ProtobufDeserializerBuilder as _ConfluentProtobufDeserializerBuilder,
    AsyncProtobufSerializerBuilder as _ConfluentAsyncProtobufSerializerBuilder,
    AsyncProtobufDeserializerBuilder as _ConfluentAsyncProtobufDeserializerBuilder,
)

from .._builders import async_build_with, build_with
from .._confluent import builder_fields, require
from ._async import AsyncProtobufDeserializer, AsyncProtobufSerializer
from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer

__all__ = [
    "ProtobufSerializerBuilder", "ProtobufDeserializerBuilder",
    "AsyncProtobufSerializerBuilder", "AsyncProtobufDeserializerBuilder",
]


def _require_type(builder: Any, what: str) -> None:
    # as confluent-kafka's builders (the constructors themselves accept serdes' dynamic mode)
    if require(builder, "_msg_type") is None:
        raise ValueError(f"Protobuf {what} requires a message type; call set_message_type()")


class ProtobufSerializerBuilder(_ConfluentProtobufSerializerBuilder):
    """confluent-kafka's ``ProtobufSerializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[ProtobufSerializer, Dict[str, Any]]:
        _require_type(self, "serializer")
        msg_type, serializer_conf, rule_conf, rule_registry, serializer_init = builder_fields(
            self, "_msg_type", "_serializer_conf", "_rule_conf", "_rule_registry", "_serializer_init",
        )
        return build_with(self, lambda client: ProtobufSerializer(
            msg_type, client, serializer_conf, rule_conf, rule_registry,
        ), serializer_init, conf)


class ProtobufDeserializerBuilder(_ConfluentProtobufDeserializerBuilder):
    """confluent-kafka's ``ProtobufDeserializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[ProtobufDeserializer, Dict[str, Any]]:
        _require_type(self, "deserializer")
        msg_type, deserializer_conf, rule_conf, rule_registry, deserializer_init = builder_fields(
            self, "_msg_type", "_deserializer_conf", "_rule_conf", "_rule_registry", "_deserializer_init",
        )
        return build_with(self, lambda client: ProtobufDeserializer(
            msg_type, deserializer_conf, client, rule_conf, rule_registry,
        ), deserializer_init, conf)


class AsyncProtobufSerializerBuilder(_ConfluentAsyncProtobufSerializerBuilder):
    """confluent-kafka's ``AsyncProtobufSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncProtobufSerializer, Dict[str, Any]]]:  # type: ignore[override]
        _require_type(self, "serializer")
        msg_type, serializer_conf, rule_conf, rule_registry, serializer_init = builder_fields(
            self, "_msg_type", "_serializer_conf", "_rule_conf", "_rule_registry", "_serializer_init",
        )
        return async_build_with(self, lambda client: AsyncProtobufSerializer(
            msg_type, client, serializer_conf, rule_conf, rule_registry,
        ), serializer_init, conf)


class AsyncProtobufDeserializerBuilder(_ConfluentAsyncProtobufDeserializerBuilder):
    """confluent-kafka's ``AsyncProtobufDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncProtobufDeserializer, Dict[str, Any]]]:  # type: ignore[override]
        _require_type(self, "deserializer")
        msg_type, deserializer_conf, rule_conf, rule_registry, deserializer_init = builder_fields(
            self, "_msg_type", "_deserializer_conf", "_rule_conf", "_rule_registry", "_deserializer_init",
        )
        return async_build_with(self, lambda client: AsyncProtobufDeserializer(
            msg_type, deserializer_conf, client, rule_conf, rule_registry,
        ), deserializer_init, conf)
