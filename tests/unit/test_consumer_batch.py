"""The batch decoding of serdes.DeserializingConsumer.consume (no broker: confluent-kafka's test
Message objects). The same consumers run against the real broker in
tests/integration/test_consumer_batch.py."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, List

from confluent_kafka import KafkaError, Message
from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes._consumer import _decode_batch, _decode_batch_async
from serdes.avro import AsyncAvroDeserializer, AvroDeserializer, AvroSerializer
from tests.support.confluent_releases import needs

# the tests build their batches of confluent_kafka.Message, whose constructor 2.13 opened
pytestmark = needs("2.13", "constructing confluent_kafka.Message")

SCHEMA = '{"type":"record","name":"R","fields":[{"name":"n","type":"int"}]}'


class Counting:
    """A deserializer wrapper counting batch and single calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.batches, self.singles = inner, 0, 0

    def __call__(self, data: Any, ctx: Any) -> Any:
        self.singles += 1
        return self.inner(data, ctx)

    def deserialize_batch(self, payloads: Any, ctx: Any) -> Any:
        self.batches += 1
        return self.inner.deserialize_batch(payloads, ctx)


def _messages(client: Any, poison: bool) -> List[Any]:
    ser = AvroSerializer(client, SCHEMA)
    ctx = SerializationContext("t", MessageField.VALUE)
    msgs = []
    for i in range(6):
        value = ser({"n": i}, ctx)
        if poison and i == 3:
            value = value[:5] + b"\x81"  # truncated varint
        msgs.append(Message(topic="t", partition=0, offset=100 + i, key=str(i).encode(), value=value))
    msgs.append(Message(topic="t", partition=0, error=KafkaError(KafkaError._PARTITION_EOF, "eof")))
    return msgs


def test_clean_batch_is_one_batch_call() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://c-{uuid.uuid4().hex}"})
    de = Counting(AvroDeserializer(client))
    out = _decode_batch(_messages(client, poison=False), None, de)
    assert [m.value() for m in out[:6]] == [{"n": i} for i in range(6)]
    assert out[6].error().code() == KafkaError._PARTITION_EOF  # broker events pass through
    assert (de.batches, de.singles) == (1, 0)


def test_poison_pill_carries_its_error_and_nothing_is_lost() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://c-{uuid.uuid4().hex}"})
    de = Counting(AvroDeserializer(client))
    out = _decode_batch(_messages(client, poison=True), None, de)
    assert len(out) == 7
    bad = out[3]
    assert isinstance(bad, serdes.UndecodableMessage) and bad.offset() == 103 and bad.key() == b"3"
    err = bad.error()
    assert err.code() == KafkaError._VALUE_DESERIALIZATION
    assert isinstance(err.exception, serdes.CorruptPayloadError)
    assert (err.exception.location.partition, err.exception.location.offset) == (0, 103)
    assert [m.value() for i, m in enumerate(out[:6]) if i != 3] == [{"n": i} for i in (0, 1, 2, 4, 5)]
    assert de.batches == 1 and de.singles == 6  # the batch raised; record by record located the pill


def test_key_failure_is_reported_as_key_deserialization() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://c-{uuid.uuid4().hex}"})

    def key_de(data: bytes, ctx: Any) -> int:
        if data == b"2":
            raise ValueError("bad key")
        return int(data)

    out = _decode_batch(_messages(client, poison=False), key_de, AvroDeserializer(client))
    assert out[2].error().code() == KafkaError._KEY_DESERIALIZATION
    assert type(out[2].error().to_exception()).__name__ == "KeyDeserializationError"
    assert [m.key() for i, m in enumerate(out[:6]) if i != 2] == [0, 1, 3, 4, 5]


def test_async_plan_with_async_deserializer() -> None:
    sync_client = SchemaRegistryClient.new_client({"url": f"mock://c-{uuid.uuid4().hex}"})
    msgs = _messages(sync_client, poison=True)
    # the async deserializer reads from its own registry: register the same schema there first
    aclient = AsyncSchemaRegistryClient.new_client({"url": f"mock://a-{uuid.uuid4().hex}"})

    async def main() -> List[Any]:
        from serdes.avro import AsyncAvroSerializer

        await (await AsyncAvroSerializer(aclient, SCHEMA))({"n": 0}, SerializationContext("t", MessageField.VALUE))
        return await _decode_batch_async(msgs, None, await AsyncAvroDeserializer(aclient))

    out = asyncio.run(main())
    assert isinstance(out[3], serdes.UndecodableMessage)
    assert [m.value() for i, m in enumerate(out[:6]) if i != 3] == [{"n": i} for i in (0, 1, 2, 4, 5)]


def test_sync_and_async_consumers_decode_a_batch_alike() -> None:
    # one plan drives both consumers: a failing key (its record's value stays undecoded, the rest
    # of its run is decoded record by record), a poison value and a broker event, each in place
    client = SchemaRegistryClient.new_client({"url": f"mock://c-{uuid.uuid4().hex}"})

    def key_de(data: bytes, ctx: Any) -> int:
        if data == b"1":
            raise ValueError("bad key")
        return int(data)

    def outcome(out: List[Any]) -> List[Any]:
        return [(type(m).__name__, m.key(), m.value(), m.error() and m.error().code()) for m in out]

    value_de = Counting(AvroDeserializer(client))
    sync_out = outcome(_decode_batch(_messages(client, poison=True), key_de, value_de))
    async_out = outcome(asyncio.run(_decode_batch_async(_messages(client, poison=True), key_de, value_de)))
    assert sync_out == async_out
    assert [row[0] for row in sync_out] == ["Message", "UndecodableMessage", "Message", "UndecodableMessage",
                                            "Message", "Message", "Message"]
    assert sync_out[1][1:] == (b"1", _messages(client, poison=True)[1].value(), KafkaError._KEY_DESERIALIZATION)
    assert sync_out[3][3] == KafkaError._VALUE_DESERIALIZATION
    assert [row[2] for i, row in enumerate(sync_out[:6]) if i not in (1, 3)] == [{"n": i} for i in (0, 2, 4, 5)]
    # an undecodable record keeps its raw key and value, even where the key alone decoded
    assert [row[1] for i, row in enumerate(sync_out[:6]) if i != 1] == [0, 2, b"3", 4, 5]
    # the run holding the failed key is not batch-decoded: every other value decoded alone, twice
    assert (value_de.batches, value_de.singles) == (0, 2 * 5)
