"""Packed records: the Python side (``serdes/flink/_packed.py``) against the Java shim's
``serdes.flink.PackedRecords`` (called through the PyFlink gateway, no job)."""

from __future__ import annotations

import pytest

from serdes import flink as sf
from serdes.flink._encode import PackedEncodeFunction
from serdes.flink._packed import pack_producer_record, unpack_record

from tests.support.packed import pack_consumer_record

RECORDS = [
    ("orders", 3, 12345678901, 1700000000123, b"k", b"\x00\x00\x00\x00\x01v", None),
    ("orders", 0, 0, -1, None, b"v", None),                       # no key, no timestamp
    ("tömbstones", 1, 7, 5, b"k", None, None),                   # null value, non-ASCII topic
    ("t", 2, 8, 6, b"", b"", {"a": b"1", "ü": b"", "c": b"\x00\xff"}),
    ("t", 2, 9, 6, b"k", b"v", {"__value_schema_id": None, "a": b"1"}),   # a null header value stays null
]


@pytest.mark.parametrize("record", RECORDS)
def test_unpack_returns_the_record_fields(record):
    assert unpack_record(pack_consumer_record(*record)) == record


@pytest.mark.parametrize("cut", [0, 1, 35, 37])
def test_truncated_record_is_a_packed_record_error(cut):
    packed = pack_consumer_record(*RECORDS[3])
    with pytest.raises(sf.PackedRecordError):
        unpack_record(packed[:cut])


def test_trailing_bytes_are_a_packed_record_error():
    for record in (RECORDS[0], RECORDS[3]):
        with pytest.raises(sf.PackedRecordError):
            unpack_record(pack_consumer_record(*record) + b"x")


def _packed_with_names(topic: bytes, name: bytes) -> bytes:
    import struct

    return (struct.pack(">iqqiiii", 0, 1, 2, len(topic), -1, 1, 1) + topic + b"v"
            + struct.pack(">i", len(name)) + name + struct.pack(">i", 1) + b"x")


def test_names_that_are_not_utf8_are_a_packed_record_error():
    assert unpack_record(_packed_with_names(b"t", b"h"))[6] == {"h": b"x"}
    with pytest.raises(sf.PackedRecordError, match="header name is not UTF-8"):
        unpack_record(_packed_with_names(b"t", b"\xff\xfe"))
    with pytest.raises(sf.PackedRecordError, match="topic is not UTF-8"):
        unpack_record(_packed_with_names(b"\xc3", b"h"))


@pytest.mark.parametrize("headers, match", [
    ({"bad\ud800": b"v"}, "name is not valid Unicode"),
    ({"h": "bad\udc00"}, "value is not valid Unicode"),
    ([(7, b"v")], "name is a int"),
    ({"h": 7}, "a int value is not bytes"),
])
def test_producer_headers_that_cannot_be_written_are_a_validation_error(headers, match):
    import serdes

    with pytest.raises(serdes.ValidationError, match=match):
        pack_producer_record(None, None, b"v", headers)


def test_producer_record_layout():
    packed = pack_producer_record(None, b"k", b"value", {"h": "text", "n": None})
    assert packed == (b"\xff\xff\xff\xff" b"\x00\x00\x00\x01" b"\x00\x00\x00\x05" b"\x00\x00\x00\x02" b"kvalue"
                      b"\x00\x00\x00\x01h\x00\x00\x00\x04text" b"\x00\x00\x00\x01n\xff\xff\xff\xff")
    assert pack_producer_record(b"t", None, None) == (
        b"\x00\x00\x00\x01" b"\xff\xff\xff\xff" b"\xff\xff\xff\xff" b"\xff\xff\xff\xff" b"t")


def test_packed_encode_function_emits_the_producer_row_packed():
    from confluent_kafka.serialization import SerializationContext

    from tests.support.flink_context import RuntimeContext

    def factory(client, **kw):
        def ser(obj, ctx: SerializationContext):
            ctx.headers.append(("h", b"1"))  # like header framing
            return obj.encode()

        return ser

    args = ("sink", sf.custom("avro", "ser", factory), None, lambda o: "key-" + o, None,
            lambda o: "other" if o == "x" else "sink")
    rows, packed = sf.EncodeFunction(*args), PackedEncodeFunction(*args)
    rows.open(RuntimeContext())
    packed.open(RuntimeContext())
    for obj in ("v", "x"):
        topic, key, value, headers = rows.map(obj)
        assert packed.map(obj) == pack_producer_record(None if topic == "sink" else topic.encode(), key, value, headers)
    assert packed.map("x")[:4] == b"\x00\x00\x00\x05"  # a topic of its own; "sink" is the sink's default


# --- the Java side ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jvm():
    from pyflink.datastream import StreamExecutionEnvironment

    from serdes.flink import _pyflink

    sf.configure(StreamExecutionEnvironment.get_execution_environment())  # the shim jar on the class path
    return _pyflink.jvm()


def _consumer_record(jvm, topic, partition, offset, timestamp, key, value, headers):
    kafka = jvm.org.apache.flink.kafka.shaded.org.apache.kafka
    j_headers = kafka.common.header.internals.RecordHeaders()
    for name, v in (headers or {}).items():
        j_headers.add(name, v)
        j_headers.add(name, b"duplicate: the first one wins")
    return kafka.clients.consumer.ConsumerRecord(
        topic, partition, offset, timestamp, kafka.common.record.TimestampType.CREATE_TIME, -1, -1, key, value,
        j_headers, jvm.java.util.Optional.empty())


@pytest.mark.parametrize("record", RECORDS)
def test_java_packs_what_python_unpacks(jvm, record):
    packed = bytes(jvm.serdes.flink.PackedRecords.pack(_consumer_record(jvm, *record)))
    assert packed == pack_consumer_record(*record)
    assert unpack_record(packed) == record


@pytest.mark.parametrize("topic", [None, "other-tópic"])
def test_java_unpacks_what_python_packs(jvm, topic):
    headers = {"h": b"\x00\x01", "s": "text", "n": None}
    packed = pack_producer_record(None if topic is None else topic.encode(), b"key", b"value", headers)
    rec = jvm.serdes.flink.PackedRecords.unpack(packed, "default-topic", 42)
    assert rec.topic() == (topic or "default-topic") and rec.timestamp() == 42
    assert bytes(rec.key()) == b"key" and bytes(rec.value()) == b"value"
    got = {h.key(): (None if h.value() is None else bytes(h.value())) for h in rec.headers().toArray()}
    assert got == {"h": b"\x00\x01", "s": b"text", "n": None}
    nulls = jvm.serdes.flink.PackedRecords.unpack(pack_producer_record(None, None, None), "d", None)
    assert nulls.key() is None and nulls.value() is None and nulls.topic() == "d"


def test_java_refuses_a_producer_record_without_topic(jvm):
    from py4j.protocol import Py4JJavaError

    with pytest.raises(Py4JJavaError, match="no default topic"):
        jvm.serdes.flink.PackedRecords.unpack(pack_producer_record(None, None, b"v"), None, None)
    with pytest.raises(Py4JJavaError, match="a length of 2147483647 with 1 bytes left"):  # no 2 GiB array
        jvm.serdes.flink.PackedRecords.unpack(b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f\xff\xff\xff"
                                              b"\xff\xff\xff\xffv", "t", None)
    with pytest.raises(Py4JJavaError, match="trailing bytes"):
        jvm.serdes.flink.PackedRecords.unpack(pack_producer_record(None, None, b"v") + b"x", "t", None)
