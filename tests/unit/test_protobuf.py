"""serdes.protobuf against confluent-kafka's Protobuf serdes on a mock:// registry."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    SchemaReference,
    header_schema_id_serializer,
    prefix_schema_id_deserializer,
)
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from google.protobuf import descriptor_pb2, json_format, timestamp_pb2
from serdes_test import common_pb2, legacy_pb2, order_pb2

from serdes import (
    CorruptPayloadError,
    InvalidMagicByteError,
    SchemaMismatchError,
    SerdesError,
    TruncatedFrameError,
    UnknownSchemaError,
    ValidationError,
)
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer, WrongMessageTypeError
from serdes.protobuf._schemas import index_path, schema_to_file_proto
from serdes.protobuf._todict import is_repeated

# the native dispatcher and the pure-Python one, same cases (tests/support/implementations.py)
pytestmark = pytest.mark.usefixtures("implementation")

TOPIC = "orders"
CTX = SerializationContext(TOPIC, MessageField.VALUE)


@pytest.fixture
def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://pb-{uuid.uuid4().hex}"})


def order(i: int = 1) -> order_pb2.Order:
    m = order_pb2.Order(
        id=10_000_000_000 + i,
        customer=f"customer-{i}",
        amount=12.5 * i,
        paid=bool(i % 2),
        level=common_pb2.HIGH,
        tags=["a", "b", str(i)],
        counts={"x": i, "y": -i},
        iban=f"DE{i:020d}",
        blob=bytes(range(i % 7)),
        priority=-i,
    )
    m.address.city = "Paris"
    m.address.zip = "75001"
    m.created.seconds = 1_700_000_000 + i
    m.created.nanos = 123
    m.lines.add(sku="sku-1", qty=3)
    m.lines.add(sku="sku-2", qty=i)
    return m


def reason() -> order_pb2.Refund.Reason:
    r = order_pb2.Refund.Reason(text="damaged")
    r.detail.code = -42
    r.detail.scores.extend([0.5, 1.5])
    return r


def detail() -> order_pb2.Refund.Reason.Detail:
    return order_pb2.Refund.Reason.Detail(code=7, scores=[2.0])


def ctx_with_headers() -> SerializationContext:
    return SerializationContext(TOPIC, MessageField.VALUE, [])


# -- round trips and interop ------------------------------------------------------------------------


def test_round_trip_and_bytes_identical_to_confluent(client):
    ours = ProtobufSerializer(order_pb2.Order, client)
    theirs = ConfluentSerializer(order_pb2.Order, client)
    for i in range(5):
        m = order(i)
        b = ours(m, CTX)
        assert b == theirs(m, CTX)
        assert b[0] == 0 and b[5] == 0  # magic, id, message indexes [0]
        assert ProtobufDeserializer(order_pb2.Order, None, client)(b, CTX) == m
        assert ConfluentDeserializer(order_pb2.Order, {}, client)(b, CTX) == m


def test_confluent_written_records_decode_with_ours(client):
    theirs = ConfluentSerializer(order_pb2.Order, client)
    ours = ProtobufDeserializer(order_pb2.Order, None, client)
    dyn = ProtobufDeserializer(None, None, client)
    for i in range(3):
        m = order(i)
        b = theirs(m, CTX)
        assert ours(b, CTX) == m
        assert dyn(b, CTX).SerializeToString(deterministic=True) == m.SerializeToString(deterministic=True)


def test_serializer_fast_path_is_used_after_first_record(client):
    ours = ProtobufSerializer(order_pb2.Order, client)
    ours(order(1), CTX)
    assert (TOPIC, MessageField.VALUE) in ours._encoders
    calls = []
    ours._confluent_call = lambda *a: calls.append(a)  # must not be reached any more
    assert ours(order(2), CTX)[6:] == order(2).SerializeToString()
    assert calls == []


def test_references_registered_and_resolved(client):
    ProtobufSerializer(order_pb2.Order, client)(order(), CTX)
    subjects = client.get_subjects()
    assert "serdes_test/common.proto" in subjects  # the user import became a reference subject
    assert not any(s.startswith("google/") for s in subjects)  # skip.known.types=True
    latest = client.get_latest_version(f"{TOPIC}-value")
    assert [r.name for r in latest.schema.references] == ["serdes_test/common.proto"]


def test_references_with_well_known_types_registered(client):
    """skip.known.types=False registers google/protobuf/timestamp.proto as a reference too."""
    b = ProtobufSerializer(order_pb2.Order, client, {"skip.known.types": False})(order(3), CTX)
    assert "google/protobuf/timestamp.proto" in client.get_subjects()
    got = ProtobufDeserializer(None, None, client)(b, CTX)
    assert got.created.seconds == order(3).created.seconds
    assert got.DESCRIPTOR.fields_by_name["created"].message_type.full_name == "google.protobuf.Timestamp"


@pytest.mark.parametrize(
    "make, path",
    [(order, [0]), (lambda: order_pb2.Refund(order_id=9), [1]), (reason, [1, 0]), (detail, [1, 0, 0]),
     (lambda: order_pb2.Flat(id=1, name="n"), [2]), (lambda: order_pb2.Order.Line(sku="x", qty=1), [0, 1])],
)
def test_nested_message_indexes(client, make, path):
    m = make()
    cls = type(m)
    assert index_path(cls.DESCRIPTOR) == path
    topic_ctx = SerializationContext(f"t-{'-'.join(map(str, path))}", MessageField.VALUE)
    b = ProtobufSerializer(cls, client)(m, topic_ctx)
    assert b == ConfluentSerializer(cls, client)(m, topic_ctx)
    if path == [0]:
        assert b[5:6] == b"\x00"
    else:
        # zigzag count then zigzag indexes, like confluent-kafka and the Java serializer
        # (Order.Line is [0, 1]: the synthetic map-entry message CountsEntry is nested type 0)
        assert b[5] == len(path) * 2 and list(b[6:6 + len(path)]) == [i * 2 for i in path]
    assert ProtobufDeserializer(cls, None, client)(b, topic_ctx) == m
    assert ConfluentDeserializer(cls, {}, client)(b, topic_ctx) == m
    dyn = ProtobufDeserializer(None, None, client)(b, topic_ctx)
    assert dyn.DESCRIPTOR.full_name == cls.DESCRIPTOR.full_name
    assert dyn.SerializeToString(deterministic=True) == m.SerializeToString(deterministic=True)


def test_dynamic_decoding_matches_generated(client):
    b = ProtobufSerializer(order_pb2.Order, client)(order(4), CTX)
    gen = ProtobufDeserializer(order_pb2.Order, None, client)(b, CTX)
    dyn = ProtobufDeserializer(None, None, client)(b, CTX)
    assert type(dyn) is not order_pb2.Order  # built from the registry, not the generated module
    assert json_format.MessageToDict(dyn) == json_format.MessageToDict(gen)
    def plain(msg, f):
        v = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            return dict(v)
        if is_repeated(f):
            return [x.SerializeToString() if f.message_type else x for x in v]
        if f.message_type is not None:
            return v.SerializeToString()
        return v

    for f in order_pb2.Order.DESCRIPTOR.fields:
        assert plain(dyn, dyn.DESCRIPTOR.fields_by_name[f.name]) == plain(gen, f), f.name
    assert dyn.address.city == "Paris" and dyn.created.nanos == 123 and dyn.WhichOneof("payment") == "iban"


def test_dict_output(client):
    b = ProtobufSerializer(order_pb2.Order, client)(order(2), CTX)
    for d in (ProtobufDeserializer(None, None, client, output="dict"),
              ProtobufDeserializer(order_pb2.Order, None, client, output="dict")):
        got = d(b, CTX)
        assert got["id"] == 10_000_000_002 and isinstance(got["id"], int)
        assert got["level"] == "HIGH"
        assert got["counts"] == {"x": 2, "y": -2}
        assert got["address"] == {"street": "", "city": "Paris", "zip": "75001"}
        assert got["created"] == {"seconds": 1_700_000_002, "nanos": 123}
        assert got["card"] is None and got["iban"] == "DE" + "2".zfill(20)
        assert got["priority"] == -2 and got["blob"] == bytes(range(2))
        assert got["lines"][1] == {"sku": "sku-2", "qty": 2}
    with pytest.raises(ValueError):
        ProtobufDeserializer(None, None, client, output="json")


def test_header_framing_interop(client):
    conf = {"schema.id.serializer": header_schema_id_serializer}
    ours = ProtobufSerializer(order_pb2.Refund.Reason, client, conf)
    theirs = ConfluentSerializer(order_pb2.Refund.Reason, client, conf)
    m = reason()
    for _ in range(2):  # first call (via confluent) and cached path
        c1, c2 = ctx_with_headers(), ctx_with_headers()
        b1, b2 = ours(m, c1), theirs(m, c2)
        assert b1 == b2 == m.SerializeToString()
        assert c1.headers == c2.headers
        (name, value), = c1.headers
        assert name == "__value_schema_id" and value[0] == 1  # GUID framing, then indexes [1, 0]
        assert value[17:] == b"\x04\x02\x00"
        assert ProtobufDeserializer(order_pb2.Refund.Reason, None, client)(b1, c1) == m
        assert ConfluentDeserializer(order_pb2.Refund.Reason, {}, client)(b1, c1) == m
        dyn = ProtobufDeserializer(None, None, client)(b1, c1)
        assert dyn.DESCRIPTOR.full_name == "serdes.test.Refund.Reason" and dyn.detail.code == -42


def test_batch_api(client):
    ser = ProtobufSerializer(order_pb2.Order, client)
    msgs = [order(i) for i in range(20)] + [None]
    out = ser.serialize_batch(msgs, CTX)
    assert out[-1] is None and len(out) == 21
    assert out[:-1] == [ConfluentSerializer(order_pb2.Order, client)(m, CTX) for m in msgs[:-1]]
    back = ProtobufDeserializer(order_pb2.Order, None, client).deserialize_batch(out, CTX)
    assert back == msgs
    dyn = ProtobufDeserializer(None, None, client).deserialize_batch(out[:-1], CTX)
    assert [d.id for d in dyn] == [m.id for m in msgs[:-1]]


def test_none_passes_through(client):
    assert ProtobufSerializer(order_pb2.Order, client)(None, CTX) is None
    assert ProtobufDeserializer(order_pb2.Order, None, client)(None, CTX) is None


# -- configuration ------------------------------------------------------------------------------


def test_conf_semantics_match_confluent(client):
    for cls in (ProtobufSerializer, ConfluentSerializer):
        with pytest.raises(ValueError, match="no longer supported"):
            cls(order_pb2.Order, client, {"use.deprecated.format": True})
        with pytest.raises(ValueError, match="Unrecognized"):
            cls(order_pb2.Order, client, {"output": "dict"})
    for cls in (ProtobufDeserializer, ConfluentDeserializer):
        with pytest.raises(ValueError, match="no longer supported"):
            cls(order_pb2.Order, {"use.deprecated.format": True}, client)
    with pytest.raises(ValueError, match="no longer supported"):
        ProtobufDeserializer(None, {"use.deprecated.format": True}, client)
    # confluent-kafka's deserializer (unlike its serializer) ignores unknown keys; so do we
    ConfluentDeserializer(order_pb2.Order, {"bogus.key": 1}, client)
    ProtobufDeserializer(order_pb2.Order, {"bogus.key": 1}, client)
    with pytest.raises(ValueError, match="schema_registry_client"):
        ProtobufDeserializer(None, None, None)


def test_wrong_message_type(client):
    ser = ProtobufSerializer(order_pb2.Order, client)
    with pytest.raises(WrongMessageTypeError) as e:
        ser(order_pb2.Flat(), CTX)  # first record
    assert isinstance(e.value, ValueError) and isinstance(e.value, SerdesError)
    ser(order(), CTX)
    with pytest.raises(ValueError):
        ser(order_pb2.Flat(), CTX)  # cached path


def test_proto2_required_field_missing_is_validation_error(client):
    ser = ProtobufSerializer(legacy_pb2.Legacy, client)
    b = ser(legacy_pb2.Legacy(id=1), CTX)
    got = ProtobufDeserializer(None, None, client)(b, CTX)
    assert got.id == 1 and got.name == "anon" and got.kind == 1  # proto2 defaults survive dynamic decoding
    with pytest.raises(ValidationError):
        ser(legacy_pb2.Legacy(name="no id"), CTX)


# -- user-supplied descriptors -------------------------------------------------------------------


def _descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    fds = descriptor_pb2.FileDescriptorSet()
    for mod in (timestamp_pb2, common_pb2, order_pb2):
        mod.DESCRIPTOR.CopyToProto(fds.file.add())
    return fds


def test_descriptor_set_and_message_descriptor(client):
    b_order = ProtobufSerializer(order_pb2.Order, client)(order(5), CTX)
    ctx2 = SerializationContext("reasons", MessageField.VALUE)
    b_reason = ProtobufSerializer(order_pb2.Refund.Reason, client)(reason(), ctx2)
    fds = _descriptor_set()
    by_name = ProtobufDeserializer(None, None, client, descriptor_set=fds.SerializeToString())
    assert by_name(b_order, CTX).SerializeToString(deterministic=True) == order(5).SerializeToString(deterministic=True)
    assert by_name(b_reason, ctx2).DESCRIPTOR.full_name == "serdes.test.Refund.Reason"
    fixed = ProtobufDeserializer(None, None, client, descriptor_set=fds, message_name="serdes.test.Order")
    assert fixed(b_order, CTX).customer == "customer-5"
    with pytest.raises(ValueError):
        ProtobufDeserializer(None, None, client, descriptor_set=fds, message_name="no.Such")
    md = ProtobufDeserializer(None, None, client, message_descriptor=order_pb2.Refund.Reason.DESCRIPTOR)
    assert md(b_reason, ctx2).detail.code == -42


# -- registry schema shapes (Apicurio returns what was registered) ----------------------------------


def _register_raw(client, subject: str, schema_str: str, refs=()) -> int:
    return client.register_schema(subject, Schema(schema_str, "PROTOBUF", list(refs)))


def _frame(sid: int, payload: bytes, indexes: bytes = b"\x00") -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + indexes + payload


def test_raw_descriptor_string_schema(client):
    """Apicurio returns format=serialized of a text-registered schema as the raw bytes in a JSON string."""
    raw = order_pb2.Refund.Reason.Detail.DESCRIPTOR.file.serialized_pb
    fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
    solo = descriptor_pb2.FileDescriptorProto(name="solo.proto", package="p", syntax="proto3")
    solo.message_type.add().CopyFrom(fdp.message_type[2])  # Flat: scalars only, no imports
    sid = _register_raw(client, "raw-value", solo.SerializeToString().decode("latin-1"))
    m = order_pb2.Flat(id=3, name="x", price=1.5)
    got = ProtobufDeserializer(None, None, client)(_frame(sid, m.SerializeToString()), CTX)
    assert got.DESCRIPTOR.full_name == "p.Flat" and got.id == 3 and got.price == 1.5


def test_proto_source_schema(client):
    pytest.importorskip("grpc_tools")
    common_sid = _register_raw(client, "serdes_test/common.proto",
                               (Path(__file__).parents[1] / "protos/serdes_test/common.proto").read_text())
    del common_sid
    src = (Path(__file__).parents[1] / "protos/serdes_test/order.proto").read_text()
    sid = _register_raw(client, "text-value", src, [SchemaReference("serdes_test/common.proto", "serdes_test/common.proto", 1)])
    m = order(6)
    got = ProtobufDeserializer(None, None, client)(_frame(sid, m.SerializeToString()), CTX)
    assert got.SerializeToString(deterministic=True) == m.SerializeToString(deterministic=True) and got.address.city == "Paris"


def test_schema_to_file_proto_rejects_nonsense():
    with pytest.raises(SerdesError):
        schema_to_file_proto("x.proto", "\x01\x02\x03 not a descriptor \xff")


def test_base64_schema_name_is_import_path():
    s = base64.b64encode(common_pb2.DESCRIPTOR.serialized_pb).decode()
    assert schema_to_file_proto("a/b.proto", s).name == "a/b.proto"
    assert schema_to_file_proto(None, s).name == "serdes_test/common.proto"


# -- errors ---------------------------------------------------------------------------------------


@pytest.fixture
def framed(client):
    b = ProtobufSerializer(order_pb2.Order, client)(order(), CTX)
    return client, b


@pytest.mark.parametrize("dynamic", [False, True])
def test_typed_errors(framed, dynamic):
    client, b = framed
    d = ProtobufDeserializer(None if dynamic else order_pb2.Order, None, client)
    with pytest.raises(InvalidMagicByteError):
        d(b"\x07" + b[1:], CTX)
    with pytest.raises(TruncatedFrameError):
        d(b"", CTX)
    with pytest.raises(TruncatedFrameError):
        d(b[:3], CTX)
    with pytest.raises(TruncatedFrameError):
        d(b[:5], CTX)  # id, but no message-index array
    with pytest.raises(TruncatedFrameError):
        d(b[:5] + b"\x04\x02", CTX)  # says two indexes, has one
    with pytest.raises(UnknownSchemaError):
        d(b"\x00\x00\x00\x7f\xff\x00" + b[6:], CTX)
    with pytest.raises(CorruptPayloadError) as e:
        d(b[:6] + b"\x0a\xff\xff\xff\xff\x0f", CTX)  # field 1 as a length-delimited of 4 GB
    assert e.value.schema_id == int.from_bytes(b[1:5], "big") and e.value.location.topic == TOPIC
    with pytest.raises(CorruptPayloadError, match="out of range"):
        d(b[:5] + b"\x02\x0a" + b[6:], CTX)  # message index [5]: the file has 3 messages
    with pytest.raises(CorruptPayloadError, match="out of range"):
        d(b[:5] + b"\x04\x02\x06" + b[6:], CTX)  # [1, 3]: Refund has one nested message
    assert d(b, CTX).id == order().id  # still fine after the errors


def test_garbage_can_decode():
    """Documented limitation: protobuf has no framing to tell garbage from a message with unknown fields."""
    assert order_pb2.Order.FromString(b"\xf8\x07\x01").ListFields() == []  # field 127 varint: an unknown field


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=64), st.booleans())
def test_garbage_raises_only_serdes_errors(framed, tail, keep_prefix):
    client, b = framed
    data = (b[:5] + tail) if keep_prefix else tail
    for d in (ProtobufDeserializer(order_pb2.Order, None, client), ProtobufDeserializer(None, None, client),
              ProtobufDeserializer(None, None, client, output="dict")):
        try:
            d(data, CTX)
        except SerdesError:
            pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=len(order().SerializeToString()) - 1), st.integers(0, 255))
def test_bit_flips_raise_only_serdes_errors(framed, pos, byte):
    client, b = framed
    data = bytearray(b)
    data[6 + pos] = byte
    for d in (ProtobufDeserializer(order_pb2.Order, None, client), ProtobufDeserializer(None, None, client)):
        try:
            d(bytes(data), CTX)
        except SerdesError:
            pass


def test_custom_schema_id_deserializer_delegates(framed):
    """A user schema.id.deserializer goes through confluent-kafka's path, in dynamic mode too."""
    client, b = framed
    seen = []

    def sid_deser(payload, ctx, schema_id):
        seen.append(1)
        return prefix_schema_id_deserializer(payload, ctx, schema_id)

    for mt in (order_pb2.Order, None):
        d = ProtobufDeserializer(mt, {"schema.id.deserializer": sid_deser}, client)
        got = d(b, CTX)
        assert got.SerializeToString(deterministic=True) == order().SerializeToString(deterministic=True)
    assert len(seen) >= 2


def test_errors_are_serialization_errors(framed):
    client, _ = framed
    with pytest.raises(SerializationError):
        ProtobufDeserializer(order_pb2.Order, None, client)(b"\x05", CTX)


def test_unknown_import_is_schema_mismatch(client):
    fdp = descriptor_pb2.FileDescriptorProto(name="x.proto", dependency=["not/there.proto"], syntax="proto3")
    fdp.message_type.add(name="X")
    sid = _register_raw(client, "x-value", base64.b64encode(fdp.SerializeToString()).decode())
    with pytest.raises(SchemaMismatchError, match="not/there.proto"):
        ProtobufDeserializer(None, None, client)(_frame(sid, b""), CTX)


def test_guid_prefix_frame(client):
    """magic 1 + 16-byte GUID + indexes, as confluent-kafka reads it."""
    b = ProtobufSerializer(order_pb2.Refund.Reason, client)(reason(), CTX)
    sid = int.from_bytes(b[1:5], "big")
    guid = client.get_schema(sid).guid if hasattr(client.get_schema(sid), "guid") else None
    if guid is None:
        guid = client.get_latest_version(f"{TOPIC}-value").guid
    framed = b"\x01" + uuid.UUID(str(guid)).bytes + b[5:]
    for d in (ProtobufDeserializer(order_pb2.Refund.Reason, None, client), ProtobufDeserializer(None, None, client)):
        got = d(framed, CTX)
        assert got.SerializeToString(deterministic=True) == reason().SerializeToString(deterministic=True)
        assert got.DESCRIPTOR.full_name == "serdes.test.Refund.Reason"
    assert ConfluentDeserializer(order_pb2.Refund.Reason, {}, client)(framed, CTX) == reason()
    with pytest.raises(TruncatedFrameError):
        ProtobufDeserializer(None, None, client)(framed[:17], CTX)


def test_dynamic_with_use_latest_version_reads_with_latest_schema(client):
    """use.latest.version: the reader class is the latest subject version's message of the same name."""
    b = ProtobufSerializer(order_pb2.Order, client)(order(7), CTX)
    d = ProtobufDeserializer(None, {"use.latest.version": True}, client)
    got = d(b, CTX)
    assert got.DESCRIPTOR.full_name == "serdes.test.Order" and got.id == order(7).id
    assert any(isinstance(k, tuple) for k in d._decoders)  # subject-keyed cache
