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
from ._async import AsyncProtobufDeserializer, AsyncProtobufSerializer
from ._deserializer import ProtobufDeserializer
from ._serializer import ProtobufSerializer

__all__ = [
    "ProtobufSerializerBuilder", "ProtobufDeserializerBuilder",
    "AsyncProtobufSerializerBuilder", "AsyncProtobufDeserializerBuilder",
]


def _require_type(builder: Any, what: str) -> None:
    # as confluent-kafka's builders (the constructors themselves accept serdes' dynamic mode)
    if builder._msg_type is None:
        raise ValueError(f"Protobuf {what} requires a message type; call set_message_type()")


class ProtobufSerializerBuilder(_ConfluentProtobufSerializerBuilder):
    """confluent-kafka's ``ProtobufSerializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[ProtobufSerializer, Dict[str, Any]]:  # type: ignore[override]
        _require_type(self, "serializer")
        return build_with(self, lambda client: ProtobufSerializer(
            self._msg_type, client, self._serializer_conf, self._rule_conf, self._rule_registry,
        ), self._serializer_init, conf)


class ProtobufDeserializerBuilder(_ConfluentProtobufDeserializerBuilder):
    """confluent-kafka's ``ProtobufDeserializerBuilder``; ``build`` gives a :class:`serdes.protobuf.ProtobufDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[ProtobufDeserializer, Dict[str, Any]]:  # type: ignore[override]
        _require_type(self, "deserializer")
        return build_with(self, lambda client: ProtobufDeserializer(
            self._msg_type, self._deserializer_conf, client, self._rule_conf, self._rule_registry,
        ), self._deserializer_init, conf)


class AsyncProtobufSerializerBuilder(_ConfluentAsyncProtobufSerializerBuilder):
    """confluent-kafka's ``AsyncProtobufSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncProtobufSerializer, Dict[str, Any]]]:  # type: ignore[override]
        _require_type(self, "serializer")
        return async_build_with(self, lambda client: AsyncProtobufSerializer(
            self._msg_type, client, self._serializer_conf, self._rule_conf, self._rule_registry,
        ), self._serializer_init, conf)


class AsyncProtobufDeserializerBuilder(_ConfluentAsyncProtobufDeserializerBuilder):
    """confluent-kafka's ``AsyncProtobufDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.protobuf.AsyncProtobufDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncProtobufDeserializer, Dict[str, Any]]]:  # type: ignore[override]
        _require_type(self, "deserializer")
        return async_build_with(self, lambda client: AsyncProtobufDeserializer(
            self._msg_type, self._deserializer_conf, client, self._rule_conf, self._rule_registry,
        ), self._deserializer_init, conf)
