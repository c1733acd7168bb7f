"""``deserialize_with_schema``: each value with the schema it was written with (id or GUID,
subject, version), for every format, sync, asyncio and batch, asked of the registry once.

Records are written by confluent-kafka's own serializers on a ``mock://`` registry; the real
Apicurio registry (and the ``/schemas/ids/{id}/versions`` lookup the mock lacks) is exercised by
tests/integration/test_writer_schema_integration.py.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, List

import pytest

from confluent_kafka.schema_registry import (
    AsyncSchemaRegistryClient,
    Schema,
    SchemaRegistryClient,
    header_schema_id_serializer,
    record_subject_name_strategy,
)
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.schema_registry import json_schema as c_json
from confluent_kafka.schema_registry import protobuf as c_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes_test import order_pb2

import serdes.avro as s_avro
import serdes.json as s_json
import serdes.protobuf as s_protobuf
from serdes import BatchError, CorruptPayloadError, RegistryBadResponseError, WriterSchema
from tests.support.confluent_releases import TOPIC_STRATEGY
from tests.support.counting_registry import CountingRegistry
from tests.support.registry_client import registry_client

pytestmark = pytest.mark.usefixtures("implementation")

V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [{"name": "a", "type": "int"}]}
V2 = {"type": "record", "name": "User", "namespace": "ex",
      "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "x"}]}
JSON_SCHEMA = '{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}'
NO_AUTO = {"auto.register.schemas": False, "use.latest.version": False}


def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://ws-{uuid.uuid4().hex}"})


def ctx(topic: str = "users", headers: Any = None) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE, headers)


def test_avro_each_record_gets_its_own_version() -> None:
    reg = client()
    id1 = reg.register_schema("users-value", Schema(json.dumps(V1), "AVRO"))
    id2 = reg.register_schema("users-value", Schema(json.dumps(V2), "AVRO"))
    w1 = c_avro.AvroSerializer(reg, json.dumps(V1), conf={"use.schema.id": id1, **NO_AUTO, **TOPIC_STRATEGY})
    w2 = c_avro.AvroSerializer(reg, json.dumps(V2), conf={"use.schema.id": id2, **NO_AUTO, **TOPIC_STRATEGY})
    frames = [w1({"a": 1}, ctx()), w2({"a": 2, "b": "y"}, ctx()), w1({"a": 3}, ctx())]
    deser = s_avro.AvroDeserializer(reg, conf=TOPIC_STRATEGY or None)
    confluent = c_avro.AvroDeserializer(reg)
    got = [deser.deserialize_with_schema(f, ctx()) for f in frames]
    assert [v for v, _ in got] == [confluent(f, ctx()) for f in frames]
    assert [(w.schema_id, w.subject, w.version) for _, w in got] == [
        (id1, "users-value", 1), (id2, "users-value", 2), (id1, "users-value", 1)]
    first = got[0][1]
    assert isinstance(first, WriterSchema) and first.guid is None
    assert first.registered == (("users-value", 1),)
    assert json.loads(first.schema.schema_str) == V1
    # the plain call is untouched by it
    assert deser(frames[1], ctx()) == got[1][0]


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_protobuf_and_json(fmt: str) -> None:
    reg = client()
    if fmt == "protobuf":
        conf = {"use.deprecated.format": False, **TOPIC_STRATEGY}
        frame = c_protobuf.ProtobufSerializer(order_pb2.Order, reg, conf)(order_pb2.Order(id=7, customer="c"), ctx())
        deser: Any = s_protobuf.ProtobufDeserializer(order_pb2.Order, dict(conf), reg)
        expected = c_protobuf.ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, reg)(frame, ctx())
    else:
        frame = c_json.JSONSerializer(JSON_SCHEMA, reg, conf=TOPIC_STRATEGY or None)({"a": 7}, ctx())
        deser = s_json.JSONDeserializer(None, schema_registry_client=reg, conf=TOPIC_STRATEGY or None)
        expected = {"a": 7}
    value, writer = deser.deserialize_with_schema(frame, ctx())
    assert value == expected
    sid = int.from_bytes(frame[1:5], "big")
    assert (writer.schema_id, writer.subject, writer.version) == (sid, "users-value", 1)
    assert writer.schema.schema_type == fmt.upper()


def test_record_name_strategy_names_the_record_subject() -> None:
    reg = client()
    conf = {"subject.name.strategy": record_subject_name_strategy}
    frame = c_avro.AvroSerializer(reg, json.dumps(V1), conf=dict(conf))({"a": 1}, ctx())
    _, writer = s_avro.AvroDeserializer(reg, conf=dict(conf)).deserialize_with_schema(frame, ctx())
    assert (writer.subject, writer.version) == ("ex.User", 1)


def test_guid_header_gets_the_id_from_the_registry() -> None:
    reg = client()
    ser = c_avro.AvroSerializer(reg, json.dumps(V1), conf={"schema.id.serializer": header_schema_id_serializer,
                                                            **TOPIC_STRATEGY})
    headers: List[Any] = []
    payload = ser({"a": 5}, ctx(headers=headers))
    value, writer = s_avro.AvroDeserializer(reg, conf=TOPIC_STRATEGY or None).deserialize_with_schema(
        payload, ctx(headers=headers))
    assert value == {"a": 5}
    registered = reg.lookup_schema("users-value", Schema(json.dumps(V1), "AVRO"))
    assert writer.guid == str(registered.guid) and writer.guid is not None
    assert (writer.schema_id, writer.subject, writer.version) == (registered.schema_id, "users-value", 1)


def test_none_and_errors_as_the_plain_call() -> None:
    reg = client()
    deser = s_avro.AvroDeserializer(reg)
    assert deser.deserialize_with_schema(None, ctx()) == (None, None)
    frame = c_avro.AvroSerializer(reg, json.dumps(V1), conf=TOPIC_STRATEGY or None)({"a": 1}, ctx())
    with pytest.raises(CorruptPayloadError):
        deser.deserialize_with_schema(frame[:5] + b"\xff\xff\xff\xff\xff\xff", ctx())


def test_batch_pairs_and_collect() -> None:
    reg = client()
    ser = c_avro.AvroSerializer(reg, json.dumps(V1), conf=TOPIC_STRATEGY or None)
    frames: List[Any] = [ser({"a": i}, ctx()) for i in range(3)]
    deser = s_avro.AvroDeserializer(reg, conf=TOPIC_STRATEGY or None)
    pairs = deser.deserialize_batch_with_schema(frames + [None], ctx())
    assert [v for v, _ in pairs[:3]] == [{"a": i} for i in range(3)]
    assert {w.version for _, w in pairs[:3]} == {1} and pairs[3] == (None, None)
    bad = frames[0][:5] + b"\xff" * 6
    with pytest.raises(BatchError) as raised:
        deser.deserialize_batch_with_schema([frames[0], bad], ctx())
    assert [i for i, _ in raised.value.errors] == [1]
    collected = deser.deserialize_batch_with_schema([frames[0], bad], ctx(), errors="collect")
    assert collected[0][0] == {"a": 0} and isinstance(collected[1], CorruptPayloadError)


def test_the_registry_is_asked_once_per_schema() -> None:
    reg = client()
    calls: List[str] = []
    for name in ("lookup_schema", "get_schema", "get_schema_versions"):
        real = getattr(reg, name)
        setattr(reg, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    w1 = c_avro.AvroSerializer(reg, json.dumps(V1), conf=TOPIC_STRATEGY or None)
    w2 = c_avro.AvroSerializer(reg, json.dumps(V2), conf=TOPIC_STRATEGY or None)
    frames = [w({"a": i}, ctx()) for i in range(25) for w in (w1, w2)]
    deser = s_avro.AvroDeserializer(reg, conf=TOPIC_STRATEGY or None)
    calls.clear()
    got = [deser.deserialize_with_schema(f, ctx())[1].version for f in frames]
    assert got == [1, 2] * 25
    assert calls.count("lookup_schema") == 2 and "get_schema_versions" not in calls


def test_a_registry_that_cannot_answer_is_a_registry_error() -> None:
    """CountingRegistry knows id 1, 404s every subject lookup and answers the versions listing
    with a schema instead of a list: a typed registry error naming the schema id and the topic.
    As with decoder misses, registry failures are not remembered (the next record asks again)."""
    with CountingRegistry({1: ('"string"', "AVRO")}) as counting:
        deser = s_avro.AvroDeserializer(registry_client(counting.url), conf=TOPIC_STRATEGY or None)
        frame = b"\x00\x00\x00\x00\x01" + b"\x02a"
        assert deser(frame, ctx()) == "a"
        with pytest.raises(RegistryBadResponseError) as raised:
            deser.deserialize_with_schema(frame, ctx())
        assert raised.value.schema_id == 1 and raised.value.location.topic == "users"
        assert "versions of schema id 1" in str(raised.value)


def test_cache_holds_one_entry_per_schema_and_topic() -> None:
    reg = client()
    ser = c_avro.AvroSerializer(reg, json.dumps(V1), conf=TOPIC_STRATEGY or None)
    deser = s_avro.AvroDeserializer(reg, conf=TOPIC_STRATEGY or None)
    for topic in ("a", "b"):
        frame = ser({"a": 1}, ctx(topic))
        for _ in range(5):
            _, writer = deser.deserialize_with_schema(frame, ctx(topic))
            assert writer.subject == f"{topic}-value"
    assert len(deser._writer_schemas) == 2
    deser.clear_cache()
    assert not deser._writer_schemas


def test_no_registry_client_reports_the_frame_id_only() -> None:
    deser = s_json.JSONDeserializer(JSON_SCHEMA)
    value, writer = deser.deserialize_with_schema(b"\x00\x00\x00\x00\x2a" + b'{"a": 1}', ctx())
    assert value == {"a": 1}
    assert writer == WriterSchema(42, None, None, None, None)


def test_async() -> None:
    async def main() -> Any:
        reg = AsyncSchemaRegistryClient.new_client({"url": f"mock://ws-async-{uuid.uuid4().hex}"})
        ser = await c_avro.AsyncAvroSerializer(reg, json.dumps(V1), conf=TOPIC_STRATEGY or None)
        frames = [await ser({"a": i}, ctx()) for i in range(3)]
        deser = await s_avro.AsyncAvroDeserializer(reg, conf=TOPIC_STRATEGY or None)
        one = await deser.deserialize_with_schema(frames[0], ctx())
        many = await deser.deserialize_batch_with_schema(frames, ctx())
        return one, many

    (value, writer), many = asyncio.run(main())
    assert value == {"a": 0} and (writer.subject, writer.version) == ("users-value", 1)
    assert [v for v, _ in many] == [{"a": i} for i in range(3)] and all(w == writer for _, w in many)
