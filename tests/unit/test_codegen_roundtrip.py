"""Generated classes with serdes.typed, end to end on a mock:// registry: confluent-kafka's
serializers write, serdes' deserializers read into the generated classes (``from_dict``), serdes'
serializers write them back (``to_dict``) byte for byte; and schema evolution through the classes'
``SCHEMA`` as the reader schema. Runs on both implementations (native and pure Python)."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import typed
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.codegen import generate, generate_from_registry
from serdes import SchemaMismatchError
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

from .test_codegen import ORDER_AVSC

pytestmark = pytest.mark.usefixtures("implementation")

STYLES = ("dataclass", "msgspec")
CTX = SerializationContext("codegen-rt", MessageField.VALUE)


@pytest.fixture
def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://codegen-rt-{uuid.uuid4()}"})




# -- Avro --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
def test_avro_round_trip(style: str, client: SchemaRegistryClient, load: Any) -> None:
    mod = load(generate(json.dumps(ORDER_AVSC), "avro", style))
    key = uuid.uuid4()
    at = datetime.datetime(2024, 1, 1, 12, 30, tzinfo=datetime.timezone.utc)
    value = {
        "id": 7, "from": "web", "tags": ["x", "y"], "status": "NEW",
        "next": {"id": 8, "from": "inner", "tags": [], "status": "DONE", "next": None, "amount": decimal.Decimal("0.00"),
                 "day": datetime.date(1970, 1, 1), "at": at, "local": datetime.datetime(2024, 1, 2), "clock": datetime.time(0),
                 "key": key, "hash": b"0000", "attrs": {}, "ship": {"street": "s"}, "bill": None, "ratio": 0.0, "either": "str"},
        "amount": decimal.Decimal("1.25"), "day": datetime.date(2024, 5, 1), "at": at,
        "local": datetime.datetime(2024, 1, 2, 3, 4, 5, 6), "clock": datetime.time(3, 4, 5), "key": key, "hash": b"abcd",
        "attrs": {"a": 1, "b": "s"}, "ship": {"street": "m"}, "bill": {"street": "b"}, "ratio": 0.5,
        "either": {"street": "e"},
    }
    data = ConfluentAvroSerializer(client, json.dumps(ORDER_AVSC))(value, CTX)
    got = AvroDeserializer(client, schema_str=mod.SCHEMA, from_dict=typed.from_dict(mod.Order))(data, CTX)
    inner = mod.Order(
        id=8, from_="inner", tags=[], status=mod.Status.DONE, amount=decimal.Decimal("0.00"), day=datetime.date(1970, 1, 1),
        at=at, local=datetime.datetime(2024, 1, 2), clock=datetime.time(0), key=key, hash=b"0000",
        ship=mod.Address(street="s"), ratio=0.0, either="str",
    )
    expected = mod.Order(
        id=7, from_="web", tags=["x", "y"], status=mod.Status.NEW, next=inner, amount=decimal.Decimal("1.25"),
        day=datetime.date(2024, 5, 1), at=at, local=datetime.datetime(2024, 1, 2, 3, 4, 5, 6), clock=datetime.time(3, 4, 5),
        key=key, hash=b"abcd", attrs={"a": 1, "b": "s"}, ship=mod.Address(street="m"), bill=mod.Address(street="b"),
        ratio=0.5, either=mod.Address(street="e"),
    )
    assert got == expected
    assert type(got.status) is mod.Status and type(got.either) is mod.Address
    back = AvroSerializer(client, json.dumps(ORDER_AVSC), to_dict=typed.to_dict(mod.Order))(got, CTX)
    assert back == data


@pytest.mark.parametrize("style", STYLES)
def test_avro_generated_classes_are_built_inside_the_decoder(style: str, client: SchemaRegistryClient,
                                                             load: Any) -> None:
    from serdes.avro._typed import record_makers

    schema = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "from", "type": "string", "default": "web"},
        {"name": "st", "type": {"type": "enum", "name": "St", "symbols": ["A", "B"]}},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}]}}, "default": []},
        {"name": "next", "type": ["null", "Order"], "default": None}]}
    mod = load(generate(json.dumps(schema), "avro", style))
    # the classes agree with their schema: serdes' decoders build them directly (docs/typed.md)
    assert record_makers(json.loads(mod.SCHEMA), mod.Order) is not None
    value = {"id": 1, "from": "f", "st": "B", "lines": [{"sku": "s"}], "next": {"id": 2, "from": "g", "st": "A",
                                                                             "lines": [], "next": None}}
    data = ConfluentAvroSerializer(client, json.dumps(schema))(value, CTX)
    got = AvroDeserializer(client, schema_str=mod.SCHEMA, from_dict=typed.from_dict(mod.Order))(data, CTX)
    assert got == mod.Order(id=1, from_="f", st=mod.St.B, lines=[mod.Line(sku="s")],
                            next=mod.Order(id=2, from_="g", st=mod.St.A))


V1 = {"type": "record", "name": "User", "namespace": "com.example", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"], "default": "A"}, "default": "A"},
]}
V2 = {**V1, "fields": V1["fields"] + [
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["new"]},
    {"name": "score", "type": "double", "default": 1.5},
]}


@pytest.mark.parametrize("style", STYLES)
def test_avro_evolution_through_generated_schema(style: str, client: SchemaRegistryClient, load: Any) -> None:
    v1, v2 = load(generate(json.dumps(V1), "avro", style)), load(generate(json.dumps(V2), "avro", style))
    v1_bytes = ConfluentAvroSerializer(client, json.dumps(V1))({"id": 1, "name": "a", "kind": "B"}, CTX)
    v2_bytes = ConfluentAvroSerializer(client, json.dumps(V2))(
        {"id": 2, "name": "b", "kind": "A", "email": "b@x", "tags": ["t"], "score": 2.0}, CTX)
    # new reader, old data: the fields v1 lacks get the schema's defaults -- the classes' defaults too
    new_reader = AvroDeserializer(client, schema_str=v2.SCHEMA, from_dict=typed.from_dict(v2.User))
    got = new_reader(v1_bytes, CTX)
    assert got == v2.User(id=1, name="a", kind=v2.Kind.B) == v2.User(
        id=1, name="a", kind=v2.Kind.B, email=None, tags=["new"], score=1.5)
    assert new_reader(v2_bytes, CTX) == v2.User(id=2, name="b", kind=v2.Kind.A, email="b@x", tags=["t"], score=2.0)
    # old reader, new data: the fields v1 lacks are dropped
    old_reader = AvroDeserializer(client, schema_str=v1.SCHEMA, from_dict=typed.from_dict(v1.User))
    assert old_reader(v2_bytes, CTX) == v1.User(id=2, name="b", kind=v1.Kind.A)
    assert old_reader(v1_bytes, CTX) == v1.User(id=1, name="a", kind=v1.Kind.B)
    # and the new class writes what confluent-kafka writes for the same record
    back = AvroSerializer(client, json.dumps(V2), to_dict=typed.to_dict(v2.User))(new_reader(v2_bytes, CTX), CTX)
    assert back == v2_bytes


# -- JSON Schema -------------------------------------------------------------------------------------
PERSON = {
    "title": "Person", "type": "object",
    "properties": {
        "name": {"type": "string"}, "age": {"type": ["integer", "null"]}, "home": {"$ref": "#/$defs/Address"},
        "kind": {"enum": ["admin", "user"]}, "class": {"type": "string"},
        "others": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
        "labels": {"type": "object", "additionalProperties": {"type": "number"}},
    },
    "required": ["name", "age", "home", "kind", "class", "others", "labels"],
    "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}},
}


@pytest.mark.parametrize("style", STYLES)
def test_jsonschema_round_trip(style: str, client: SchemaRegistryClient, load: Any) -> None:
    mod = load(generate(json.dumps(PERSON), "json", style))
    value = {"name": "n", "age": None, "home": {"street": "h"}, "kind": "user", "class": "c",
             "others": [{"street": "o1"}, {"street": "o2"}], "labels": {"x": 1.5}}
    data = ConfluentJSONSerializer(json.dumps(PERSON), client)(value, CTX)
    got = JSONDeserializer(json.dumps(PERSON), from_dict=typed.from_dict(mod.Person))(data, CTX)
    assert got == mod.Person(name="n", age=None, home=mod.Address(street="h"), kind=mod.Kind.user, class_="c",
                             others=[mod.Address(street="o1"), mod.Address(street="o2")], labels={"x": 1.5})
    back = JSONSerializer(json.dumps(PERSON), client, to_dict=typed.to_dict(mod.Person))(got, CTX)
    assert back == data


@pytest.mark.parametrize("style", STYLES)
def test_jsonschema_new_class_reads_old_records(style: str, client: SchemaRegistryClient, load: Any) -> None:
    v1 = {"title": "P", "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    v2 = {**v1, "properties": {**v1["properties"], "b": {"type": "integer"}, "c": {"type": "string", "default": "d"}}}
    new = load(generate(json.dumps(v2), "json", style))
    old_bytes = ConfluentJSONSerializer(json.dumps(v1), client)({"a": "x"}, CTX)
    got = JSONDeserializer(new.SCHEMA, from_dict=typed.from_dict(new.P))(old_bytes, CTX)
    assert got == new.P(a="x", b=None, c="d")


@pytest.mark.parametrize("style", STYLES)
def test_jsonschema_old_class_reads_new_records_ignoring_new_properties(
    style: str, client: SchemaRegistryClient, load: Any,
) -> None:
    v1 = {"title": "P", "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    v2 = {**v1, "properties": {**v1["properties"], "b": {"type": "integer"}}}
    old = load(generate(json.dumps(v1), "json", style))
    new_bytes = ConfluentJSONSerializer(json.dumps(v2), client)({"a": "x", "b": 2}, CTX)
    # by default a property the class lacks is an error, named; unknown="ignore" leaves it out
    with pytest.raises(SchemaMismatchError, match="has no field for 'b'"):
        JSONDeserializer(old.SCHEMA, from_dict=typed.from_dict(old.P))(new_bytes, CTX)
    got = JSONDeserializer(old.SCHEMA, from_dict=typed.from_dict(old.P, unknown="ignore"))(new_bytes, CTX)
    assert got == old.P(a="x")


@pytest.mark.parametrize("style", STYLES)
def test_jsonschema_absent_optional_property_stays_absent(style: str, client: SchemaRegistryClient, load: Any) -> None:
    schema = {"title": "P", "type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": ["string", "null"]}}}
    mod = load(generate(json.dumps(schema), "json", style))
    assert mod.P.__serdes_omit_none__ == frozenset({"b"})  # c takes null: written as null
    ser = JSONSerializer(json.dumps(schema), client, to_dict=typed.to_dict(mod.P))
    de = JSONDeserializer(json.dumps(schema), from_dict=typed.from_dict(mod.P))
    for value in ({"a": "x", "c": None}, {"a": "x", "b": 1, "c": "y"}):
        data = ConfluentJSONSerializer(json.dumps(schema), client)(value, CTX)
        got = de(data, CTX)
        assert ser(got, CTX) == data
    assert json.loads(ser(mod.P(a="x"), CTX)[5:]) == {"a": "x", "c": None}


# -- Protobuf ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", STYLES)
def test_protobuf_round_trip_from_registered_schema(style: str, client: SchemaRegistryClient, load: Any) -> None:
    from google.protobuf import timestamp_pb2
    from serdes_test import common_pb2, order_pb2

    msg = order_pb2.Order(
        id=5, customer="c", amount=2.5, paid=True, level=common_pb2.HIGH, tags=["a"], counts={"k": 3},
        address=common_pb2.Address(street="s", city="c", zip="z"), created=timestamp_pb2.Timestamp(seconds=10, nanos=5),
        iban="DE00", blob=b"\x00\x01", priority=0, lines=[order_pb2.Order.Line(sku="x", qty=2)],
    )
    data = ConfluentProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})(msg, CTX)
    mod = load(generate_from_registry(client, "codegen-rt-value", style=style))
    deserializer = ProtobufDeserializer(None, {"use.deprecated.format": False}, client,
                                        from_dict=typed.from_dict(mod.Order))
    got = deserializer(data, CTX)
    assert got == mod.Order(
        id=5, customer="c", amount=2.5, paid=True, level=mod.Level.HIGH, tags=["a"], counts={"k": 3},
        address=mod.Address(street="s", city="c", zip="z"), created=mod.Timestamp(seconds=10, nanos=5),
        card=None, iban="DE00", blob=b"\x00\x01", priority=0, lines=[mod.Order_Line(sku="x", qty=2)],
    )
    serializer = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False},
                                    to_dict=typed.to_dict(mod.Order))
    assert serializer(got, CTX) == data
