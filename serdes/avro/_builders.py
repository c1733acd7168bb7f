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
from .._confluent import builder_fields
from ._async import AsyncAvroDeserializer, AsyncAvroSerializer
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

__all__ = ["AvroSerializerBuilder", "AvroDeserializerBuilder", "AsyncAvroSerializerBuilder", "AsyncAvroDeserializerBuilder"]


class AvroSerializerBuilder(_ConfluentAvroSerializerBuilder):
    """confluent-kafka's ``AvroSerializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[AvroSerializer, Dict[str, Any]]:
        schema_str, to_dict, serializer_conf, rule_conf, rule_registry, serializer_init = builder_fields(
            self, "_schema_str", "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry", "_serializer_init",
        )
        return build_with(self, lambda client: AvroSerializer(
            client, schema_str, to_dict, serializer_conf, rule_conf, rule_registry,
        ), serializer_init, conf)


class AvroDeserializerBuilder(_ConfluentAvroDeserializerBuilder):
    """confluent-kafka's ``AvroDeserializerBuilder``; ``build`` gives a :class:`serdes.avro.AvroDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[AvroDeserializer, Dict[str, Any]]:
        schema_str, from_dict, return_record_name, deserializer_conf, rule_conf, rule_registry, deserializer_init = builder_fields(
            self, "_schema_str", "_from_dict", "_return_record_name", "_deserializer_conf", "_rule_conf", "_rule_registry", "_deserializer_init",
        )
        return build_with(self, lambda client: AvroDeserializer(
            client, schema_str, from_dict, return_record_name, deserializer_conf,
            rule_conf, rule_registry,
        ), deserializer_init, conf)


class AsyncAvroSerializerBuilder(_ConfluentAsyncAvroSerializerBuilder):
    """confluent-kafka's ``AsyncAvroSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncAvroSerializer, Dict[str, Any]]]:  # type: ignore[override]
        schema_str, to_dict, serializer_conf, rule_conf, rule_registry, serializer_init = builder_fields(
            self, "_schema_str", "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry", "_serializer_init",
        )
        return async_build_with(self, lambda client: AsyncAvroSerializer(
            client, schema_str, to_dict, serializer_conf, rule_conf, rule_registry,
        ), serializer_init, conf)


class AsyncAvroDeserializerBuilder(_ConfluentAsyncAvroDeserializerBuilder):
    """confluent-kafka's ``AsyncAvroDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.avro.AsyncAvroDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncAvroDeserializer, Dict[str, Any]]]:  # type: ignore[override]
        schema_str, from_dict, return_record_name, deserializer_conf, rule_conf, rule_registry, deserializer_init = builder_fields(
            self, "_schema_str", "_from_dict", "_return_record_name", "_deserializer_conf", "_rule_conf", "_rule_registry", "_deserializer_init",
        )
        return async_build_with(self, lambda client: AsyncAvroDeserializer(
            client, schema_str, from_dict, return_record_name, deserializer_conf,
            rule_conf, rule_registry,
        ), deserializer_init, conf)
