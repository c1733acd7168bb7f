"""Issue 8, Avro half, against the real broker and the real registry (Apicurio in CI and here).

The unit tests (tests/unit/test_avro_security.py) cover every hostile name and bomb on the mock
registry, which stores any schema text. Here: what a real registry lets through, and a bomb that
travels through a real topic.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer

from tests.support.kafka_io import consume_keyed, drain, produce_values
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MARKER = Path(tempfile.mkdtemp(prefix="serdes-avro-sec-it-")) / "executed"
atexit.register(shutil.rmtree, MARKER.parent, True)
_INJECT = f"x'\n__import__('pathlib').Path({str(MARKER)!r}).touch()\n#'"


def test_own_schema_with_invalid_name_is_refused_before_registering(registry_url: str, unique_name: str) -> None:
    client = registry_client(registry_url)
    schema = {"type": "record", "name": "O'Brien", "fields": [{"name": "a", "type": "int"}]}
    ser = AvroSerializer(client, json.dumps(schema))
    with pytest.raises(serdes.SchemaMismatchError, match="O'Brien"):
        ser({"a": 1}, SerializationContext(unique_name, MessageField.VALUE))
    assert f"{unique_name}-value" not in client.get_subjects()


def test_hostile_strings_where_avro_allows_them_round_trip(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    # docs, defaults, map keys and logical type names may hold any text: data, never code
    client = registry_client(registry_url)
    writer = {"type": "record", "name": "R", "namespace": "sec.it", "doc": _INJECT, "fields": [
        {"name": "a", "type": "int", "doc": _INJECT},
        {"name": "t", "type": {"type": "long", "logicalType": _INJECT}},
        {"name": "m", "type": {"type": "map", "values": "string"}},
        {"name": "dropped", "type": "string", "default": _INJECT}]}
    reader = dict(writer, fields=writer["fields"][:3] + [{"name": "added", "type": "string", "default": _INJECT}])
    recs = [{"a": i, "t": i, "m": {_INJECT: _INJECT}, "dropped": _INJECT} for i in range(5)]
    produce_values(kafka_bootstrap, unique_name, recs, AvroSerializer(client, json.dumps(writer)))
    got = consume_keyed(kafka_bootstrap, unique_name, len(recs), AvroDeserializer(client, json.dumps(reader)), unique_name)
    assert [v for _, v in got] == [{"a": i, "t": i, "m": {_INJECT: _INJECT}, "added": _INJECT} for i in range(5)]
    assert not MARKER.exists()


def test_bomb_through_a_real_topic_is_a_typed_error_with_its_location(
    kafka_bootstrap: str, registry_url: str, unique_name: str
) -> None:
    client = registry_client(registry_url)
    schema = {"type": "record", "name": "Bomb", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}
    sid = client.register_schema(f"{unique_name}-value", Schema(json.dumps(schema), "AVRO"))
    # 20 blocks of 9,999,999 nulls: 81 bytes of payload
    block = bytes([0xFE, 0xD9, 0xC4, 0x09])  # zigzag varint of 9,999,999
    payload = b"\x00" + sid.to_bytes(4, "big") + block * 20 + b"\x00"
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(unique_name, value=payload)
    assert producer.flush(60) == 0
    (msg,) = drain(kafka_bootstrap, unique_name, 1, finished=True)
    de = AvroDeserializer(client)
    ctx = SerializationContext(msg.topic(), MessageField.VALUE, msg.headers())
    with pytest.raises(serdes.CorruptPayloadError, match="serdes.max.items=10000000") as ei:
        de(msg.value(), ctx)
    assert ei.value.location.topic == unique_name
