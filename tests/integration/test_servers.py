"""Smoke tests for the test servers: broker, registry, compatibility rule, outage."""

import json
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

USER_V1 = {"type": "record", "name": "User", "namespace": "serdes.test",
           "fields": [{"name": "name", "type": "string"}]}
# BACKWARD: a new reader field without a default cannot read old data -> incompatible
USER_BAD = {**USER_V1, "fields": USER_V1["fields"] + [{"name": "age", "type": "int"}]}
# ... with a default it can -> compatible
USER_OK = {**USER_V1, "fields": USER_V1["fields"] + [{"name": "age", "type": "int", "default": 0}]}


def _avro(schema: dict) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


def test_produce_consume_bytes(kafka_bootstrap, unique_name):
    topic = unique_name
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    sent = [f"value-{i}".encode() for i in range(5)]
    for i, value in enumerate(sent):
        producer.produce(topic, key=str(i).encode(), value=value)
    assert producer.flush(30) == 0
    consumer = Consumer({
        "bootstrap.servers": kafka_bootstrap,
        "group.id": unique_name,
        "auto.offset.reset": "earliest",
    })
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    assert got == sent


def test_register_and_read_back_by_id(registry_url, unique_name):
    client = registry_client(registry_url)
    subject = f"{unique_name}-value"
    schema_id = client.register_schema(subject, _avro(USER_V1))
    fresh = registry_client(registry_url)  # no cache
    got = fresh.get_schema(schema_id)
    assert got.schema_type == "AVRO"
    assert json.loads(got.schema_str) == USER_V1
    latest = fresh.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (schema_id, 1)
    assert fresh.lookup_schema(subject, _avro(USER_V1)).schema_id == schema_id
    assert fresh.get_version(subject, 1).schema_id == schema_id


def test_backward_compatibility_is_enforced(registry_url, unique_name):
    client = registry_client(registry_url)
    subject = f"{unique_name}-value"
    client.register_schema(subject, _avro(USER_V1))
    assert client.test_compatibility(subject, _avro(USER_BAD)) is False
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject, _avro(USER_BAD))
    assert err.value.http_status_code == 409
    assert client.test_compatibility(subject, _avro(USER_OK)) is True
    client.register_schema(subject, _avro(USER_OK))
    assert client.get_versions(subject) == [1, 2]


def _wait_registry_down(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/subjects", timeout=2).close()
        except Exception:
            return
        time.sleep(0.2)
    raise AssertionError("registry still answers after stop_registry()")


def test_registry_restart_keeps_working(servers, unique_name):
    if not servers.can_restart_registry:
        pytest.skip(f"the {servers.backend} backend cannot stop/start the registry")
    subject = f"{unique_name}-value"
    client = registry_client(servers.registry_url)
    schema_id = client.register_schema(subject, _avro(USER_V1))

    t0 = time.monotonic()
    servers.stop_registry()
    _wait_registry_down(servers.registry_url)
    t1 = time.monotonic()
    servers.start_registry()
    print(f"registry stop {t1 - t0:.1f}s, start {time.monotonic() - t1:.1f}s")

    fresh = registry_client(servers.registry_url)
    # file-based H2: schemas and ids survive the restart, and the rule still applies
    assert json.loads(fresh.get_schema(schema_id).schema_str) == USER_V1
    assert fresh.get_latest_version(subject).schema_id == schema_id
    with pytest.raises(SchemaRegistryError):
        fresh.register_schema(subject, _avro(USER_BAD))
    new_id = fresh.register_schema(f"{unique_name}-other", _avro(USER_OK))
    assert new_id != schema_id
