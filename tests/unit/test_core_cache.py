"""The shared fast path: decoder/encoder caches, registry failures, rules delegation."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer

# the native dispatcher and the pure-Python one, same cases (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

SCHEMA = json.dumps(
    {"type": "record", "name": "User", "namespace": "t", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
)
OTHER = json.dumps({"type": "record", "name": "Other", "namespace": "t", "fields": [{"name": "x", "type": "long"}]})


@pytest.fixture
def registry():
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})


def unreachable_registry():
    # port 1 on loopback: connection refused at once
    return SchemaRegistryClient({"url": "http://127.0.0.1:1", "max.retries": 0, "timeout": 2})


def ctx(topic="users", headers=None):
    return SerializationContext(topic, MessageField.VALUE, headers)


def test_one_registry_fetch_per_schema(registry):
    ser = AvroSerializer(registry, SCHEMA)
    data = ser({"name": "a", "age": 1}, ctx())
    de = AvroDeserializer(registry)
    calls = []
    real = registry.get_schema

    def counting(*a, **k):
        calls.append(a)
        return real(*a, **k)

    registry.get_schema = counting
    for _ in range(50):
        assert de(data, ctx()) == {"name": "a", "age": 1}
    assert len(calls) == 1
    assert len(de._decoders) == 1


def test_registry_outage_cached_schemas_keep_decoding(registry):
    ser = AvroSerializer(registry, SCHEMA)
    ser_other = AvroSerializer(registry, OTHER)
    known = ser({"name": "a", "age": 1}, ctx())
    unknown = ser_other({"x": 5}, ctx("others"))
    de = AvroDeserializer(registry)
    assert de(known, ctx()) == {"name": "a", "age": 1}
    de._registry = unreachable_registry()  # the registry goes away
    assert de(known, ctx()) == {"name": "a", "age": 1}
    with pytest.raises(serdes.RegistryUnavailableError) as info:
        de(unknown, ctx("others"))
    assert "topic='others'" in str(info.value) and "schema id" in str(info.value)
    de._registry = registry  # and comes back
    assert de(unknown, ctx("others")) == {"x": 5}


def test_unknown_schema_id(registry):
    de = AvroDeserializer(registry)
    with pytest.raises(serdes.UnknownSchemaError) as info:
        de(b"\x00\x00\x00\x03\xe7\x02", ctx())
    assert info.value.schema_id == 999
    with pytest.raises(serdes.UnknownSchemaError):
        de(b"\x01" + uuid.uuid4().bytes + b"\x02", ctx())


def test_serializer_registry_unreachable():
    ser = AvroSerializer(unreachable_registry(), SCHEMA)
    with pytest.raises(serdes.RegistryUnavailableError) as info:
        ser({"name": "a", "age": 1}, ctx())
    assert "topic='users'" in str(info.value)


def test_header_framing_both_ways(registry):
    ser = AvroSerializer(registry, SCHEMA, conf={"schema.id.serializer": header_schema_id_serializer})
    theirs = ConfluentAvroSerializer(registry, SCHEMA, conf={"schema.id.serializer": header_schema_id_serializer})
    de = AvroDeserializer(registry)
    for _ in range(3):  # first call learns the frame from confluent-kafka, the rest use the cache
        h1, h2 = [], []
        ours = ser({"name": "b", "age": 2}, ctx(headers=h1))
        ref = theirs({"name": "b", "age": 2}, ctx(headers=h2))
        assert ours == ref and h1 == h2 and len(h1) == 1 and h1[0][0] == "__value_schema_id"
        assert de(ours, ctx(headers=h1)) == {"name": "b", "age": 2}
    with pytest.raises(serdes.SerdesError):
        ser({"name": "b", "age": 2}, ctx(headers=None))


def test_encoder_per_topic_and_field(registry):
    ser = AvroSerializer(registry, SCHEMA)
    a = ser({"name": "a", "age": 1}, ctx("t1"))
    b = ser({"name": "a", "age": 1}, ctx("t2"))
    assert set(registry.get_subjects()) == {"t1-value", "t2-value"}
    assert len(ser._encoders) == 2
    assert a[5:] == b[5:]


def test_use_latest_version_reader_is_per_subject(registry):
    v1 = SCHEMA
    v2 = json.dumps(
        {"type": "record", "name": "User", "namespace": "t", "fields": [
            {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
            {"name": "email", "type": "string", "default": "none"}]}
    )
    old = AvroSerializer(registry, v1)({"name": "a", "age": 1}, ctx())
    registry.register_schema("users-value", Schema(v2, "AVRO"))
    de = AvroDeserializer(registry, conf={"use.latest.version": True})
    assert de(old, ctx()) == {"name": "a", "age": 1, "email": "none"}


def test_batch(registry):
    ser = AvroSerializer(registry, SCHEMA)
    values = [{"name": str(i), "age": i} for i in range(10)]
    frames = ser.serialize_batch(values, ctx())
    assert AvroDeserializer(registry).deserialize_batch(frames, ctx()) == values
