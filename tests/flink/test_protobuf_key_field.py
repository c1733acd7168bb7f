"""``read_kafka_keyed(key_by="field")`` on Protobuf: the key read in Java from the record's bytes.

The Java reader (``serdes.flink.ProtobufKeyField``, called through the PyFlink gateway, no job)
against the Python decode of the same bytes, its refusals of bytes it cannot read, the build-time
choice of the Java or the Python path, and the keyed operator's check of every decoded key.
"""

from __future__ import annotations

import struct

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyflink.common import Types

from serdes import flink as sf
from serdes.demo.orders_pb2 import Order
from serdes.flink._keyed import FieldKey, KafkaKeyedProcess, protobuf_key_field
from serdes.flink._records import DEAD_LETTER_TAG

from tests.support.flink_context import RuntimeContext
from tests.support.packed import pack_consumer_record

F = descriptor_pb2.FieldDescriptorProto
FIELDS = [("s", 1, F.TYPE_STRING), ("i32", 2, F.TYPE_INT32), ("i64", 3, F.TYPE_INT64), ("u32", 4, F.TYPE_UINT32),
          ("s32", 5, F.TYPE_SINT32), ("s64", 6, F.TYPE_SINT64), ("f64", 7, F.TYPE_FIXED64),
          ("f32", 8, F.TYPE_FIXED32), ("b", 9, F.TYPE_BYTES)]
KINDS = {"s": "string", "i64": "int64", "i32": "int32", "u32": "uint32", "s64": "sint64", "s32": "sint32"}


def _key_message() -> type:
    fdp = descriptor_pb2.FileDescriptorProto(name="serdes_keytest.proto", package="kt", syntax="proto3")
    m = fdp.message_type.add(name="K")
    for name, number, type_ in FIELDS:
        m.field.add(name=name, number=number, type=type_, label=F.LABEL_OPTIONAL)
    m.field.add(name="child", number=10, type=F.TYPE_MESSAGE, type_name=".kt.K", label=F.LABEL_OPTIONAL)
    m.field.add(name="tags", number=11, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kt.K"))


K = _key_message()
PREFIX = b"\x00\x00\x00\x00\x07\x00"  # magic 0, schema id 7, message indexes [0]


@pytest.fixture(scope="module")
def jvm():
    from pyflink.datastream import StreamExecutionEnvironment

    from serdes.flink import _pyflink

    sf.configure(StreamExecutionEnvironment.get_execution_environment())  # the shim jar on the class path
    return _pyflink.jvm()


def java_key(jvm, field: str, value: bytes, header_framed: bool = False):
    number = dict((n, num) for n, num, _ in FIELDS)[field]
    cls = jvm.serdes.flink.ProtobufKeyField
    return cls(number, cls.kind(KINDS[field])).read(value, header_framed)


int32s = st.integers(-(2**31), 2**31 - 1)
messages = st.builds(
    lambda s, i32, i64, u32, s32, s64, f64, b, child_s, tags: K(
        s=s, i32=i32, i64=i64, u32=u32, s32=s32, s64=s64, f64=f64, b=b, child=K(s=child_s, i64=i64), tags=tags),
    st.text(max_size=20), int32s, st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**32 - 1), int32s,
    st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1), st.binary(max_size=10), st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(msg=messages)
def test_java_reads_the_field_python_decodes(jvm, msg):
    payload = msg.SerializeToString()
    for field in KINDS:
        assert java_key(jvm, field, PREFIX + payload) == getattr(msg, field), field


def test_last_occurrence_wins_and_absent_is_the_default(jvm):
    two = K(s="first", i64=1).SerializeToString() + K(s="second", i64=-2).SerializeToString()
    assert java_key(jvm, "s", PREFIX + two) == K.FromString(two).s == "second"
    assert java_key(jvm, "i64", PREFIX + two) == -2
    assert java_key(jvm, "s", PREFIX) == "" and java_key(jvm, "s32", PREFIX) == 0


def test_framings(jvm):
    payload = K(s="x").SerializeToString()
    assert java_key(jvm, "s", b"\x01" + bytes(16) + b"\x00" + payload) == "x"           # GUID framing
    assert java_key(jvm, "s", b"\x00\x00\x00\x00\x07" + b"\x04\x02\x00" + payload) == "x"  # indexes [1, 0]
    assert java_key(jvm, "s", payload, True) == "x"                                      # header framing


@pytest.mark.parametrize("value", [
    b"", b"\x05" + PREFIX[1:] + b"\x0a\x01x",          # unknown magic byte
    b"\x00\x00\x00",                                  # ends inside the schema id
    PREFIX + b"\x0a\x05ab",                           # a string longer than the bytes left
    PREFIX + b"\x0a\xff\xff\xff\xff\x0f",             # a 4 GiB length: refused before any allocation
    PREFIX + b"\x10\x80\x80",                         # ends inside a varint
    PREFIX + b"\x10" + b"\xff" * 10 + b"\x01",        # a varint longer than 10 bytes
    PREFIX + b"\x00\x01",                             # field number 0
    PREFIX + b"\x0b\x0a\x01x",                        # field 1 as a group start
    PREFIX + b"\x63" * 101,                           # groups nested deeper than 100
    PREFIX + b"\x64",                                 # a group end without a start
    PREFIX + b"\x63",                                 # a group never closed
    PREFIX + b"\x3e",                                 # wire type 6
    b"\x00\x00\x00\x00\x07" + b"\xfe\xff\xff\xff\x0f",  # 2**31 message indexes
])
def test_unreadable_bytes_give_no_key(jvm, value):
    assert java_key(jvm, "s", value) is None


def _varint(x: int) -> bytes:
    out = bytearray()
    while True:
        b, x = x & 0x7F, x >> 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


@pytest.mark.parametrize("payload", [
    b"\x10" + _varint(2**32 + 5),                  # int32 field, a varint past 32 bits: its low 32 bits
    b"\x10" + _varint(2**64 - 1),                  # int32 -1 as 10 bytes
    b"\x20" + _varint(2**40 + 7),                  # uint32 past 32 bits
    b"\x28" + _varint(2**33 + 3),                  # sint32 past 32 bits
    b"\x08\x05" + b"\x0a\x02c1",                   # s as a varint (an unknown field), then as a string
    b"\x0a\x02c1" + b"\x19" + bytes(8) + b"\x18\x07",  # i64 as fixed64 (unknown), then as a varint
    b"\x0d\x01\x02\x03\x04" + b"\x10\x09",          # i32 as fixed32 (unknown), then as a varint
])
def test_java_reads_odd_encodings_as_the_python_parser_does(jvm, payload):
    msg = K.FromString(payload)
    for field in KINDS:
        assert java_key(jvm, field, PREFIX + payload) == getattr(msg, field), (field, payload)


def test_other_fields_and_groups_are_skipped(jvm):
    fixed = struct.pack("<Q", 7)
    value = PREFIX + b"\x39" + fixed + b"\x45\x01\x00\x00\x00" + b"\x9b\x01\x08\x01\x9c\x01" + b"\x0a\x01k"
    assert java_key(jvm, "s", value) == "k"  # fixed64 field 7, fixed32 field 8, group 19 {varint}, then s


def test_null_value_gives_no_key(jvm):
    assert java_key(jvm, "s", None) is None


def test_the_schema_refuses_bad_arguments(jvm):
    from py4j.protocol import Py4JJavaError

    cls = jvm.serdes.flink.KafkaProtobufKeyedPackedDeserializationSchema
    with pytest.raises(Py4JJavaError, match="field number out of range"):
        cls(0, "string")
    with pytest.raises(Py4JJavaError, match="key kind must be one of string, int64"):
        cls(1, "double")


# --- the Python side ----------------------------------------------------------------------------


def test_java_path_for_supported_fields_of_generated_classes():
    spec = sf.protobuf(Order, "mock://x")
    assert protobuf_key_field(spec, "customer") == (2, "string", Types.STRING())
    assert protobuf_key_field(spec, "amount_cents")[1:] == ("int64", Types.LONG())
    assert protobuf_key_field(sf.protobuf(K, "mock://x"), "s32")[1:] == ("sint32", Types.LONG())
    with pytest.raises(ValueError, match="has no field 'nope'"):
        protobuf_key_field(spec, "nope")
    assert protobuf_key_field(sf.avro("mock://x"), "customer") is None       # not Protobuf: Python key
    assert protobuf_key_field(sf.protobuf(K, "mock://x"), "f64") is None      # fixed64: Python key
    assert protobuf_key_field(sf.protobuf(K, "mock://x"), "tags") is None     # repeated: Python key


def test_field_key_reads_attributes_and_items():
    from serdes.flink import KafkaRecord

    key = FieldKey("customer")
    assert key(Order(customer="c1")) == "c1" and key({"customer": "c2"}) == "c2"
    # include_metadata=True: the decode operator hands the key function a KafkaRecord
    assert key(KafkaRecord("t", 0, 1, 2, b"k", {"customer": "c4"}, None)) == "c4"
    import pickle

    assert pickle.loads(pickle.dumps(key))(Order(customer="c3")) == "c3"


def test_key_type_must_match_the_field():
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(ValueError, match="does not match"):
        sf.read_kafka_keyed(env, "127.0.0.1:1", "t", sf.protobuf(Order, "mock://x"), key_by="customer",
                            key_type=Types.LONG())


class _Ctx:
    def __init__(self, key):
        self.key = key

    def get_current_key(self):
        return self.key


class _Echo:
    def process_element(self, value, ctx):
        yield value.customer


@pytest.mark.parametrize("on_error", ["dead_letter", "skip", "fail"])
def test_keyed_operator_checks_every_decoded_key(on_error):
    """A record whose decoded field is not the key it was shuffled by never reaches the function."""
    from serdes.protobuf import ProtobufSerializer

    def factory(client, **kw):
        return lambda data, ctx: Order.FromString(data)

    decode = sf.DecodeFunction(sf.custom("protobuf", "de", factory), on_error=on_error)
    op = KafkaKeyedProcess(_Echo(), decode, key_check=FieldKey("customer"))
    op.open(RuntimeContext())
    del ProtobufSerializer
    packed = pack_consumer_record("orders", 1, 42, 0, None, Order(customer="c1").SerializeToString(), None)
    assert list(op.process_element(packed, _Ctx("c1"))) == ["c1"]
    if on_error == "fail":
        with pytest.raises(sf.KeyFieldMismatchError, match="keyed by 'c2'.*decoded key field is 'c1'") as e:
            list(op.process_element(packed, _Ctx("c2")))
        assert (e.value.location.topic, e.value.location.partition, e.value.location.offset) == ("orders", 1, 42)
        return
    out = list(op.process_element(packed, _Ctx("c2")))
    if on_error == "skip":
        assert out == []
    else:
        [(tag, row)] = out
        assert tag == DEAD_LETTER_TAG and row[2] == 42 and row[8] == "KeyFieldMismatchError"
