"""serdes.avro against a real Kafka broker and a real Confluent-compatible registry."""

from __future__ import annotations

import copy
import json
from typing import List

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroDeserializer as CDeser
from confluent_kafka.schema_registry.avro import AvroSerializer as CSer
from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel, ServerConfig
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer

from tests.support.avro_samples import COMPLEX, records
from tests.support.kafka_io import consume_keyed, produce_values
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CPX = records()["complex"][1]


def _recs(n: int) -> List[dict]:
    out = []
    for i in range(n):
        r = copy.deepcopy(CPX)
        r["address"]["zip"] = i
        r["counters"] = {"i": i}
        out.append(r)
    return out


def test_produce_consume_all_equal_none_lost(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    client = registry_client(registry_url)
    recs = _recs(300)
    produce_values(kafka_bootstrap, unique_name, recs, AvroSerializer(client, json.dumps(COMPLEX)))  # auto-register
    de = AvroDeserializer(registry_client(registry_url))
    got = consume_keyed(kafka_bootstrap, unique_name, len(recs), de, unique_name)
    assert [k for k, _ in got] == list(range(len(recs)))
    assert [v for _, v in got] == recs
    assert len(de._decoders) == 1


V1 = {"type": "record", "name": "Evo", "namespace": "it", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "Evo", "namespace": "it", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None}]}
V3_BAD = {"type": "record", "name": "Evo", "namespace": "it", "fields": [
    {"name": "id", "type": "string"}, {"name": "required", "type": "int"}]}


def test_evolution_in_real_registry(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    client = registry_client(registry_url)
    subject = f"{unique_name}-value"
    client.set_config(subject_name=subject, config=ServerConfig(compatibility=ConfigCompatibilityLevel.BACKWARD))
    v1 = [{"id": i, "name": f"v1-{i}"} for i in range(10)]
    v2 = [{"id": 10 + i, "name": f"v2-{i}", "email": f"e{i}"} for i in range(10)]
    produce_values(kafka_bootstrap, unique_name, v1, AvroSerializer(client, json.dumps(V1)))
    produce_values(kafka_bootstrap, unique_name, v2, AvroSerializer(client, json.dumps(V2)), start=10)
    assert len(client.get_versions(subject)) == 2
    de = AvroDeserializer(client, json.dumps(V2))
    got = [v for _, v in consume_keyed(kafka_bootstrap, unique_name, 20, de, unique_name)]
    assert got == [dict(r, email=None) for r in v1] + v2
    assert len(de._decoders) == 2  # one decoder per writer schema
    # an incompatible v3 is rejected by the registry with a clear error
    with pytest.raises((SchemaRegistryError, serdes.SerdesError)) as ei:
        AvroSerializer(client, json.dumps(V3_BAD))({"id": "x", "required": 1},
                                                  SerializationContext(unique_name, MessageField.VALUE))
    assert "409" in str(ei.value) or "compatib" in str(ei.value).lower()
    # and a v1 reader over v2 data that drops a field it cannot default is a SchemaMismatchError
    strict_reader = dict(V1, fields=V1["fields"] + [{"name": "must", "type": "int"}])
    de_bad = AvroDeserializer(client, json.dumps(strict_reader))
    frame = AvroSerializer(client, json.dumps(V2))(v2[0], SerializationContext(unique_name, MessageField.VALUE))
    with pytest.raises(serdes.SchemaMismatchError, match="must"):
        de_bad(frame, SerializationContext(unique_name, MessageField.VALUE))


def test_named_type_reference_across_subjects(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    client = registry_client(registry_url)
    addr = {"type": "record", "name": "Address", "namespace": "it", "fields": [{"name": "city", "type": "string"}]}
    addr_subject = f"{unique_name}-address"
    client.register_schema(addr_subject, Schema(json.dumps(addr), "AVRO"))
    version = client.get_latest_version(addr_subject).version
    person = {"type": "record", "name": "Person", "namespace": "it", "fields": [
        {"name": "name", "type": "string"}, {"name": "home", "type": "it.Address"}]}
    schema = Schema(json.dumps(person), "AVRO", [SchemaReference("it.Address", addr_subject, version)])
    recs = [{"name": f"p{i}", "home": {"city": f"c{i}"}} for i in range(20)]
    produce_values(kafka_bootstrap, unique_name, recs, AvroSerializer(client, schema))
    fresh = registry_client(registry_url)
    assert [v for _, v in consume_keyed(kafka_bootstrap, unique_name, 20, AvroDeserializer(fresh), unique_name)] == recs
    assert [v for _, v in consume_keyed(kafka_bootstrap, unique_name, 20, CDeser(fresh), unique_name + "-c")] == recs


def test_interop_with_confluent_both_directions(kafka_bootstrap: str, registry_url: str, unique_name: str) -> None:
    client = registry_client(registry_url)
    theirs = _recs(50)
    ours = _recs(50)
    produce_values(kafka_bootstrap, unique_name, theirs, CSer(client, json.dumps(COMPLEX)))
    produce_values(kafka_bootstrap, unique_name, ours, AvroSerializer(client, json.dumps(COMPLEX)), start=50)
    fresh = registry_client(registry_url)
    got_ours = consume_keyed(kafka_bootstrap, unique_name, 100, AvroDeserializer(fresh), unique_name)
    got_theirs = consume_keyed(kafka_bootstrap, unique_name, 100, CDeser(fresh), unique_name + "-c")
    assert [v for _, v in got_ours] == theirs + ours
    assert [v for _, v in got_theirs] == theirs + ours
