"""serdes' asyncio serdes: interop with confluent-kafka's async classes, no await on a cache hit,
one cache shared with the sync design, the same typed errors, builders."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.schema_registry import json_schema as c_json
from confluent_kafka.schema_registry import protobuf as c_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes_test import order_pb2

import serdes.avro as s_avro
import serdes.json as s_json
import serdes.protobuf as s_protobuf
from serdes import ConfluentVersionError, CorruptPayloadError, InvalidMagicByteError, UnknownSchemaError, ValidationError
from tests.support.confluent_releases import at_least, needs

# the native dispatcher and the pure-Python one, same cases (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

AVRO = '{"type":"record","name":"U","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}'
JSON = '{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}'
CTX = SerializationContext("t", MessageField.VALUE)


def aclient() -> Any:
    return AsyncSchemaRegistryClient.new_client({"url": f"mock://async-{uuid.uuid4().hex}"})


def run_without_suspending(coro: Any) -> Any:
    """The coroutine's result if it completes without ever awaiting something that suspends."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("the coroutine suspended (awaited the registry) on a cache hit")


async def _serdes(fmt: str, client: Any, impl: str = "serdes") -> Any:
    mod = {"serdes": {"avro": s_avro, "json": s_json, "protobuf": s_protobuf},
           "confluent": {"avro": c_avro, "json": c_json, "protobuf": c_protobuf}}[impl][fmt]
    if fmt == "avro":
        return await mod.AsyncAvroSerializer(client, AVRO), await mod.AsyncAvroDeserializer(client)
    if fmt == "json":
        return await mod.AsyncJSONSerializer(JSON, client), await mod.AsyncJSONDeserializer(None, None, client)
    conf = {"use.deprecated.format": False}
    return (await mod.AsyncProtobufSerializer(order_pb2.Order, client, conf),
            await mod.AsyncProtobufDeserializer(order_pb2.Order, conf, client))


def _value(fmt: str, i: int) -> Any:
    return order_pb2.Order(id=i, customer="c") if fmt == "protobuf" else {"a": i, "b": "x"}


FORMATS = ["avro", "json", "protobuf"]


@pytest.mark.asyncio
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("writer,reader", [("serdes", "confluent"), ("confluent", "serdes"), ("serdes", "serdes")])
async def test_interop_with_confluent_async_classes(fmt: str, writer: str, reader: str) -> None:
    client = aclient()
    ser, _ = await _serdes(fmt, client, writer)
    _, de = await _serdes(fmt, client, reader)
    for i in range(3):
        assert await de(await ser(_value(fmt, i), CTX), CTX) == _value(fmt, i)


@pytest.mark.asyncio
@pytest.mark.parametrize("fmt", FORMATS)
async def test_cache_hit_awaits_nothing_and_uses_the_sync_cache(fmt: str) -> None:
    ser, de = await _serdes(fmt, aclient())
    data = await ser(_value(fmt, 1), CTX)  # first record: registry awaited
    assert await de(data, CTX) == _value(fmt, 1)
    # later records: the coroutine completes on its first step
    data2 = run_without_suspending(ser(_value(fmt, 2), CTX))
    assert run_without_suspending(de(data2, CTX)) == _value(fmt, 2)
    # the engine is serdes' sync class, and its cache is what the hit used
    sync_de = {"avro": s_avro.AvroDeserializer, "json": s_json.JSONDeserializer,
               "protobuf": s_protobuf.ProtobufDeserializer}[fmt]
    assert type(de._engine) is sync_de
    assert de._engine._decoders
    de.clear_cache()
    assert not de._engine._decoders


@pytest.mark.asyncio
async def test_async_errors_are_the_sync_classes() -> None:
    client = aclient()
    ser, de = await _serdes("avro", client)
    data = await ser({"a": 1, "b": "x"}, CTX)
    with pytest.raises(ValidationError):
        await ser({"a": "no", "b": "x"}, CTX)
    with pytest.raises(InvalidMagicByteError):
        await de(b"\x07" + data[1:], CTX)
    with pytest.raises(UnknownSchemaError) as e:
        await de(b"\x00\x00\x00\x03\xe7" + data[5:], CTX)
    assert e.value.location.topic == "t"
    with pytest.raises(CorruptPayloadError):
        await de(data + b"\x00", CTX)


@pytest.mark.asyncio
async def test_batch_calls() -> None:
    ser, de = await _serdes("avro", aclient())
    frames = await ser.serialize_batch([{"a": i, "b": "x"} for i in range(5)], CTX)
    assert await de.deserialize_batch(frames, CTX) == [{"a": i, "b": "x"} for i in range(5)]


# on an older release the builders refuse construction: test_confluent_seam.py checks that
needs_builders = needs("2.16", "the builders")


@needs_builders
def test_sync_builders_build_serdes_classes() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://b-{uuid.uuid4().hex}"})
    ser, conf = s_avro.AvroSerializerBuilder().set_schema_registry_client(client).set_schema(AVRO).build({"x": 1}, False)
    assert type(ser) is s_avro.AvroSerializer and conf == {"x": 1}
    de, _ = s_avro.AvroDeserializerBuilder(schema_registry_client=client).build({}, False)
    assert de(ser({"a": 1, "b": "y"}, CTX), CTX) == {"a": 1, "b": "y"}
    js, _ = s_json.JSONSerializerBuilder(schema_registry_client=client, schema=JSON).build({}, False)
    jd, _ = s_json.JSONDeserializerBuilder(schema_registry_client=client).build({}, False)
    assert type(js) is s_json.JSONSerializer and jd(js({"a": 2}, CTX), CTX) == {"a": 2}
    ps, _ = s_protobuf.ProtobufSerializerBuilder(schema_registry_client=client, message_type=order_pb2.Order,
                                                 serializer_config={"use.deprecated.format": False}).build({}, False)
    pd, _ = s_protobuf.ProtobufDeserializerBuilder(schema_registry_client=client, message_type=order_pb2.Order,
                                                   deserializer_config={"use.deprecated.format": False}).build({}, False)
    assert type(pd) is s_protobuf.ProtobufDeserializer and pd(ps(order_pb2.Order(id=3), CTX), CTX).id == 3
    with pytest.raises(ValueError):
        s_protobuf.ProtobufSerializerBuilder(schema_registry_client=client).build({}, False)
    with pytest.raises(ValueError):  # as confluent-kafka's builders: a client or a config, not both
        s_avro.AvroSerializerBuilder(schema_registry_config={"url": "mock://x"},
                                     schema_registry_client=client).build({}, False)


@needs_builders
@pytest.mark.asyncio
async def test_async_builders_build_serdes_classes() -> None:
    client = aclient()
    inits: list = []

    async def init(serde: Any) -> None:
        inits.append(type(serde))

    ser, _ = await s_avro.AsyncAvroSerializerBuilder(schema_registry_client=client, schema=AVRO,
                                                     serializer_init=init).build({}, False)
    de, _ = await s_avro.AsyncAvroDeserializerBuilder().set_schema_registry_client(client).build({}, False)
    assert inits == [s_avro.AsyncAvroSerializer] and type(de) is s_avro.AsyncAvroDeserializer
    assert await de(await ser({"a": 1, "b": "z"}, CTX), CTX) == {"a": 1, "b": "z"}
    js, _ = await s_json.AsyncJSONSerializerBuilder(schema_registry_client=client, schema=JSON).build({}, False)
    jd, _ = await s_json.AsyncJSONDeserializerBuilder(schema_registry_client=client).build({}, False)
    assert await jd(await js({"a": 4}, CTX), CTX) == {"a": 4}
    ps, _ = await s_protobuf.AsyncProtobufSerializerBuilder(
        schema_registry_client=client, message_type=order_pb2.Order,
        serializer_config={"use.deprecated.format": False}).build({}, False)
    pd, _ = await s_protobuf.AsyncProtobufDeserializerBuilder(
        schema_registry_client=client, message_type=order_pb2.Order,
        deserializer_config={"use.deprecated.format": False}).build({}, False)
    assert type(ps) is s_protobuf.AsyncProtobufSerializer
    assert (await pd(await ps(order_pb2.Order(id=5), CTX), CTX)).id == 5
    # a builder-made client (from schema_registry_config) is owned and closed with the serde
    owned, _ = await s_avro.AsyncAvroDeserializerBuilder(schema_registry_config={"url": "mock://owned"}).build({}, False)
    await owned.aclose()


@pytest.mark.asyncio
@pytest.mark.skipif(at_least("2.16"), reason="the refusal of releases before 2.16; the oldest leg of scripts/test-matrix.sh runs it")
async def test_async_cluster_id_resolver_needs_confluent_kafka_2_16() -> None:
    ser, _ = await _serdes("avro", aclient(), "serdes")
    with pytest.raises(ConfluentVersionError) as info:
        ser.set_async_cluster_id_resolver(lambda: "cluster-1")
    assert info.value.required == "2.16" and "set_async_cluster_id_resolver" in str(info.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("impl", ["confluent", "serdes"])
@needs("2.16", "the associated subject name strategy's cluster id resolver")
async def test_async_cluster_id_resolver_reaches_the_associated_strategy(impl: str) -> None:
    # the default subject name strategy (ASSOCIATED) asks for the cluster id on its first lookup
    client = aclient()
    ser, de = await _serdes("avro", client, impl)
    asked: list = []

    async def cluster_id() -> str:
        asked.append(1)
        return "cluster-1"

    ser.set_async_cluster_id_resolver(cluster_id)
    data = await ser({"a": 1, "b": "x"}, CTX)
    assert asked, f"{impl}: the resolver was not awaited"
    assert await de(data, CTX) == {"a": 1, "b": "x"}


@pytest.mark.asyncio
async def test_async_protobuf_dynamic_and_serdes_options() -> None:
    # serdes' keyword options (message_type=None: classes from the registry schema; output="dict")
    client = aclient()
    ser, _ = await _serdes("protobuf", client)
    data = await ser(order_pb2.Order(id=7, customer="c"), CTX)
    dynamic = await s_protobuf.AsyncProtobufDeserializer(None, {"use.deprecated.format": False}, client)
    msg = await dynamic(data, CTX)
    assert msg.DESCRIPTOR.full_name == "serdes.test.Order" and msg.id == 7
    as_dict = await s_protobuf.AsyncProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, client,
                                                          output="dict")
    assert (await as_dict(data, CTX))["customer"] == "c"
    with pytest.raises(ValueError, match="Unrecognized properties"):  # as confluent-kafka's Avro classes
        await s_avro.AsyncAvroDeserializer(client, None, None, False, {"no.such.key": 1})
