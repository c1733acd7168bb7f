"""serdes.avro serializer/deserializer against confluent-kafka's, on the mock registry.

Every test runs on both implementations (the ``implementation`` fixture, tests/support/implementations.py):
the serializers and deserializers built in a test are all native or all pure Python."""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    dual_schema_id_deserializer,
    header_schema_id_serializer,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer as CDeser
from confluent_kafka.schema_registry.avro import AvroSerializer as CSer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import serdes
from serdes.avro import AvroDeserializer, AvroSerializer

from tests.support.avro_samples import COMPLEX, STANDARD, records
from tests.support.implementations import Implementation, is_native

_UTC = datetime.timezone.utc


pytestmark = pytest.mark.usefixtures("implementation")


@pytest.fixture
def client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://avro-{uuid.uuid4().hex}"})


def _ctx(topic: str = "t", headers: Any = None, field: str = MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field, headers)


STD_REC = records()["standard"][1]
CPX_REC = records()["complex"][1]


# -- round trips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("schema,rec", [(STANDARD, STD_REC), (COMPLEX, CPX_REC)], ids=["standard", "complex"])
def test_prefix_round_trip_both_directions(client: Any, schema: dict, rec: dict) -> None:
    s = json.dumps(schema)
    ours_ser, c_ser = AvroSerializer(client, s), CSer(client, s)
    ours_de, c_de = AvroDeserializer(client), CDeser(client)
    for _ in range(3):  # first call (confluent path) and cached path
        ours_bytes = ours_ser(rec, _ctx())
        c_bytes = c_ser(rec, _ctx())
        assert ours_bytes == c_bytes
        assert ours_bytes[0] == 0
        assert ours_de(c_bytes, _ctx()) == rec
        assert c_de(ours_bytes, _ctx()) == rec
    assert len(ours_de._decoders) == 1


def test_guid_header_framing_round_trip(client: Any) -> None:
    s = json.dumps(STANDARD)
    conf = {"schema.id.serializer": header_schema_id_serializer}
    ours_ser, c_ser = AvroSerializer(client, s, conf=conf), CSer(client, s, conf=conf)
    for _ in range(2):
        h1: list = []
        h2: list = []
        b1 = ours_ser(STD_REC, _ctx(headers=h1))
        b2 = c_ser(STD_REC, _ctx(headers=h2))
        assert b1 == b2 and h1 == h2
        assert h1[0][0] == "__value_schema_id" and h1[0][1][0] == 1  # magic 1 + GUID
        # dual_schema_id_deserializer (the default) reads the header
        assert AvroDeserializer(client)(b1, _ctx(headers=h1)) == STD_REC
        assert CDeser(client, conf={"schema.id.deserializer": dual_schema_id_deserializer})(b1, _ctx(headers=h1)) == STD_REC


def test_guid_prefix_frame_decodes(client: Any) -> None:
    s = json.dumps(STANDARD)
    h: list = []
    CSer(client, s, conf={"schema.id.serializer": header_schema_id_serializer})(STD_REC, _ctx(headers=h))
    payload = AvroSerializer(client, s)(STD_REC, _ctx())[5:]
    framed = h[0][1] + payload  # magic 1 + GUID prefix framing
    de = AvroDeserializer(client)
    assert de(framed, _ctx()) == CDeser(client)(framed, _ctx()) == STD_REC
    assert len(framed[:17]) == 17 and framed[:17] in de._decoders


def test_from_dict_to_dict(client: Any) -> None:
    class Obj:
        def __init__(self, d: dict) -> None:
            self.d = d

    s = json.dumps(STANDARD)
    ser = AvroSerializer(client, s, to_dict=lambda o, ctx: o.d)
    de = AvroDeserializer(client, from_dict=lambda d, ctx: Obj(d))
    for _ in range(2):
        out = de(ser(Obj(STD_REC), _ctx()), _ctx())
        assert isinstance(out, Obj) and out.d == STD_REC


def test_return_record_name(client: Any) -> None:
    schema = {"type": "record", "name": "W", "namespace": "n", "fields": [
        {"name": "u", "type": ["null", {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}]}]}
    s = json.dumps(schema)
    data = CSer(client, s)({"u": {"x": 1}}, _ctx())
    assert AvroDeserializer(client, return_record_name=True)(data, _ctx()) == \
        CDeser(client, return_record_name=True)(data, _ctx()) == {"u": ("n.A", {"x": 1})}


def test_bytes_schema_raw_payload(client: Any) -> None:
    ser, cser = AvroSerializer(client, '"bytes"'), CSer(client, '"bytes"')
    for _ in range(2):
        assert ser(b"\x01\x02", _ctx()) == cser(b"\x01\x02", _ctx())
        assert AvroDeserializer(client)(ser(b"\x01\x02", _ctx()), _ctx()) == b"\x01\x02"


# -- evolution -------------------------------------------------------------------------------------

V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": "string"},
    {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "PURPLE"]}},
    {"name": "gone", "type": "string"}]}
V2 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "OTHER"], "default": "OTHER"}},
    {"name": "email", "type": ["null", "string"], "default": None}]}


def test_evolution_reader_schema(client: Any) -> None:
    data = AvroSerializer(client, json.dumps(V1))({"id": 1, "name": "a", "color": "PURPLE", "gone": "x"}, _ctx())
    ours = AvroDeserializer(client, json.dumps(V2))(data, _ctx())
    assert ours == CDeser(client, json.dumps(V2))(data, _ctx())
    assert ours == {"id": 1, "name": "a", "color": "OTHER", "email": None}


def test_incompatible_reader_is_schema_mismatch_once(client: Any) -> None:
    bad = {"type": "record", "name": "User", "namespace": "ex", "fields": [
        {"name": "id", "type": "int"}, {"name": "required_new", "type": "string"}]}
    data = AvroSerializer(client, json.dumps(V1))({"id": 1, "name": "a", "color": "RED", "gone": "x"}, _ctx())
    de = AvroDeserializer(client, json.dumps(bad))
    calls = []
    orig = de._build_decoder
    de._build_decoder = lambda *a: calls.append(1) or orig(*a)  # type: ignore[method-assign]
    for _ in range(3):
        with pytest.raises(serdes.SchemaMismatchError, match="required_new") as ei:
            de(data, _ctx("topic-x"))
        assert ei.value.location.topic == "topic-x"
    assert calls == [1]  # resolved once, not per record


def test_use_latest_version_reader(client: Any) -> None:
    subject = "ev-value"
    client.register_schema(subject, Schema(json.dumps(V1), "AVRO"))
    data = AvroSerializer(client, json.dumps(V1), conf={"auto.register.schemas": False})(
        {"id": 1, "name": "a", "color": "GREEN", "gone": "x"}, _ctx("ev"))
    v2_compat = dict(V2, fields=[f for f in V2["fields"]])
    client.register_schema(subject, Schema(json.dumps(v2_compat), "AVRO"))
    de = AvroDeserializer(client, conf={"use.latest.version": True})
    got = de(data, _ctx("ev"))
    assert got == CDeser(client, conf={"use.latest.version": True})(data, _ctx("ev"))
    assert got == {"id": 1, "name": "a", "color": "GREEN", "email": None}


def test_serializer_use_latest_and_use_schema_id(client: Any) -> None:
    subject = "lat-value"
    sid1 = client.register_schema(subject, Schema(json.dumps(V1), "AVRO"))
    client.register_schema(subject, Schema(json.dumps(V2), "AVRO"))
    rec2 = {"id": 5, "name": "b", "color": "OTHER", "email": "e"}
    ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    cser = CSer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    for _ in range(2):
        assert ser(rec2, _ctx("lat")) == cser(rec2, _ctx("lat"))
    rec1 = {"id": 5, "name": "b", "color": "RED", "gone": "g"}
    ser1 = AvroSerializer(client, json.dumps(V1), conf={"auto.register.schemas": False, "use.schema.id": sid1})
    for _ in range(2):
        out = ser1(rec1, _ctx("lat"))
        assert int.from_bytes(out[1:5], "big") == sid1
        assert AvroDeserializer(client)(out, _ctx("lat")) == rec1


def test_preregistered_schema_without_auto_register(client: Any) -> None:
    s = json.dumps(STANDARD)
    ser = AvroSerializer(client, s, conf={"auto.register.schemas": False})
    with pytest.raises(serdes.UnknownSchemaError):
        ser(STD_REC, _ctx("prereg"))  # not registered yet
    sid = client.register_schema("prereg-value", Schema(s, "AVRO"))
    ser = AvroSerializer(client, s, conf={"auto.register.schemas": False})
    out = ser(STD_REC, _ctx("prereg"))
    assert int.from_bytes(out[1:5], "big") == sid


@pytest.mark.parametrize("strategy,subject", [
    (topic_subject_name_strategy, "strat-value"),
    (record_subject_name_strategy, "bench.Standard"),
    (topic_record_subject_name_strategy, "strat-bench.Standard"),
    (None, "strat-value"),  # default ASSOCIATED falls back to the topic strategy on the mock
])
def test_subject_name_strategies(client: Any, strategy: Any, subject: str) -> None:
    conf = {"subject.name.strategy": strategy} if strategy is not None else {}
    ser = AvroSerializer(client, json.dumps(STANDARD), conf=conf)
    out = ser(STD_REC, _ctx("strat"))
    assert ser(STD_REC, _ctx("strat")) == out
    assert client.get_latest_version(subject).schema_id == int.from_bytes(out[1:5], "big")
    de = AvroDeserializer(client, conf={"subject.name.strategy": strategy, "use.latest.version": True}
                          if strategy is not None else {"use.latest.version": True})
    assert de(out, _ctx("strat")) == STD_REC


# -- references ------------------------------------------------------------------------------------

def test_named_type_reference(client: Any) -> None:
    addr = {"type": "record", "name": "Address", "namespace": "ex", "fields": [{"name": "city", "type": "string"}]}
    client.register_schema("addr", Schema(json.dumps(addr), "AVRO"))
    version = client.get_latest_version("addr").version
    person = {"type": "record", "name": "Person", "namespace": "ex", "fields": [
        {"name": "name", "type": "string"}, {"name": "home", "type": "ex.Address"},
        {"name": "work", "type": ["null", "ex.Address"], "default": None}]}
    schema = Schema(json.dumps(person), "AVRO", references=[SchemaReference("ex.Address", "addr", version)])
    rec = {"name": "n", "home": {"city": "Oslo"}, "work": {"city": "Bergen"}}
    ours, theirs = AvroSerializer(client, schema), CSer(client, schema)
    for _ in range(2):
        b = ours(rec, _ctx("refs"))
        assert b == theirs(rec, _ctx("refs"))
        assert AvroDeserializer(client)(b, _ctx("refs")) == CDeser(client)(b, _ctx("refs")) == rec
        assert AvroDeserializer(client, schema)(b, _ctx("refs")) == rec


# -- validation ------------------------------------------------------------------------------------

def test_wrong_type_is_validation_error_naming_field(client: Any) -> None:
    ser = AvroSerializer(client, json.dumps(COMPLEX))
    ser(CPX_REC, _ctx())
    bad = copy.deepcopy(CPX_REC)
    bad["address"]["zip"] = "12345"
    with pytest.raises(serdes.ValidationError, match=r"(?i)address\.zip") as ei:
        ser(bad, _ctx("vt"))
    assert ei.value.location.topic == "vt"
    bad = copy.deepcopy(CPX_REC)
    bad["items"][1]["qty"] = 1.5  # fastavro would write 1
    with pytest.raises(serdes.ValidationError, match=r"qty"):
        ser(bad, _ctx())


def test_tuple_notation_union_goes_to_fastavro(client: Any) -> None:
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": ["null", {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}]}]}
    ser, cser = AvroSerializer(client, json.dumps(schema)), CSer(client, json.dumps(schema))
    ser({"u": None}, _ctx())
    assert ser({"u": ("A", {"x": 3})}, _ctx()) == cser({"u": ("A", {"x": 3})}, _ctx())


# -- garbage ---------------------------------------------------------------------------------------

_GARBAGE_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def _only_serdes_errors(de: Any, data: bytes) -> None:
    try:
        de(data, _ctx())
    except serdes.SerdesError:
        pass


@pytest.fixture
def garbage_env(implementation: Implementation) -> Any:
    # once per test, not per example: the frames and their decoders, built with ``implementation``
    c = SchemaRegistryClient.new_client({"url": f"mock://avro-garbage-{uuid.uuid4().hex}"})
    frames = [AvroSerializer(c, json.dumps(s))(r, _ctx()) for s, r in ((STANDARD, STD_REC), (COMPLEX, CPX_REC))]
    de = AvroDeserializer(c)
    for f in frames:  # decoders are built on the first record: build both now
        de(f, _ctx())
    return de, frames


@_GARBAGE_SETTINGS
@given(st.binary(max_size=64))
def test_random_bytes_only_serdes_errors(garbage_env: Any, data: bytes) -> None:
    de, frames = garbage_env
    _only_serdes_errors(de, data)
    _only_serdes_errors(de, frames[0][:5] + data)
    _only_serdes_errors(de, frames[1][:5] + data)


@_GARBAGE_SETTINGS
@given(st.data())
def test_truncated_and_flipped_frames(garbage_env: Any, data: Any) -> None:
    de, frames = garbage_env
    frame = data.draw(st.sampled_from(frames))
    cut = data.draw(st.integers(0, len(frame) - 1))
    with pytest.raises(serdes.SerdesError):
        de(frame[:cut], _ctx())  # a truncated frame never returns a value
    with pytest.raises(serdes.CorruptPayloadError):
        de(frame + b"\x00", _ctx())  # trailing bytes
    i = data.draw(st.integers(5, len(frame) - 1))
    flipped = frame[:i] + bytes([frame[i] ^ data.draw(st.integers(1, 255))]) + frame[i + 1:]
    _only_serdes_errors(de, flipped)


def test_unknown_schema_id_and_magic(client: Any) -> None:
    de = AvroDeserializer(client)
    with pytest.raises(serdes.UnknownSchemaError):
        de(b"\x00\x00\x00\x03\xe7\x02", _ctx())
    with pytest.raises(serdes.InvalidMagicByteError):
        de(b"\x07\x00\x00\x00\x01\x02", _ctx())


# -- batch -----------------------------------------------------------------------------------------

def test_deserialize_batch(client: Any) -> None:
    ser = AvroSerializer(client, json.dumps(STANDARD))
    recs = [dict(STD_REC, count=i) for i in range(50)]
    frames = [ser(r, _ctx()) for r in recs] + [None]
    assert AvroDeserializer(client).deserialize_batch(frames, _ctx()) == recs + [None]
    assert ser.serialize_batch(recs, _ctx()) == frames[:-1]


def test_deserializer_builds_the_decoder_of_the_active_implementation(client: Any, implementation: Implementation) -> None:
    frame = AvroSerializer(client, json.dumps(STANDARD))(STD_REC, _ctx())
    de = AvroDeserializer(client)
    assert de(frame, _ctx()) == STD_REC
    (dec,) = de._decoders.values()
    assert is_native(dec) == (implementation.name == "native")
