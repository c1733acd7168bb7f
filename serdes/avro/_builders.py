"""Avro builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import Any, Coroutine, Dict, Tuple

# confluent-kafka >= 2.16 (an ImportError before: the format package then has no builders, as there)
from confluent_kafka.schema_registry.avro import (  # noqa: I001
    AvroSerializerBuilder as _ConfluentAvroSerializerBuilder,
    AvroDeserializerBuilder as _ConfluentAvroDeserializerBuilder,
    AsyncAvroSerializerBuilder as _ConfluentAsyncAvroSerializerBuilder,
    AsyncAvroDeserializerBuilder as _ConfluentAsyncAvroDeserializerBuilder,
)

from .._builders import async_build_with, build_with
from ._async import AsyncAvroDeserializer, AsyncAvroSerializer
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

__all__ = ["AvroSerializerBuilder", "AvroDeserializerBuilder", "AsyncAvroSerializerBuilder", "AsyncAvroDeserializerBuilder"]


class AvroSerializerBuilder(_ConfluentAvroSerializerBuilder):
    """confluent-kafka's ``AvroSerializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[AvroSerializer, Dict[str, Any]]:  # type: ignore[override]
        return build_with(self, lambda client: AvroSerializer(
            client, self._schema_str, self._to_dict, self._serializer_conf, self._rule_conf, self._rule_registry,
        ), self._serializer_init, conf)


class AvroDeserializerBuilder(_ConfluentAvroDeserializerBuilder):
    """confluent-kafka's ``AvroDeserializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[AvroDeserializer, Dict[str, Any]]:  # type: ignore[override]
        return build_with(self, lambda client: AvroDeserializer(
            client, self._schema_str, self._from_dict, self._return_record_name, self._deserializer_conf,
            self._rule_conf, self._rule_registry,
        ), self._deserializer_init, conf)


class AsyncAvroSerializerBuilder(_ConfluentAsyncAvroSerializerBuilder):
    """confluent-kafka's ``AsyncAvroSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncAvroSerializer, Dict[str, Any]]]:  # type: ignore[override]
        return async_build_with(self, lambda client: AsyncAvroSerializer(
            client, self._schema_str, self._to_dict, self._serializer_conf, self._rule_conf, self._rule_registry,
        ), self._serializer_init, conf)


class AsyncAvroDeserializerBuilder(_ConfluentAsyncAvroDeserializerBuilder):
    """confluent-kafka's ``AsyncAvroDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncAvroDeserializer, Dict[str, Any]]]:  # type: ignore[override]
        return async_build_with(self, lambda client: AsyncAvroDeserializer(
            client, self._schema_str, self._from_dict, self._return_record_name, self._deserializer_conf,
            self._rule_conf, self._rule_registry,
        ), self._deserializer_init, conf)
