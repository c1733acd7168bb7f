"""serdes.quix against quixstreams' own serializers (quixstreams.models.serializers), on a mock:// registry.

The same configuration gives the same bytes and the same values; the same bad input gives
quixstreams' ``SerializationError``, with serdes' typed error as its cause. Every test runs on
serdes' native extension and on pure Python (the ``implementation`` fixture).
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer

import serdes
from serdes.demo.orders_pb2 import Order

from .conftest import QUIX_REASON, MockRegistry

pytest.importorskip("quixstreams", reason=QUIX_REASON)

from quixstreams.models.serializers import (  # noqa: E402
    MessageField,
    SchemaRegistryClientConfig,
    SchemaRegistrySerializationConfig,
    SerializationContext,
    SerializationError,
)
from quixstreams.models.serializers import avro as quix_avro  # noqa: E402
from quixstreams.models.serializers import json as quix_json  # noqa: E402
from quixstreams.models.serializers import protobuf as quix_protobuf  # noqa: E402

import serdes.quix as sq  # noqa: E402

pytestmark = pytest.mark.usefixtures("implementation")

AVRO_ORDER = {
    "type": "record", "name": "Order", "namespace": "quixtest", "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "amount_cents", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
JSON_ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount_cents": {"type": "integer", "minimum": 0},
        "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["order_id", "amount_cents"],
}


def _avro_values() -> List[Dict[str, Any]]:
    return [
        {"order_id": f"o-{i}", "amount_cents": i * 1001 - 3, "price": i / 7, "note": None if i % 2 else f"n{i}",
         "tags": ["a", "é"][: i % 3]}
        for i in range(20)
    ]


def _json_values() -> List[Dict[str, Any]]:
    return [{"order_id": f"o-{i}", "amount_cents": i * 1001, "price": i / 7, "tags": ["x"] * (i % 3)} for i in range(20)]


def _orders() -> List[Order]:
    return [Order(order_id=f"o-{i}", customer=f"c{i % 4}", amount_cents=i * 1001 - 5, currency="EUR" if i % 2 else "",
                  tags=["t"] * (i % 3)) for i in range(20)]


def _ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _config(url: str) -> SchemaRegistryClientConfig:
    return SchemaRegistryClientConfig(url=url)


# -- the same bytes and values as quixstreams' serializers ---------------------------------------------


def test_avro_bytes_and_values_match_quixstreams(mock_registry: MockRegistry) -> None:
    cfg = _config(mock_registry.url)
    theirs = quix_avro.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg)
    ours = sq.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg)
    ctx = _ctx()
    for value in _avro_values():
        frame = theirs(value, ctx)
        assert ours(value, ctx) == frame
        assert sq.AvroDeserializer(schema_registry_client_config=cfg)(frame, ctx) == value
    their_de = quix_avro.AvroDeserializer(schema_registry_client_config=cfg)
    our_de = sq.AvroDeserializer(schema_registry_client_config=cfg)
    frames = [ours(v, ctx) for v in _avro_values()]
    assert [our_de(f, ctx) for f in frames] == [their_de(f, ctx) for f in frames] == _avro_values()


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_keys_register_under_the_key_subject_like_quixstreams(mock_registry: MockRegistry, fmt: str) -> None:
    # a topic's key serializer: the context says MessageField.KEY, the subject is <topic>-key
    cfg = _config(mock_registry.url)
    key_ctx = SerializationContext("keyed", MessageField.KEY)
    if fmt == "avro":
        key_schema = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "string"}]}
        pair = (quix_avro.AvroSerializer(key_schema, schema_registry_client_config=cfg),
                sq.AvroSerializer(key_schema, schema_registry_client_config=cfg))
        keys: List[Any] = [{"id": f"k{i}"} for i in range(5)]
        de: Any = sq.AvroDeserializer(schema_registry_client_config=cfg)
    elif fmt == "json":
        key_schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        pair = (quix_json.JSONSerializer(schema=key_schema, schema_registry_client_config=cfg),
                sq.JSONSerializer(schema=key_schema, schema_registry_client_config=cfg))
        keys = [{"id": f"k{i}"} for i in range(5)]
        de = sq.JSONDeserializer(schema=key_schema, schema_registry_client_config=cfg)
    else:
        pair = (quix_protobuf.ProtobufSerializer(Order, schema_registry_client_config=cfg),
                sq.ProtobufSerializer(Order, schema_registry_client_config=cfg))
        keys = _orders()[:5]
        de = sq.ProtobufDeserializer(Order, schema_registry_client_config=cfg, to_dict=False)
    theirs, ours = pair
    for key in keys:
        frame = ours(key, key_ctx)
        assert frame == theirs(key, key_ctx)
        assert de(frame, key_ctx) == key
    assert "keyed-key" in mock_registry.client.get_subjects()
    assert "keyed-value" not in mock_registry.client.get_subjects()


def test_avro_reads_confluent_kafka_frames_with_a_reader_schema(mock_registry: MockRegistry) -> None:
    # a reader schema (the deserializer's ``schema``) resolves the writer's records, as in quixstreams
    frame = ConfluentAvroSerializer(mock_registry.client, json.dumps(AVRO_ORDER))(_avro_values()[3], _ctx())
    reader = dict(AVRO_ORDER, fields=AVRO_ORDER["fields"][:2] + [
        {"name": "currency", "type": "string", "default": "EUR"}])
    cfg = _config(mock_registry.url)
    got = sq.AvroDeserializer(reader, schema_registry_client_config=cfg)(frame, _ctx())
    assert got == quix_avro.AvroDeserializer(reader, schema_registry_client_config=cfg)(frame, _ctx())
    assert got == {"order_id": "o-3", "amount_cents": 3000, "currency": "EUR"}


def test_avro_serialization_config_reaches_serdes(mock_registry: MockRegistry) -> None:
    # auto_register_schemas=False + use_latest_version: the schema registered by someone else is used
    ConfluentAvroSerializer(mock_registry.client, json.dumps(AVRO_ORDER))(_avro_values()[0], _ctx("pre"))
    conf = SchemaRegistrySerializationConfig(auto_register_schemas=False, use_latest_version=True)
    cfg = _config(mock_registry.url)
    ours = sq.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg, schema_registry_serialization_config=conf)
    theirs = quix_avro.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg,
                                      schema_registry_serialization_config=conf)
    assert ours(_avro_values()[1], _ctx("pre")) == theirs(_avro_values()[1], _ctx("pre"))
    # and an unregistered subject is the registry's refusal, as quixstreams reports it
    with pytest.raises(SerializationError) as ours_err:
        ours(_avro_values()[1], _ctx("never-registered"))
    with pytest.raises(SerializationError):
        theirs(_avro_values()[1], _ctx("never-registered"))
    assert isinstance(ours_err.value.__cause__, serdes.SerdesError)
    assert "never-registered" in str(ours_err.value)


def test_json_bytes_and_values_match_quixstreams(mock_registry: MockRegistry) -> None:
    cfg = _config(mock_registry.url)
    theirs = quix_json.JSONSerializer(schema=JSON_ORDER, schema_registry_client_config=cfg)
    ours = sq.JSONSerializer(schema=JSON_ORDER, schema_registry_client_config=cfg)
    their_de = quix_json.JSONDeserializer(schema=JSON_ORDER, schema_registry_client_config=cfg)
    our_de = sq.JSONDeserializer(schema=JSON_ORDER, schema_registry_client_config=cfg)
    ctx = _ctx()
    for value in _json_values():
        frame = theirs(value, ctx)
        assert ours(value, ctx) == frame
        assert our_de(frame, ctx) == their_de(frame, ctx) == value
    # frames confluent-kafka's own serializer wrote
    confluent = ConfluentJSONSerializer(json.dumps(JSON_ORDER), mock_registry.client)
    frames = [confluent(v, ctx) for v in _json_values()]
    assert [our_de(f, ctx) for f in frames] == _json_values()


@pytest.mark.parametrize("as_dict", [False, True], ids=["message", "dict"])
def test_protobuf_bytes_match_quixstreams(mock_registry: MockRegistry, as_dict: bool) -> None:
    from google.protobuf.json_format import MessageToDict

    cfg = _config(mock_registry.url)
    theirs = quix_protobuf.ProtobufSerializer(Order, schema_registry_client_config=cfg)
    ours = sq.ProtobufSerializer(Order, schema_registry_client_config=cfg)
    ctx = _ctx()
    for order in _orders():
        value: Any = MessageToDict(order, preserving_proto_field_name=True) if as_dict else order
        assert ours(value, ctx) == theirs(value, ctx)


@pytest.mark.parametrize("options", [
    {},
    {"preserving_proto_field_name": True},
    {"use_integers_for_enums": True, "preserving_proto_field_name": True},
    {"to_dict": False},
], ids=["default", "proto-names", "int-enums", "message"])
def test_protobuf_values_match_quixstreams(mock_registry: MockRegistry, options: Dict[str, Any]) -> None:
    cfg = _config(mock_registry.url)
    confluent = ConfluentProtobufSerializer(Order, mock_registry.client,
                                            {"use.deprecated.format": False})
    frames = [confluent(o, _ctx()) for o in _orders()]
    theirs = quix_protobuf.ProtobufDeserializer(Order, schema_registry_client_config=cfg, **options)
    ours = sq.ProtobufDeserializer(Order, schema_registry_client_config=cfg, **options)
    got = [ours(f, _ctx()) for f in frames]
    assert got == [theirs(f, _ctx()) for f in frames]
    if options.get("to_dict") is False:
        assert got == _orders()
    else:
        assert got[1]["amountCents" if not options else "amount_cents"] == "996"  # int64: a string, as MessageToDict


def test_a_client_instead_of_a_config() -> None:
    # serdes' keyword: the caller's client (e.g. with its own timeout), no config
    client = SchemaRegistryClient.new_client({"url": "mock://quix-own-client"})
    ours = sq.AvroSerializer(AVRO_ORDER, schema_registry_client=client)
    frame = ours(_avro_values()[0], _ctx())
    assert client.get_subjects() == ["orders-value"]
    assert sq.AvroDeserializer(schema_registry_client=client)(frame, _ctx()) == _avro_values()[0]
    js = sq.JSONSerializer(schema=JSON_ORDER, schema_registry_client=client)(_json_values()[0], _ctx("j"))
    assert sq.JSONDeserializer(schema=JSON_ORDER, schema_registry_client=client)(js, _ctx("j")) == _json_values()[0]
    pb = sq.ProtobufSerializer(Order, schema_registry_client=client)(_orders()[0], _ctx("p"))
    assert sq.ProtobufDeserializer(Order, to_dict=False, schema_registry_client=client)(pb, _ctx("p")) == _orders()[0]


def test_without_a_registry_they_are_quixstreams_schemaless_serializers() -> None:
    ctx = _ctx()
    value = _avro_values()[2]
    raw = quix_avro.AvroSerializer(AVRO_ORDER)(value, ctx)
    assert sq.AvroSerializer(AVRO_ORDER)(value, ctx) == raw
    assert sq.AvroDeserializer(AVRO_ORDER)(raw, ctx) == value
    order = _orders()[3]
    assert sq.ProtobufSerializer(Order)(order, ctx) == order.SerializeToString()
    assert sq.ProtobufDeserializer(Order, to_dict=False)(order.SerializeToString(), ctx) == order
    assert sq.JSONSerializer()(_json_values()[1], ctx) == quix_json.JSONSerializer()(_json_values()[1], ctx)
    assert sq.JSONDeserializer()(b'{"a": [1]}', ctx) == {"a": [1]}


# -- errors: quixstreams' types, serdes' typed cause --------------------------------------------------


def _both_raise(ours: Any, theirs: Any, value: Any, ctx: SerializationContext) -> SerializationError:
    with pytest.raises(SerializationError):
        theirs(value, ctx)
    with pytest.raises(SerializationError) as ei:
        ours(value, ctx)
    return ei.value


def test_undecodable_bytes_are_serialization_errors_with_the_serdes_cause(mock_registry: MockRegistry) -> None:
    cfg = _config(mock_registry.url)
    ctx = _ctx("bad-topic")
    pairs = [
        (sq.AvroDeserializer(schema_registry_client_config=cfg), quix_avro.AvroDeserializer(schema_registry_client_config=cfg)),
        (sq.JSONDeserializer(schema=JSON_ORDER, schema_registry_client_config=cfg),
         quix_json.JSONDeserializer(schema=JSON_ORDER, schema_registry_client_config=cfg)),
        (sq.ProtobufDeserializer(Order, schema_registry_client_config=cfg),
         quix_protobuf.ProtobufDeserializer(Order, schema_registry_client_config=cfg)),
    ]
    for ours, theirs in pairs:
        err = _both_raise(ours, theirs, b"\x07not a frame", ctx)
        assert isinstance(err.__cause__, serdes.InvalidMagicByteError), type(ours)
        assert "bad-topic" in str(err)
    # a frame naming a schema id the registry does not have
    for ours, theirs in pairs[:2]:
        err = _both_raise(ours, theirs, b"\x00\x00\x00\x03\xe7{}", ctx)
        assert isinstance(err.__cause__, serdes.UnknownSchemaError)
        assert "999" in str(err)


def test_values_the_schema_refuses_are_serialization_errors(mock_registry: MockRegistry) -> None:
    cfg = _config(mock_registry.url)
    ctx = _ctx()
    ours = sq.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg)
    theirs = quix_avro.AvroSerializer(AVRO_ORDER, schema_registry_client_config=cfg)
    missing = {k: v for k, v in _avro_values()[0].items() if k != "amount_cents"}
    err = _both_raise(ours, theirs, missing, ctx)
    assert isinstance(err.__cause__, serdes.ValidationError)
    assert "amount_cents" in str(err)
    # a value of the wrong type or out of range: quixstreams lets fastavro's TypeError / OverflowError
    # through, serdes.quix raises the SerializationError a handler of bad records expects
    for bad, raw in ((dict(_avro_values()[0], amount_cents="twelve"), TypeError),
                     (dict(_avro_values()[0], amount_cents=2**70), OverflowError)):
        with pytest.raises(raw):
            theirs(bad, ctx)
        with pytest.raises(SerializationError) as ei:
            ours(bad, ctx)
        assert isinstance(ei.value.__cause__, serdes.ValidationError)
        assert "amount_cents" in str(ei.value)
    bad_json = {"order_id": "x", "amount_cents": -1}
    err = _both_raise(sq.JSONSerializer(schema=JSON_ORDER, schema_registry_client_config=cfg),
                      quix_json.JSONSerializer(schema=JSON_ORDER, schema_registry_client_config=cfg), bad_json, ctx)
    assert isinstance(err.__cause__, serdes.ValidationError)
    assert "amount_cents" in str(err)


def test_protobuf_dict_errors_are_quixstreams_messages(mock_registry: MockRegistry) -> None:
    cfg = _config(mock_registry.url)
    ours = sq.ProtobufSerializer(Order, schema_registry_client_config=cfg)
    theirs = quix_protobuf.ProtobufSerializer(Order, schema_registry_client_config=cfg)
    for bad in ({"order_id": "x", "no_such_field": 1}, 42):
        with pytest.raises(SerializationError) as their_err:
            theirs(bad, _ctx())
        with pytest.raises(SerializationError) as our_err:
            ours(bad, _ctx())
        assert str(our_err.value) == str(their_err.value)
    # ignore_unknown_fields is honoured as in quixstreams
    lenient = sq.ProtobufSerializer(Order, ignore_unknown_fields=True, schema_registry_client_config=cfg)
    frame = lenient({"order_id": "x", "no_such_field": 1}, _ctx())
    assert sq.ProtobufDeserializer(Order, to_dict=False, schema_registry_client_config=cfg)(frame, _ctx()) == \
        Order(order_id="x")


def test_constructor_checks_mirror_quixstreams(mock_registry: MockRegistry) -> None:
    conf = SchemaRegistrySerializationConfig()
    for ours, theirs in (
        (lambda: sq.AvroSerializer(AVRO_ORDER, schema_registry_serialization_config=conf),
         lambda: quix_avro.AvroSerializer(AVRO_ORDER, schema_registry_serialization_config=conf)),
        (lambda: sq.AvroDeserializer(), lambda: quix_avro.AvroDeserializer()),
        (lambda: sq.JSONSerializer(schema_registry_client_config=_config(mock_registry.url)),
         lambda: quix_json.JSONSerializer(schema_registry_client_config=_config(mock_registry.url))),
        (lambda: sq.JSONDeserializer(schema_registry_client_config=_config(mock_registry.url)),
         lambda: quix_json.JSONDeserializer(schema_registry_client_config=_config(mock_registry.url))),
    ):
        with pytest.raises(ValueError) as their_err:
            theirs()
        with pytest.raises(ValueError) as our_err:
            ours()
        assert str(our_err.value) == str(their_err.value)


@pytest.mark.parametrize("name", sq.__all__[:6])
def test_same_constructor_as_quixstreams(name: str) -> None:
    import quixstreams.models.serializers as quix

    ours, theirs = getattr(sq, name), getattr(quix, name, None) or getattr(quix_avro, name, None) \
        or getattr(quix_protobuf, name)
    assert issubclass(ours, theirs)
    our_params = list(inspect.signature(ours.__init__).parameters.values())
    their_params = list(inspect.signature(theirs.__init__).parameters.values())
    # quixstreams' parameters, in order, with the same defaults; then serdes' keyword-only client
    assert [(p.name, p.default, p.kind) for p in our_params[:-1]] == [(p.name, p.default, p.kind) for p in their_params]
    assert our_params[-1].name == "schema_registry_client" and our_params[-1].kind is inspect.Parameter.KEYWORD_ONLY


def test_import_without_quixstreams_says_how_to_install() -> None:
    code = "import sys; sys.modules['quixstreams'] = None\nimport serdes.quix"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "pip install serdes[quix]" in proc.stderr


@pytest.mark.parametrize("name", ["JSONSerializer", "JSONDeserializer"])
def test_json_with_a_registry_and_no_schema_is_refused_like_quixstreams(mock_registry: MockRegistry, name: str) -> None:
    cfg = _config(mock_registry.url)
    with pytest.raises(ValueError) as theirs:
        getattr(quix_json, name)(schema_registry_client_config=cfg)
    with pytest.raises(ValueError) as ours:
        getattr(sq, name)(schema_registry_client_config=cfg)
    assert str(ours.value) == str(theirs.value)
