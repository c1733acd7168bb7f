"""``deserialize_with_schema`` against the real registry (Apicurio Registry 3.3, ccompat API):
the subject and version of each record's writer schema, including a schema registered under a
subject other than the one the consumer's strategy names (found with ``/schemas/ids/{id}/versions``,
which confluent-kafka's mock registry does not serve)."""

from __future__ import annotations

import json
import uuid

import pytest

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes.avro as s_avro
from tests.support.confluent_releases import TOPIC_STRATEGY
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("implementation")]

V1 = {"type": "record", "name": "Item", "namespace": "ws", "fields": [{"name": "a", "type": "int"}]}
V2 = {"type": "record", "name": "Item", "namespace": "ws",
      "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}]}


def test_versions_and_a_foreign_subject(registry_url: str) -> None:
    topic = f"ws-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    client = registry_client(registry_url)
    w1 = c_avro.AvroSerializer(client, json.dumps(V1), conf=TOPIC_STRATEGY or None)
    w2 = c_avro.AvroSerializer(client, json.dumps(V2), conf=TOPIC_STRATEGY or None)
    frames = [w1({"a": 1}, ctx), w2({"a": 2, "b": "x"}, ctx)]
    # a third schema registered only under another subject, its id framed by hand
    other = f"elsewhere-{uuid.uuid4().hex[:8]}"
    v3 = dict(V1, name=f"Other{uuid.uuid4().hex[:8]}")  # content unique to this run: one subject lists it
    sid = client.register_schema(other, Schema(json.dumps(v3), "AVRO"))
    frames.append(b"\x00" + sid.to_bytes(4, "big") + b"\x06")

    deser = s_avro.AvroDeserializer(registry_client(registry_url), conf=TOPIC_STRATEGY or None)
    got = [deser.deserialize_with_schema(f, ctx) for f in frames]
    assert [v for v, _ in got] == [{"a": 1}, {"a": 2, "b": "x"}, {"a": 3}]
    ids = [int.from_bytes(f[1:5], "big") for f in frames]
    assert [(w.schema_id, w.subject, w.version) for _, w in got] == [
        (ids[0], f"{topic}-value", 1), (ids[1], f"{topic}-value", 2), (sid, other, 1)]
    assert got[2][1].registered == ((other, 1),)
