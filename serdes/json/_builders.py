"""JSON Schema builders (sync and async) with confluent-kafka's names, arguments and setters."""

from __future__ import annotations

from typing import Any, Coroutine, Dict, Tuple

# confluent-kafka >= 2.16 (an ImportError before: the format package then has no builders, as there)
from confluent_kafka.schema_registry.json_schema import (  # noqa: I001
    JSONSerializerBuilder as _ConfluentJSONSerializerBuilder,
    JSONDeserializerBuilder as _ConfluentJSONDeserializerBuilder,
    AsyncJSONSerializerBuilder as _ConfluentAsyncJSONSerializerBuilder,
    AsyncJSONDeserializerBuilder as _ConfluentAsyncJSONDeserializerBuilder,
)

from .._builders import async_build_with, build_with
from .._confluent import builder_fields
from ._async import AsyncJSONDeserializer, AsyncJSONSerializer
from ._deserializer import JSONDeserializer
from ._serializer import JSONSerializer

__all__ = ["JSONSerializerBuilder", "JSONDeserializerBuilder", "AsyncJSONSerializerBuilder", "AsyncJSONDeserializerBuilder"]


class JSONSerializerBuilder(_ConfluentJSONSerializerBuilder):
    """confluent-kafka's ``JSONSerializerBuilder``; ``build`` gives a :class:`serdes.json.JSONSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[JSONSerializer, Dict[str, Any]]:
        schema_str, to_dict, serializer_conf, rule_conf, rule_registry, json_encode, serializer_init = builder_fields(
            self, "_schema_str", "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry", "_json_encode", "_serializer_init",
        )
        return build_with(self, lambda client: JSONSerializer(
            schema_str, client, to_dict, serializer_conf, rule_conf, rule_registry,
            json_encode,
        ), serializer_init, conf)


class JSONDeserializerBuilder(_ConfluentJSONDeserializerBuilder):
    """confluent-kafka's ``JSONDeserializerBuilder``; ``build`` gives a :class:`serdes.json.JSONDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[JSONDeserializer, Dict[str, Any]]:
        schema_str, from_dict, deserializer_conf, rule_conf, rule_registry, json_decode, deserializer_init = builder_fields(
            self, "_schema_str", "_from_dict", "_deserializer_conf", "_rule_conf", "_rule_registry", "_json_decode", "_deserializer_init",
        )
        return build_with(self, lambda client: JSONDeserializer(
            schema_str, from_dict, client, deserializer_conf, rule_conf, rule_registry,
            json_decode,
        ), deserializer_init, conf)


class AsyncJSONSerializerBuilder(_ConfluentAsyncJSONSerializerBuilder):
    """confluent-kafka's ``AsyncJSONSerializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.json.AsyncJSONSerializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncJSONSerializer, Dict[str, Any]]]:  # type: ignore[override]
        schema_str, to_dict, serializer_conf, rule_conf, rule_registry, json_encode, serializer_init = builder_fields(
            self, "_schema_str", "_to_dict", "_serializer_conf", "_rule_conf", "_rule_registry", "_json_encode", "_serializer_init",
        )
        return async_build_with(self, lambda client: AsyncJSONSerializer(
            schema_str, client, to_dict, serializer_conf, rule_conf, rule_registry,
            json_encode,
        ), serializer_init, conf)


class AsyncJSONDeserializerBuilder(_ConfluentAsyncJSONDeserializerBuilder):
    """confluent-kafka's ``AsyncJSONDeserializerBuilder``; ``await build(...)`` gives a
    :class:`serdes.json.AsyncJSONDeserializer`."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[AsyncJSONDeserializer, Dict[str, Any]]]:  # type: ignore[override]
        schema_str, from_dict, deserializer_conf, rule_conf, rule_registry, json_decode, deserializer_init = builder_fields(
            self, "_schema_str", "_from_dict", "_deserializer_conf", "_rule_conf", "_rule_registry", "_json_decode", "_deserializer_init",
        )
        return async_build_with(self, lambda client: AsyncJSONDeserializer(
            schema_str, from_dict, client, deserializer_conf, rule_conf, rule_registry,
            json_decode,
        ), deserializer_init, conf)
