"""AsyncAvroSerializer / AsyncAvroDeserializer: confluent-kafka's async classes, serdes' caches."""

from __future__ import annotations

from confluent_kafka.schema_registry.avro import AsyncAvroDeserializer as _ConfluentAsyncAvroDeserializer
from confluent_kafka.schema_registry.avro import AsyncAvroSerializer as _ConfluentAsyncAvroSerializer

from .._async import AsyncDeserializerMixin, AsyncSerializerMixin
from ._deserializer import AvroDeserializer
from ._serializer import AvroSerializer

__all__ = ["AsyncAvroSerializer", "AsyncAvroDeserializer"]


# misc: the async __call__ (the mixin's, as confluent-kafka's own async class) overrides the sync
# confluent_kafka.serialization.Serializer.__call__ that class inherits: intended, not an error
class AsyncAvroSerializer(AsyncSerializerMixin, _ConfluentAsyncAvroSerializer):  # type: ignore[misc]
    """Asyncio :class:`~serdes.avro.AvroSerializer`: ``ser = await AsyncAvroSerializer(client, schema_str,
    to_dict=None, conf=None, rule_conf=None, rule_registry=None)`` with an ``AsyncSchemaRegistryClient``,
    then ``await ser(obj, ctx)``.

    Same arguments, configuration keys and errors as the sync class (and as
    ``confluent_kafka.schema_registry.avro.AsyncAvroSerializer``). After the first record of a
    ``(topic, field)`` the call encodes with the cached encoder and awaits nothing.
    """

    _engine_class = AvroSerializer


class AsyncAvroDeserializer(AsyncDeserializerMixin, _ConfluentAsyncAvroDeserializer):
    """Asyncio :class:`~serdes.avro.AvroDeserializer`: ``deser = await AsyncAvroDeserializer(client,
    schema_str=None, from_dict=None, return_record_name=False, conf=None, ...)``, then
    ``await deser(data, ctx)``.

    After the first record of a writer schema the call decodes with the cached decoder (the same
    compiled decoder the sync class uses) and awaits nothing.
    """

    _engine_class = AvroDeserializer
