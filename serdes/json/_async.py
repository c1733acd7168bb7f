"""AsyncJSONSerializer / AsyncJSONDeserializer: confluent-kafka's async classes, serdes' caches."""

from __future__ import annotations

from confluent_kafka.schema_registry.json_schema import AsyncJSONDeserializer as _ConfluentAsyncJSONDeserializer
from confluent_kafka.schema_registry.json_schema import AsyncJSONSerializer as _ConfluentAsyncJSONSerializer

from .._async import AsyncDeserializerMixin, AsyncSerializerMixin
from ._deserializer import JSONDeserializer
from ._serializer import JSONSerializer

__all__ = ["AsyncJSONSerializer", "AsyncJSONDeserializer"]


# ignore[misc]: confluent-kafka's async classes subclass the sync Serializer and redefine __call__ as
# a coroutine (their source ignores the override too); the mixin's coroutine is the same shape
class AsyncJSONSerializer(AsyncSerializerMixin, _ConfluentAsyncJSONSerializer):  # type: ignore[misc]
    """Asyncio :class:`~serdes.json.JSONSerializer`: ``ser = await AsyncJSONSerializer(schema_str,
    client, to_dict=None, conf=None, rule_conf=None, rule_registry=None, json_encode=None)``, then
    ``await ser(obj, ctx)``; a cache hit awaits nothing."""

    _engine_class = JSONSerializer


class AsyncJSONDeserializer(AsyncDeserializerMixin, _ConfluentAsyncJSONDeserializer):
    """Asyncio :class:`~serdes.json.JSONDeserializer`: ``deser = await AsyncJSONDeserializer(schema_str,
    from_dict=None, schema_registry_client=None, conf=None, ...)``, then ``await deser(data, ctx)``;
    a cache hit awaits nothing. Without a client it validates against ``schema_str`` as the sync
    class does."""

    _engine_class = JSONDeserializer
