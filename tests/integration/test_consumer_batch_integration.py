"""serdes.DeserializingConsumer / AsyncDeserializingConsumer: consume() on the real broker and registry,
with a poison pill in the batch."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, List

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.error import ValueDeserializationError
from confluent_kafka.serialization import MessageField, SerializationContext, StringDeserializer

import serdes
from serdes.avro import AsyncAvroDeserializer, AvroDeserializer, AvroSerializer
from tests.support.registry_client import async_registry_client, registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SCHEMA = '{"type":"record","name":"Reading","fields":[{"name":"sensor","type":"string"},{"name":"v","type":"double"}]}'
POISON_AT = 4
N = 10


def _produce(bootstrap: str, registry_url: str, topic: str) -> None:
    ser = AvroSerializer(registry_client(registry_url), SCHEMA)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(N):
        ctx = SerializationContext(topic, MessageField.VALUE)
        value = ser({"sensor": f"s{i}", "v": i / 2}, ctx)
        if i == POISON_AT:
            value = b"\x00" + value[1:5] + b"\xff\xff\xff"  # right frame, payload truncated
        producer.produce(topic, key=str(i).encode(), value=value)
    assert producer.flush(60) == 0


def _conf(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": f"batch-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}


def _check(msgs: List[Any], topic: str) -> None:
    assert [int(m.key()) for m in msgs] == list(range(N)), "a record was dropped or reordered"
    for i, m in enumerate(msgs):
        if i == POISON_AT:
            err = m.error()
            assert isinstance(m, serdes.UndecodableMessage)
            assert isinstance(err, serdes.DeserializationKafkaError) and isinstance(err, KafkaError)
            assert err.code() == KafkaError._VALUE_DESERIALIZATION
            assert isinstance(err.exception, serdes.CorruptPayloadError)
            loc = err.exception.location
            assert (loc.topic, loc.partition, loc.offset) == (topic, m.partition(), m.offset())
            assert m.value().endswith(b"\xff\xff\xff")  # raw bytes untouched
            assert isinstance(err.to_exception(), ValueDeserializationError)
        else:
            assert m.error() is None
            assert m.value() == {"sensor": f"s{i}", "v": i / 2}


def test_consume_batch_with_poison_pill(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    _produce(kafka_bootstrap, registry_url, unique_name)
    consumer = serdes.DeserializingConsumer(dict(
        _conf(kafka_bootstrap),
        **{"key.deserializer": StringDeserializer(),
           "value.deserializer": AvroDeserializer(registry_client(registry_url))}))
    consumer.subscribe([unique_name])
    got: List[Any] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < N and time.monotonic() < deadline:
            got.extend(consumer.consume(num_messages=N, timeout=1.0))
    finally:
        consumer.close()
    _check(got, unique_name)


@pytest.mark.skipif(not hasattr(serdes, "AsyncDeserializingConsumer"),
                    reason="confluent_kafka.aio.AsyncDeserializingConsumer needs confluent-kafka >= 2.16")
def test_async_consume_batch_with_poison_pill(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    _produce(kafka_bootstrap, registry_url, unique_name)

    async def main() -> List[Any]:
        de = await AsyncAvroDeserializer(async_registry_client(registry_url))
        consumer = await serdes.AsyncDeserializingConsumer(dict(
            _conf(kafka_bootstrap), **{"key.deserializer": StringDeserializer(), "value.deserializer": de}))
        await consumer.subscribe([unique_name])
        got: List[Any] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < N and time.monotonic() < deadline:
                got.extend(await consumer.consume(num_messages=N, timeout=1.0))
        finally:
            await consumer.close()
        return got

    _check(asyncio.run(main()), unique_name)
