"""serdes/_confluent.py: confluent-kafka's private attributes are read once, at construction, and a
missing one fails there, naming it and the installed confluent-kafka version."""

from __future__ import annotations

import dataclasses
import json
import pickle
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry import avro as confluent_avro
from confluent_kafka.schema_registry import json_schema as confluent_json
from confluent_kafka.schema_registry import protobuf as confluent_protobuf
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes import _confluent
from serdes._confluent import FORMAT_ATTRIBUTES, ConfluentAPIError, confluent_version
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.demo import orders_pb2
from serdes.json import JSONDeserializer, JSONSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

AVRO = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "name", "type": "string"}]})
JSON = json.dumps({"type": "object", "properties": {"name": {"type": "string"}}})


def _client():
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})


# kind -> (confluent-kafka class whose construction sets the attributes, serdes class, constructor)
CLASSES = {
    "avro.serializer": (confluent_avro.AvroSerializer, lambda c, conf=None: AvroSerializer(c, AVRO, conf=conf)),
    "avro.deserializer": (confluent_avro.AvroDeserializer, lambda c, conf=None: AvroDeserializer(c, AVRO, conf=conf)),
    "json.serializer": (confluent_json.JSONSerializer, lambda c, conf=None: JSONSerializer(JSON, c, conf=conf)),
    "json.deserializer": (confluent_json.JSONDeserializer, lambda c, conf=None: JSONDeserializer(JSON, conf=conf, schema_registry_client=c)),
    "protobuf.serializer": (
        confluent_protobuf.ProtobufSerializer,
        lambda c, conf=None: ProtobufSerializer(orders_pb2.Order, c, {"use.deprecated.format": False, **(conf or {})}),
    ),
    "protobuf.deserializer": (
        confluent_protobuf.ProtobufDeserializer,
        lambda c, conf=None: ProtobufDeserializer(orders_pb2.Order, {"use.deprecated.format": False, **(conf or {})}, c),
    ),
}

COMMON = ("_use_latest_version", "_use_latest_with_metadata", "_subject_name_func", "_strategy_accepts_client",
          "_subject_name_conf", "_registry", "_get_reader_schema")
CASES = [
    (kind, attr) for kind in CLASSES
    for attr in COMMON + FORMAT_ATTRIBUTES[kind] + (("_validation_rules_execution",) if kind.endswith(".serializer") else ())
]


def _drop_after_init(monkeypatch, confluent_cls, attr):
    """Simulate a confluent-kafka release without ``attr``: instance attributes are deleted after
    its constructor ran, methods removed from the class that defines them."""
    for klass in confluent_cls.__mro__:
        if callable(vars(klass).get(attr)):  # a method (not a __slots__ member)
            monkeypatch.delattr(klass, attr)
            return
    original = confluent_cls.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        delattr(self, attr)

    monkeypatch.setattr(confluent_cls, "__init__", init)


@pytest.mark.parametrize("kind,attr", CASES, ids=[f"{k}-{a}" for k, a in CASES])
def test_missing_attribute_fails_at_construction(monkeypatch, kind, attr):
    confluent_cls, construct = CLASSES[kind]
    construct(_client())  # builds as it is
    _drop_after_init(monkeypatch, confluent_cls, attr)
    with pytest.raises(ConfluentAPIError) as info:
        construct(_client())
    err = info.value
    assert attr in str(err)
    assert err.attribute == attr
    assert err.version == confluent_version()
    assert repr(attr) in str(err) and confluent_version() in str(err)
    assert isinstance(err, serdes.SerdesError)


def test_versioned_attribute_falls_back_only_on_older_releases(monkeypatch):
    # a (ctx, record_name) strategy, as every strategy was before confluent-kafka 2.14
    conf = {"subject.name.strategy": topic_subject_name_strategy}
    _drop_after_init(monkeypatch, confluent_avro.AvroSerializer, "_strategy_accepts_client")
    with pytest.raises(ConfluentAPIError, match="_strategy_accepts_client"):
        AvroSerializer(_client(), AVRO, conf=conf)
    monkeypatch.setattr(_confluent, "_VERSION", (2, 13, 2))
    ser = AvroSerializer(_client(), AVRO, conf=conf)
    assert ser._conf.strategy_accepts_client is False
    data = ser({"name": "a"}, SerializationContext("users", MessageField.VALUE))
    assert data[0] == 0


@pytest.mark.parametrize("kind", list(CLASSES))
def test_snapshot_follows_the_conf(kind):
    _, construct = CLASSES[kind]
    plain = construct(_client())._conf
    assert plain.kind == kind and not plain.use_latest_version and not plain.subject_keyed
    conf = {"use.latest.version": True}
    if kind.endswith("serializer") and not kind.endswith("deserializer"):
        conf["auto.register.schemas"] = False
    latest = construct(_client(), conf)._conf
    assert latest.use_latest_version and latest.subject_keyed
    if kind.endswith(".serializer"):
        assert plain.auto_register is True and latest.auto_register is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        latest.use_latest_version = False  # type: ignore[misc]


def test_error_pickles_with_its_attributes():
    err = ConfluentAPIError("_use_latest_version", "AvroSerializer", "9.9.9")
    back = pickle.loads(pickle.dumps(err))
    assert (back.attribute, back.owner, back.version, str(back)) == (err.attribute, err.owner, err.version, str(err))


def test_private_modules_resolve():
    assert _confluent.httpx_module().TransportError is not None
    assert callable(_confluent.json_dumps()) and callable(_confluent.json_loads())
    with pytest.raises(ValueError):
        _confluent.guard_external_uri("http://127.0.0.1/schema.json")  # a private address is refused
