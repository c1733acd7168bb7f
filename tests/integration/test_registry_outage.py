"""Registry outage mid-stream: cached schemas keep decoding, new ids fail typed, then recover.

Runs on the local-process backend (here and in CI), where the fixture can stop and restart the
registry on the same port; on testcontainers / external servers it is skipped with that reason.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer

from tests.support.kafka_io import drain
from tests.support.registry_client import registry_client

pytestmark = pytest.mark.integration

V1 = {"type": "record", "name": "Reading", "namespace": "outage", "fields": [{"name": "n", "type": "long"}]}
OTHER = {"type": "record", "name": "Alarm", "namespace": "outage", "fields": [{"name": "level", "type": "string"}]}


def test_registry_outage_mid_stream(servers, kafka_bootstrap, registry_url, unique_name):
    if not servers.can_restart_registry:
        pytest.skip(f"the {servers.backend} backend cannot stop the registry (runs on the local backend in CI)")
    topic = unique_name
    client = registry_client(registry_url)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    readings = AvroSerializer(client, json.dumps(V1))
    alarms = AvroSerializer(client, json.dumps(OTHER), conf={"subject.name.strategy.type": "TOPIC_RECORD"})
    vctx = SerializationContext(topic, MessageField.VALUE)
    for i in range(20):
        producer.produce(topic, value=readings({"n": i}, vctx))
    producer.produce(topic, value=alarms({"level": "high"}, vctx))  # a second schema id, not yet seen
    producer.flush()
    messages = drain(kafka_bootstrap, topic, 21, finished=True)
    assert len(messages) == 21

    # a fresh client, so nothing is cached but what the deserializer itself decodes
    consumer_client = SchemaRegistryClient({"url": registry_url, "max.retries": 1, "retries.wait.ms": 100})
    deserialize = AvroDeserializer(consumer_client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert deserialize(messages[0].value(), ctx) == {"n": 0}  # schema v1 cached

    servers.stop_registry()
    try:
        decoded = [deserialize(m.value(), ctx) for m in messages[:20]]
        assert decoded == [{"n": i} for i in range(20)]
        with pytest.raises(serdes.RegistryUnavailableError) as info:
            deserialize(messages[20].value(), ctx)
        assert topic in str(info.value)
    finally:
        servers.start_registry()
    assert deserialize(messages[20].value(), ctx) == {"level": "high"}
