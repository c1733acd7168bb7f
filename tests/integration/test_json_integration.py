"""serdes.json against a real Kafka broker and a real Confluent-compatible registry (Apicurio ccompat)."""

from __future__ import annotations

import copy
import json
from typing import List

import orjson
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

import serdes
from serdes.json import JSONDeserializer, JSONSerializer

from tests.support.kafka_io import consume_keyed, produce_values
from tests.support.json_samples import COMPLEX_DOC, COMPLEX_SCHEMA
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

COMPLEX = json.dumps(COMPLEX_SCHEMA)


def _docs(n: int) -> List[dict]:
    out = []
    for i in range(n):
        d = copy.deepcopy(COMPLEX_DOC)
        d["notes"] = f"record {i}"
        d["customer"]["id"] = i
        out.append(d)
    return out


def test_produce_consume_all_equal_none_lost(kafka_bootstrap, registry_url, unique_name):
    client = registry_client(registry_url)
    docs = _docs(300)
    ser = JSONSerializer(COMPLEX, client)  # auto.register.schemas (default)
    produce_values(kafka_bootstrap, unique_name, docs, ser)
    registered = client.get_latest_version(f"{unique_name}-value")
    assert json.loads(registered.schema.schema_str) == COMPLEX_SCHEMA
    de = JSONDeserializer(None, schema_registry_client=registry_client(registry_url))
    got = consume_keyed(kafka_bootstrap, unique_name, len(docs), de, unique_name)
    assert [k for k, _ in got] == list(range(len(docs)))  # none lost, none duplicated
    assert [v for _, v in got] == docs
    assert len(de._decoders) == 1


def test_ref_across_subjects(kafka_bootstrap, registry_url, unique_name):
    client = registry_client(registry_url)
    address = {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
               "required": ["street", "city"]}
    addr_subject = f"{unique_name}-address"
    client.register_schema(addr_subject, Schema(json.dumps(address), "JSON"))
    version = client.get_latest_version(addr_subject).version
    customer = {"title": "Customer", "type": "object",
                "properties": {"name": {"type": "string"}, "address": {"$ref": "address.json"}},
                "required": ["name", "address"]}
    schema = Schema(json.dumps(customer), "JSON", [SchemaReference("address.json", addr_subject, version)])
    ser = JSONSerializer(schema, client)
    good = [{"name": f"n{i}", "address": {"street": f"{i} Way", "city": "Oslo"}} for i in range(20)]
    produce_values(kafka_bootstrap, unique_name, good, ser)
    with pytest.raises(serdes.ValidationError) as info:
        ser({"name": "x", "address": {"street": 5, "city": "Oslo"}},
            SerializationContext(unique_name, MessageField.VALUE))
    assert info.value.json_path == "$.address.street"

    # the reader gets the writer schema and its references from the registry (a fresh client)
    fresh = registry_client(registry_url)
    got = consume_keyed(kafka_bootstrap, unique_name, len(good), JSONDeserializer(None, schema_registry_client=fresh),
                   unique_name)
    assert [v for _, v in got] == good
    got_c = consume_keyed(kafka_bootstrap, unique_name, len(good),
                     CJSONDeserializer(None, schema_registry_client=fresh), unique_name + "-c")
    assert [v for _, v in got_c] == good
    writer = fresh.get_latest_version(f"{unique_name}-value").schema
    assert [(r.name, r.subject) for r in writer.references] == [("address.json", addr_subject)]
    # invalid nested address on the read side: the reference is applied there too
    frame = ser(good[0], SerializationContext(unique_name, MessageField.VALUE))[:5]
    de = JSONDeserializer(None, schema_registry_client=fresh)
    with pytest.raises(serdes.ValidationError, match=r"\$\.address"):
        de(frame + orjson.dumps({"name": "x", "address": {"street": "s"}}),
           SerializationContext(unique_name, MessageField.VALUE))


USER_V1 = {"title": "User", "type": "object", "additionalProperties": False,
           "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id", "name"]}
# BACKWARD-compatible: a new optional property in a closed content model
USER_V2_OK = {**USER_V1, "properties": {**USER_V1["properties"], "email": {"type": "string"}}}
# incompatible: a property changes type
USER_V2_BAD = {**USER_V1, "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}


def test_evolution_compatible_accepted_incompatible_rejected(kafka_bootstrap, registry_url, unique_name):
    client = registry_client(registry_url)
    subject = f"{unique_name}-value"
    ctx = SerializationContext(unique_name, MessageField.VALUE)
    v1 = JSONSerializer(json.dumps(USER_V1), client)
    first = v1({"id": 1, "name": "a"}, ctx)
    client.set_compatibility(subject, "BACKWARD")

    v2 = JSONSerializer(json.dumps(USER_V2_OK), client)
    second = v2({"id": 2, "name": "b", "email": "b@x"}, ctx)
    assert first[1:5] != second[1:5]
    assert len(client.get_versions(subject)) == 2

    bad = JSONSerializer(json.dumps(USER_V2_BAD), client)
    with pytest.raises(serdes.SchemaMismatchError) as info:
        bad({"id": "3", "name": "c"}, ctx)
    msg = str(info.value)
    assert "incompatible" in msg.lower() and "/properties/id" in msg and f"topic='{unique_name}'" in msg
    assert isinstance(info.value, SerializationError)
    assert len(client.get_versions(subject)) == 2  # nothing registered

    # both versions read back, each validated against its own writer schema
    de = JSONDeserializer(None, schema_registry_client=registry_client(registry_url))
    assert de(first, ctx) == {"id": 1, "name": "a"}
    assert de(second, ctx) == {"id": 2, "name": "b", "email": "b@x"}
    # with use.latest.version, old records are validated against v2 (compatible: they pass)
    latest = JSONDeserializer(None, schema_registry_client=client, conf={"use.latest.version": True})
    assert latest(first, ctx) == {"id": 1, "name": "a"}


@pytest.mark.parametrize("header_framing", [False, True], ids=["prefix", "header"])
def test_confluent_produced_ours_consumed_and_back(kafka_bootstrap, registry_url, unique_name, header_framing):
    from confluent_kafka.schema_registry import header_schema_id_serializer

    client = registry_client(registry_url)
    conf = {"schema.id.serializer": header_schema_id_serializer} if header_framing else None
    docs = _docs(50)
    t_conf, t_ours = f"{unique_name}-c", f"{unique_name}-o"
    if header_framing:
        registered = client.register_schema_full_response(f"{t_conf}-value", Schema(COMPLEX, "JSON"))
        if registered.guid is None:
            pytest.skip("the registry returns no schema GUIDs (Apicurio ccompat): header framing needs them")
    produce_values(kafka_bootstrap, t_conf, docs, CJSONSerializer(COMPLEX, client, conf=conf), header_framing=header_framing)
    produce_values(kafka_bootstrap, t_ours, docs, JSONSerializer(COMPLEX, client, conf=conf), header_framing=header_framing)

    fresh = registry_client(registry_url)
    ours = consume_keyed(kafka_bootstrap, t_conf, len(docs), JSONDeserializer(None, schema_registry_client=fresh), t_conf)
    theirs = consume_keyed(kafka_bootstrap, t_ours, len(docs), CJSONDeserializer(None, schema_registry_client=fresh), t_ours)
    assert [v for _, v in ours] == docs
    assert [v for _, v in theirs] == docs

    # and the JSON payloads are the same bytes (the schema ids may differ: two subjects)
    def payload(b: bytes, c: SerializationContext) -> bytes:
        return b if header_framing else b[5:]

    raw_c = consume_keyed(kafka_bootstrap, t_conf, len(docs), payload, t_conf + "-raw")
    raw_o = consume_keyed(kafka_bootstrap, t_ours, len(docs), payload, t_ours + "-raw")
    assert raw_c == raw_o
