"""serdes.arrow: columnar decode equals the per-record decode of the same frames, columnar encode
equals per-record encode byte for byte -- Avro (hand-written and random schemas, both
implementations), Protobuf and JSON Schema; evolution to one reader schema; per-row errors."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from typing import Any, Dict, List

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, timestamp_pb2, wrappers_pb2  # noqa: E402
from google.protobuf.message_factory import GetMessageClass  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from serdes import _native  # noqa: E402
from serdes import BatchError, ColumnValueError, CorruptPayloadError, InvalidMagicByteError  # noqa: E402
from serdes.arrow import NoColumnarShape, arrow_schema, poll_arrow  # noqa: E402
from serdes.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from serdes.json import JSONDeserializer, JSONSerializer  # noqa: E402
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from serdes_test import order_pb2  # noqa: E402
from tests.support.avro_strategies import _named_table, schemas, values  # noqa: E402

UTC = datetime.timezone.utc


def _client(name: str) -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://arrow-{name}-{uuid.uuid4().hex}"})


def _ctx(topic: str = "t") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


# -- the reference: a per-record value as Arrow's to_pylist() gives it ---------------------------

def _as_arrow_value(schema: Any, v: Any, named: Dict[str, Any]) -> Any:
    """What the column of ``schema`` holds for the per-record value ``v`` (written independently
    of serdes.arrow: UUIDs as 16 bytes, maps as (key, value) pairs, durations as intervals)."""
    if v is None:
        return None
    if isinstance(schema, str):
        short = schema.rsplit(".", 1)[-1]
        return _as_arrow_value(named[short], v, named) if short in named else v
    if isinstance(schema, list):
        # fastavro's write_union: the first branch that takes the value, but a record is only the
        # best so far (most fields; a later branch of another kind wins) and a float gives way to
        # a later double
        best, most, could_be_float = None, -1, False
        for b in schema:
            if b == "null":
                continue
            resolved = named.get(b.rsplit(".", 1)[-1], b) if isinstance(b, str) else b
            t = resolved if isinstance(resolved, str) else resolved["type"]
            if could_be_float:
                if t == "double":
                    return _as_arrow_value(b, v, named)
                continue
            if not _branch_takes(b, v, named):
                continue
            if t == "record":
                fields = len(set(v) & {f["name"] for f in resolved["fields"]})
                if fields > most:
                    best, most = b, fields
            elif t == "float":
                best, could_be_float = b, True
            else:
                return _as_arrow_value(b, v, named)
        if best is None:
            raise AssertionError((schema, v))
        return _as_arrow_value(best, v, named)
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return _as_arrow_value(t, v, named)
    lt = schema.get("logicalType")
    if lt == "uuid" and t == "string":
        return v.bytes
    if lt == "duration" and t == "fixed":
        return (int.from_bytes(v[0:4], "little"), int.from_bytes(v[4:8], "little"),
                int.from_bytes(v[8:12], "little") * 1_000_000)
    if t == "record":
        return {f["name"]: _as_arrow_value(f["type"], v[f["name"]], named) for f in schema["fields"]}
    if t == "array":
        return [_as_arrow_value(schema["items"], x, named) for x in v]
    if t == "map":
        return [(k, _as_arrow_value(schema["values"], x, named)) for k, x in v.items()]
    return v


def _branch_takes(b: Any, v: Any, named: Dict[str, Any]) -> bool:
    if isinstance(b, str) and b.rsplit(".", 1)[-1] in named:
        b = named[b.rsplit(".", 1)[-1]]
    t = b if isinstance(b, str) else b["type"]
    lt = None if isinstance(b, str) else b.get("logicalType")
    is_int = isinstance(v, int) and not isinstance(v, bool)
    if lt == "uuid":
        return isinstance(v, uuid.UUID)
    if lt == "decimal":
        return isinstance(v, decimal.Decimal)
    if lt in ("timestamp-millis", "timestamp-micros"):
        return isinstance(v, datetime.datetime) and v.tzinfo is not None
    if lt in ("local-timestamp-millis", "local-timestamp-micros"):
        return isinstance(v, datetime.datetime) and v.tzinfo is None
    if lt == "date":
        return isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    if lt in ("time-millis", "time-micros"):
        return isinstance(v, datetime.time)
    # deep, as fastavro's writer validates a branch
    if t == "record":
        return isinstance(v, dict) and set(v) == {f["name"] for f in b["fields"]} and all(
            _takes(f["type"], v[f["name"]], named) for f in b["fields"])
    if t == "map":
        return isinstance(v, dict) and all(_takes(b["values"], x, named) for x in v.values())
    if t == "array":
        return isinstance(v, list) and all(_takes(b["items"], x, named) for x in v)
    return {
        "boolean": isinstance(v, bool), "int": is_int and -(2**31) <= v < 2**31, "long": is_int,
        "float": isinstance(v, float), "double": isinstance(v, float), "bytes": isinstance(v, bytes),
        "string": isinstance(v, str), "enum": isinstance(v, str) and v in b.get("symbols", ()) if isinstance(b, dict)
        else False, "fixed": isinstance(v, bytes) and isinstance(b, dict) and len(v) == b.get("size"),

    }.get(t, False)


def _takes(schema: Any, v: Any, named: Dict[str, Any]) -> bool:
    if isinstance(schema, list):
        return any(b == "null" and v is None or b != "null" and _takes(b, v, named) for b in schema)
    if v is None:
        return schema == "null" or isinstance(schema, dict) and schema.get("type") == "null"
    return _branch_takes(schema, v, named)


def _pylist(batch: Any) -> List[Dict[str, Any]]:
    rows = pa.record_batch(batch).to_pylist()
    for r in rows:
        for k, v in r.items():
            if hasattr(v, "nanoseconds") and hasattr(v, "months"):
                r[k] = (v.months, v.days, v.nanoseconds)
    return rows


def _roundtrip(schema: Dict[str, Any], records: List[Dict[str, Any]]) -> None:
    client = _client("rt")
    ser = AvroSerializer(client, json.dumps(schema))
    ctx = _ctx()
    frames = [ser(r, ctx) for r in records]
    deser = AvroDeserializer(client)
    per_record = [deser(f, ctx) for f in frames]
    batch = deser.deserialize_arrow(frames, ctx)
    named = _named_table(schema, {})
    assert batch.num_rows == len(records) and batch.errors == [] and batch.rows == list(range(len(records)))
    assert _pylist(batch) == [_as_arrow_value(schema, v, named) for v in per_record]
    # the implementation not active here gives the same batch (the native columnar decoder when
    # it takes the schema, the per-record path otherwise)
    with _native.forced_pure():
        assert pa.record_batch(AvroDeserializer(client).deserialize_arrow(frames, ctx)).equals(pa.record_batch(batch))
    # and back: the columns written row by row are the per-record serializer's bytes
    assert ser.serialize_arrow(pa.table(batch), ctx) == frames


ALL_TYPES = {
    "type": "record", "name": "All", "namespace": "t.arrow", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "by", "type": "bytes"},
        {"name": "s", "type": "string"}, {"name": "opt", "type": ["null", "string"], "default": None},
        {"name": "optr", "type": ["int", "null"]},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "decf", "type": {"type": "fixed", "name": "DF", "size": 8, "logicalType": "decimal",
                                  "precision": 10, "scale": 2}},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "ltsu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
        {"name": "arr", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "sku", "type": "string"}, {"name": "c", "type": "t.arrow.Color"}]}}},
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "nested", "type": ["null", "t.arrow.Item"], "default": None},
        {"name": "un", "type": ["null", "string", "long", "t.arrow.Item"]},
    ]}


def _all_types_record(n: int) -> Dict[str, Any]:
    return {
        "b": n % 2 == 0, "i": -n, "l": n * 10**12, "f": 1.5, "d": n / 3, "by": bytes([n % 256]) * 3,
        "s": f"s{n}", "opt": None if n % 3 else f"o{n}", "optr": None if n % 2 else n,
        "e": ["RED", "GREEN", "BLUE"][n % 3], "fx": b"abcd", "u": uuid.UUID(int=n + 1),
        "dec": decimal.Decimal(n).scaleb(-3), "decf": decimal.Decimal("-12.34"),
        "date": datetime.date(2024, 2, 29), "tm": datetime.time(23, 59, 58, 123000),
        "tu": datetime.time(1, 2, 3, 456789),
        "tsm": datetime.datetime(2024, 1, 1, 12, 0, 0, 5000, tzinfo=UTC),
        "tsu": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "ltsm": datetime.datetime(2030, 5, 6, 7, 8, 9, 10000), "ltsu": datetime.datetime(2000, 1, 1, 0, 0, 0, 1),
        "dur": (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + (3000 + n).to_bytes(4, "little"),
        "arr": [{"sku": "x", "c": "BLUE"}] * (n % 3), "m": {"a": n, "b": None},
        "nested": None if n % 2 else {"sku": "n", "c": "RED"},
        "un": [None, "text", n, {"sku": "u", "c": "GREEN"}][n % 4],
    }


def test_every_avro_type_matches_per_record_decode(implementation: Any) -> None:
    _roundtrip(ALL_TYPES, [_all_types_record(n) for n in range(12)])


def test_avro_types_follow_the_documented_mapping() -> None:
    client = _client("types")
    ser = AvroSerializer(client, json.dumps(ALL_TYPES))
    batch = AvroDeserializer(client).deserialize_arrow([ser(_all_types_record(1), _ctx())], _ctx())
    types = {f.name: f.type for f in batch.schema}
    assert types["i"] == pa.int32() and types["l"] == pa.int64() and types["f"] == pa.float32()
    assert types["e"] == pa.dictionary(pa.int32(), pa.utf8())
    assert pa.record_batch(batch).column("e").dictionary.to_pylist() == ["RED", "GREEN", "BLUE"]
    assert types["fx"] == pa.binary(4) and types["u"] == pa.binary(16)
    assert types["dec"] == pa.decimal128(12, 3)
    assert types["tsm"] == pa.timestamp("ms", "+00:00") and types["ltsu"] == pa.timestamp("us")
    assert types["tm"] == pa.time32("ms") and types["tu"] == pa.time64("us") and types["date"] == pa.date32()
    assert types["dur"] == pa.month_day_nano_interval()
    assert types["m"].key_type == pa.utf8() and types["m"].item_type == pa.int64()
    assert types["m"].item_field.nullable and not types["m"].key_field.nullable
    assert pa.types.is_union(types["un"]) and types["un"].mode == "dense"
    assert [types["un"].field(i).name for i in range(4)] == ["null", "string", "long", "t.arrow.Item"]
    item = types["arr"].value_type
    assert not types["arr"].value_field.nullable and not item.field("sku").nullable
    assert types["nested"] == item  # the union [null, Item] is a nullable Item


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_avro_schemas(data: Any) -> None:
    schema = data.draw(schemas(max_depth=3))
    named = _named_table(schema, {})
    records = data.draw(st.lists(values(schema, named), min_size=1, max_size=4))
    try:
        _roundtrip(schema, records)
    except NoColumnarShape:  # pragma: no cover - the strategy writes no recursive schemas
        raise


# -- evolution: frames of several writer schemas in one batch -------------------------------------

V1 = {"type": "record", "name": "User", "namespace": "evo", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "legacy", "type": "int"}]}
V2 = {"type": "record", "name": "User", "namespace": "evo", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None}]}
V3 = {"type": "record", "name": "User", "namespace": "evo", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "score", "type": "double", "default": 0.5}]}


def _evolving(client: Any, topic: str) -> List[bytes]:
    ctx = _ctx(topic)
    frames = []
    for version, schema in enumerate((V1, V2, V3)):
        ser = AvroSerializer(client, json.dumps(schema))
        for n in range(3):
            rec = {"id": version * 10 + n, "name": f"u{n}", "legacy": 7, "email": f"e{n}", "score": 2.0}
            frames.append(ser({f["name"]: rec[f["name"]] for f in schema["fields"]}, ctx))
    return frames


def test_evolving_topic_resolves_to_the_latest_registered(implementation: Any) -> None:
    client = _client("evo")
    frames = _evolving(client, "users")
    batch = AvroDeserializer(client).deserialize_arrow(frames, _ctx("users"))
    assert batch.schema.names == ["id", "name", "email", "score"]
    rows = _pylist(batch)
    assert [r["id"] for r in rows] == [0, 1, 2, 10, 11, 12, 20, 21, 22]
    assert [r["email"] for r in rows[:3]] == [None] * 3 and rows[3]["email"] == "e0"
    assert [r["score"] for r in rows] == [0.5] * 6 + [2.0] * 3
    # the same as the per-record decode with that reader schema
    reader = AvroDeserializer(client, json.dumps(V3))
    assert rows == [reader(f, _ctx("users")) for f in frames]


def test_given_reader_schema_projects(implementation: Any) -> None:
    client = _client("proj")
    frames = _evolving(client, "users")
    reader = {"type": "record", "name": "User", "namespace": "evo", "fields": [{"name": "id", "type": "long"}]}
    batch = AvroDeserializer(client).deserialize_arrow(frames, None, reader_schema=json.dumps(reader))
    assert _pylist(batch) == [{"id": i} for i in (0, 1, 2, 10, 11, 12, 20, 21, 22)]


def test_several_writers_without_a_reader_is_a_clear_error() -> None:
    client = _client("several")
    frames = _evolving(client, "users")
    with pytest.raises(ValueError, match="several writer schemas"):
        AvroDeserializer(client).deserialize_arrow(frames)


def test_incompatible_writer_is_a_row_error(implementation: Any) -> None:
    client = _client("incompat")
    frames = _evolving(client, "users")
    bad = {"type": "record", "name": "User", "namespace": "evo", "fields": [{"name": "id", "type": "string"}]}
    odd = AvroSerializer(client, json.dumps(bad))(
        {"id": "x"}, SerializationContext("elsewhere", MessageField.VALUE))
    batch = AvroDeserializer(client).deserialize_arrow(frames + [odd], None, reader_schema=json.dumps(V3),
                                                       errors="collect")
    assert batch.num_rows == 9 and [i for i, _ in batch.errors] == [9]


# -- bad records: typed per-row errors, never a silent null ---------------------------------------

def test_bad_frames_are_row_errors_with_their_index(implementation: Any) -> None:
    client = _client("bad")
    ctx = _ctx()
    ser = AvroSerializer(client, json.dumps(V2))
    good = [ser({"id": n, "name": "x", "email": None}, ctx) for n in range(4)]
    frames = [good[0], b"\x07\x00\x00\x00\x01", good[1], good[2][:-2], None, good[3] + b"\x00"]
    deser = AvroDeserializer(client)
    batch = deser.deserialize_arrow(frames, ctx, errors="collect")
    assert batch.rows == [0, 2, 4]
    assert _pylist(batch) == [{"id": 0, "name": "x", "email": None}, {"id": 1, "name": "x", "email": None},
                              {"id": None, "name": None, "email": None}]  # the tombstone: a row of nulls
    kinds = {i: type(e) for i, e in batch.errors}
    assert kinds[1] is InvalidMagicByteError
    assert issubclass(kinds[3], CorruptPayloadError) and issubclass(kinds[5], CorruptPayloadError)
    # the same errors the per-record call raises
    for i, e in batch.errors:
        with pytest.raises(type(e)):
            deser(frames[i], ctx)
    with pytest.raises(BatchError) as info:
        deser.deserialize_arrow(frames, ctx)
    assert [i for i, _ in info.value.errors] == [1, 3, 5]


def test_hostile_counts_are_bounded(implementation: Any) -> None:
    client = _client("hostile")
    schema = {"type": "record", "name": "H", "fields": [{"name": "a", "type": {"type": "array", "items": "long"}}]}
    ser = AvroSerializer(client, json.dumps(schema))
    frame = ser({"a": [1]}, _ctx())
    # a block count of 2^40 items in a 20-byte record
    huge = frame[:5] + bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]) + b"\x02\x00"
    batch = AvroDeserializer(client).deserialize_arrow([frame, huge], _ctx(), errors="collect")
    assert batch.num_rows == 1 and isinstance(batch.errors[0][1], CorruptPayloadError)


def test_recursive_schema_has_no_columnar_shape() -> None:
    client = _client("rec")
    schema = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"], "default": None}]}
    ser = AvroSerializer(client, json.dumps(schema))
    with pytest.raises(NoColumnarShape, match="recursive"):
        AvroDeserializer(client).deserialize_arrow([ser({"v": 1, "next": None}, _ctx())], _ctx())


def test_non_record_schema_is_one_value_column() -> None:
    client = _client("prim")
    ser = AvroSerializer(client, json.dumps("string"))
    frames = [ser("a", _ctx()), None, ser("b", _ctx())]
    batch = AvroDeserializer(client).deserialize_arrow(frames, _ctx())
    assert _pylist(batch) == [{"value": "a"}, {"value": None}, {"value": "b"}]
    assert ser.serialize_arrow(pa.table({"value": ["a", "b"]}), _ctx()) == [frames[0], frames[2]]


# -- consumer messages and their coordinates -----------------------------------------------------

class _Message:
    """The accessors of a confluent_kafka.Message (a consumer's real messages: tests/integration)."""

    def __init__(self, value: Any, offset: int, key: Any = b"k", headers: Any = None) -> None:
        self._value, self._offset, self._key, self._headers = value, offset, key, headers

    def value(self) -> Any:
        return self._value

    def key(self) -> Any:
        return self._key

    def topic(self) -> str:
        return "orders"

    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> Any:
        return (1, 1_700_000_000_000 + self._offset)

    def headers(self) -> Any:
        return self._headers

    def error(self) -> Any:
        return None


def test_messages_give_coordinate_columns_and_located_errors() -> None:
    client = _client("msgs")
    ser = AvroSerializer(client, json.dumps(V2))
    ctx = _ctx("orders")
    msgs = [_Message(ser({"id": n, "name": "x", "email": None}, ctx), 100 + n, headers=[("h", b"v")] if n else None)
            for n in range(3)]
    msgs.insert(1, _Message(b"\x00\x00\x00\x00", 200))
    batch = AvroDeserializer(client).deserialize_arrow(
        msgs, errors="collect", metadata=("topic", "partition", "offset", "timestamp", "key", "headers"))
    rows = _pylist(batch)
    assert [r["offset"] for r in rows] == [100, 101, 102]
    assert rows[0]["topic"] == "orders" and rows[0]["partition"] == 3 and rows[0]["key"] == b"k"
    assert rows[0]["headers"] is None and rows[1]["headers"] == [{"key": "h", "value": b"v"}]
    assert rows[2]["timestamp"] == datetime.datetime.fromtimestamp(1_700_000_000.102, UTC)
    (i, err), = batch.errors
    assert i == 1 and err.location.topic == "orders" and err.location.partition == 3 and err.location.offset == 200


def test_poll_arrow_uses_consume_and_raises_broker_errors() -> None:
    client = _client("poll")
    ser = AvroSerializer(client, json.dumps(V2))
    msgs = [_Message(ser({"id": n, "name": "x", "email": None}, _ctx("orders")), n) for n in range(5)]

    class Consumer:
        def consume(self, num_messages: int, timeout: float) -> List[Any]:
            return msgs[:num_messages]

    batch = poll_arrow(Consumer(), AvroDeserializer(client), max_messages=3)
    assert [r["offset"] for r in _pylist(batch)] == [0, 1, 2]
    assert poll_arrow(Consumer(), AvroDeserializer(client), max_messages=5, threads=2).num_rows == 5

    class Idle:  # a poll before the group has its partitions, or after the last message
        def consume(self, num_messages: int, timeout: float) -> List[Any]:
            return []

    empty = poll_arrow(Idle(), AvroDeserializer(client))
    assert empty.num_rows == 0 and empty.schema.names == ["topic", "partition", "offset", "timestamp"]
    shaped = poll_arrow(Idle(), AvroDeserializer(client), reader_schema=json.dumps(V2))
    assert shaped.schema.names == ["id", "name", "email", "topic", "partition", "offset", "timestamp"]
    assert pa.table(shaped).num_rows == 0
    every = AvroDeserializer(client).deserialize_arrow([], reader_schema=json.dumps(ALL_TYPES))
    assert every.schema.names == [f["name"] for f in ALL_TYPES["fields"]] and every.num_rows == 0


# -- Protobuf -------------------------------------------------------------------------------------

def _wkt_class() -> Any:
    pool = descriptor_pool.DescriptorPool()
    for mod in (timestamp_pb2, duration_pb2, wrappers_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
    fdp = descriptor_pb2.FileDescriptorProto(name="arrow_wkt.proto", package="t.arrow", syntax="proto3",
                                             dependency=["google/protobuf/duration.proto",
                                                         "google/protobuf/wrappers.proto",
                                                         "google/protobuf/timestamp.proto"])
    m = fdp.message_type.add(name="Wkt")
    F = descriptor_pb2.FieldDescriptorProto
    m.field.add(name="d", number=1, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Duration")
    m.field.add(name="w", number=2, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Int64Value")
    m.field.add(name="ws", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.StringValue")
    m.field.add(name="t", number=4, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    m.field.add(name="u", number=5, type=F.TYPE_UINT64)
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("t.arrow.Wkt"))


def _orders() -> List[Any]:
    out = []
    for n in range(6):
        o = order_pb2.Order(id=n, customer=f"c{n}", amount=n * 1.5, paid=n % 2 == 0, level=n % 3, tags=["a"] * n,
                            counts={"x": n}, blob=b"\x00" * n)
        if n % 2:
            o.address.street = "Main"
            o.priority = n
            o.card = "4111"
        else:
            o.iban = "DE00"
        o.created.FromNanoseconds(1_700_000_000_123_456_789 + n)
        o.lines.add(sku="s", qty=n)
        out.append(o)
    return out


def test_protobuf_columns_equal_the_messages() -> None:
    from serdes.protobuf._todict import dict_converter

    client = _client("pb")
    ser = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})
    ctx = _ctx()
    msgs = _orders()
    frames = [ser(m, ctx) for m in msgs]
    deser = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False})
    batch = deser.deserialize_arrow(frames, ctx)
    types = {f.name: f.type for f in batch.schema}
    assert types["created"] == pa.timestamp("ns", "UTC") and types["level"] == pa.dictionary(pa.int32(), pa.utf8())
    assert (types["counts"].key_type, types["counts"].item_type) == (pa.utf8(), pa.int32()) and types["lines"].value_type.field("qty").type == pa.uint32()
    rb = pa.record_batch(batch)
    assert rb.column("created").cast(pa.int64()).to_pylist() == [1_700_000_000_123_456_789 + n for n in range(6)]
    to_dict = dict_converter(order_pb2.Order.DESCRIPTOR, unwrap_wrappers=True)
    expected = []
    for m in msgs:
        d = to_dict(m)
        d.pop("created")
        d["counts"] = list(d["counts"].items())
        expected.append(d)
    got = rb.drop_columns(["created"]).to_pylist() if hasattr(rb, "drop_columns") else None
    if got is None:  # pragma: no cover - pyarrow < 14
        got = [{k: v for k, v in r.items() if k != "created"} for r in rb.to_pylist()]
    assert got == expected
    assert ser.serialize_arrow(pa.table(batch), ctx) == frames


def test_protobuf_well_known_types_and_wrappers() -> None:
    cls = _wkt_class()
    client = _client("wkt")
    ser = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    ctx = _ctx()
    msgs = []
    for n in range(3):
        m = cls(u=2**64 - 1 - n)
        m.d.FromNanoseconds(-1_500_000_001 * (n + 1))
        if n:
            m.w.value = n - 1  # a set wrapper holding the default 0 is not a null
            m.t.FromNanoseconds(n)
        msgs.append(m)
    frames = [ser(m, ctx) for m in msgs]
    batch = ProtobufDeserializer(cls, {"use.deprecated.format": False}).deserialize_arrow(frames, ctx)
    rb = pa.record_batch(batch)
    assert rb.schema.field("d").type == pa.duration("ns") and rb.schema.field("w").type == pa.int64()
    assert rb.column("d").cast(pa.int64()).to_pylist() == [-1_500_000_001 * (n + 1) for n in range(3)]
    assert rb.column("w").to_pylist() == [None, 0, 1] and rb.column("ws").to_pylist() == [None] * 3
    assert rb.column("u").to_pylist() == [2**64 - 1 - n for n in range(3)]
    assert ser.serialize_arrow(rb, ctx) == frames


# -- JSON Schema ----------------------------------------------------------------------------------

JSON_SCHEMA = {
    "type": "object", "title": "Reading", "additionalProperties": False,
    "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "value": {"type": ["number", "null"]},
        "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"$ref": "#/definitions/Point"},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["id", "name", "value"],
    "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                              "required": ["x", "y"]}},
}


def test_json_columns_and_round_trip() -> None:
    client = _client("json")
    ser = JSONSerializer(json.dumps(JSON_SCHEMA), client)
    ctx = _ctx()
    recs = [{"id": n, "name": f"n{n}", "value": None if n % 2 else n / 2, "ok": True, "tags": ["a"],
             "where": {"x": 1.0, "y": 2.5}, "attrs": {"k": n}} for n in range(4)]
    recs.append({"id": 9, "name": "sparse", "value": 1.0})  # optional properties left out
    frames = [ser(r, ctx) for r in recs]
    deser = JSONDeserializer(None, schema_registry_client=client)
    batch = deser.deserialize_arrow(frames, ctx)
    types = {f.name: f.type for f in batch.schema}
    assert types["id"] == pa.int64() and types["attrs"].item_type == pa.int64()
    rows = _pylist(batch)
    assert rows[0]["where"] == {"x": 1.0, "y": 2.5} and rows[0]["attrs"] == [("k", 0)]
    assert rows[4]["tags"] is None and rows[4]["value"] == 1.0
    assert ser.serialize_arrow(pa.table(batch), ctx) == frames


def test_json_tombstones_are_rows_of_nulls() -> None:
    # every row of a strict object holds declared properties: pyarrow builds the batch at once, and
    # a tombstone's placeholders (0, "", False) must not show through the top-level columns
    client = _client("json-tombstones")
    ser = JSONSerializer(json.dumps(JSON_SCHEMA), client)
    frames = [None, ser({"id": 1, "name": "a", "value": 1.0, "ok": True}, _ctx()), None]
    batch = JSONDeserializer(None, schema_registry_client=client).deserialize_arrow(frames, _ctx())
    rows = _pylist(batch)
    assert rows[0] == rows[2] == {name: None for name in batch.schema.names}
    assert rows[1]["id"] == 1 and rows[1]["ok"] is True


def test_json_undeclared_property_is_a_row_error_not_a_dropped_key() -> None:
    client = _client("json-extra")
    loose = dict(JSON_SCHEMA, additionalProperties=True)
    ser = JSONSerializer(json.dumps(loose), client)
    ctx = _ctx()
    frames = [ser({"id": 1, "name": "a", "value": 1.0}, ctx), ser({"id": 2, "name": "b", "value": 2.0, "extra": 1}, ctx)]
    batch = JSONDeserializer(None, schema_registry_client=client).deserialize_arrow(frames, ctx, errors="collect")
    assert batch.rows == [0]
    (i, err), = batch.errors
    assert i == 1 and isinstance(err, ColumnValueError) and "extra" in str(err)


@pytest.mark.parametrize("schema, why", [
    ({"type": "object", "properties": {"a": {}}}, "no type"),
    ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}, "oneOf"),
    ({"type": "object", "properties": {"a": {"$ref": "#"}}}, "itself"),
])
def test_json_schema_without_a_columnar_shape(schema: Dict[str, Any], why: str) -> None:
    client = _client("json-shape")
    deser = JSONDeserializer(json.dumps(schema), schema_registry_client=client)
    with pytest.raises(NoColumnarShape, match=why):
        deser.deserialize_arrow([], _ctx())


def test_arrow_schema_of_a_serializer() -> None:
    client = _client("schema")
    assert arrow_schema(AvroSerializer(client, json.dumps(V2))).names == ["id", "name", "email"]


def test_registry_schema_object_as_reader() -> None:
    client = _client("schema-obj")
    frames = _evolving(client, "users")
    batch = AvroDeserializer(client).deserialize_arrow(frames, reader_schema=Schema(json.dumps(V2), "AVRO"))
    assert batch.schema.names == ["id", "name", "email"] and batch.num_rows == 9


def test_polars_reads_the_batch_through_the_pycapsule_interface() -> None:
    pl = pytest.importorskip("polars")  # in the test extra: CI installs it
    client = _client("polars")
    # Polars has no month-day-nano interval and no union: every other Avro type
    unsupported = ("dur", "un")
    schema = dict(ALL_TYPES, fields=[f for f in ALL_TYPES["fields"] if f["name"] not in unsupported])
    ser = AvroSerializer(client, json.dumps(schema))
    frames = [ser({k: v for k, v in _all_types_record(n).items() if k not in unsupported}, _ctx()) for n in range(5)]
    batch = AvroDeserializer(client).deserialize_arrow(frames, _ctx())
    df = pl.DataFrame(batch)  # __arrow_c_stream__, no pyarrow in between
    assert df.columns == batch.schema.names and df.height == 5
    assert df["s"].to_list() == [f"s{n}" for n in range(5)]
    assert df["e"].cast(pl.String).to_list() == ["RED", "GREEN", "BLUE", "RED", "GREEN"]
    assert df.filter(pl.col("i") < -2)["l"].to_list() == [3 * 10**12, 4 * 10**12]


def test_frames_and_messages_do_not_mix() -> None:
    client = _client("mix")
    frame = AvroSerializer(client, json.dumps(V2))({"id": 1, "name": "x", "email": None}, _ctx())
    deser = AvroDeserializer(client)
    for items in ([frame, _Message(frame, 0)], [_Message(frame, 0), None]):
        with pytest.raises(TypeError, match="not both"):
            deser.deserialize_arrow(items, _ctx())
    assert deser.deserialize_arrow([None, frame], _ctx()).num_rows == 2


@pytest.mark.asyncio
async def test_async_deserializers_give_the_sync_batch(implementation: Any) -> None:
    from confluent_kafka.schema_registry import AsyncSchemaRegistryClient

    from serdes.avro import AsyncAvroDeserializer, AsyncAvroSerializer
    from serdes.json import AsyncJSONDeserializer, AsyncJSONSerializer

    sync_client = _client("async-ref")
    frames = _evolving(sync_client, "users") * 3 + [None]
    # the same writes through a fresh async registry: the same schema ids, so the same frames
    aclient = AsyncSchemaRegistryClient.new_client({"url": f"mock://arrow-async-{uuid.uuid4().hex}"})
    again: List[Any] = []
    for version, schema in enumerate((V1, V2, V3)):
        ser = await AsyncAvroSerializer(aclient, json.dumps(schema))
        for n in range(3):
            rec = {"id": version * 10 + n, "name": f"u{n}", "legacy": 7, "email": f"e{n}", "score": 2.0}
            again.append(await ser({f["name"]: rec[f["name"]] for f in schema["fields"]}, _ctx("users")))
    assert again * 3 + [None] == frames
    deser = await AsyncAvroDeserializer(aclient)
    batch = await deser.deserialize_arrow(frames, _ctx("users"), errors="collect")
    ref = AvroDeserializer(sync_client).deserialize_arrow(frames, _ctx("users"), errors="collect")
    assert pa.record_batch(batch).equals(pa.record_batch(ref)) and batch.num_rows == 28
    # a second call is a cache hit for every writer: the same batch
    assert pa.record_batch(await deser.deserialize_arrow(frames[:-1], _ctx("users"))).equals(
        pa.record_batch(ref).slice(0, 27))
    if implementation.name == "native":  # (the tombstone keeps the first call per-record)
        (native,) = deser._engine.__dict__["_arrow_native"].values()
        assert native.taken >= 1

    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    jser = await AsyncJSONSerializer(schema, aclient)
    jframes = [await jser({"a": n}, _ctx()) for n in range(3)]
    jdeser = await AsyncJSONDeserializer(schema, None, aclient)
    assert _pylist(await jdeser.deserialize_arrow(jframes, _ctx())) == [{"a": n} for n in range(3)]


def test_a_union_branch_is_the_record_only_with_all_its_fields(implementation: Any) -> None:
    # {} is not the record R (whose field x is absent), it is the map: the branch fastavro wrote
    schema = {"type": "record", "name": "Amb", "fields": [{"name": "u", "type": [
        "null", {"type": "record", "name": "R", "fields": [{"name": "x", "type": ["null", "string"]}]},
        {"type": "map", "values": "string"}]}]}
    _roundtrip(schema, [{"u": {}}, {"u": {"x": None}}, {"u": {"k": "v"}}, {"u": None}])


def test_serialize_arrow_reads_sliced_unions_and_null_maps_as_their_rows(implementation: Any) -> None:
    # a slice of a union column (pyarrow 16's type_codes ignore the slice's offset); a null map
    # or list with entries left behind it by its producer (not a row's: never written)
    schema = {"type": "record", "name": "SU", "fields": [
        {"name": "u", "type": ["boolean", "int", "string"]},
        {"name": "m", "type": ["null", {"type": "map", "values": "long"}]},
        {"name": "l", "type": ["null", {"type": "array", "items": "long"}]}]}
    client = _client("su")
    ser = AvroSerializer(client, json.dumps(schema))
    rows = [{"u": u, "m": None, "l": None} for u in (True, 5, "x", False, -1, "")]
    frames = [ser(r, _ctx()) for r in rows]
    table = pa.table(AvroDeserializer(client).deserialize_arrow(frames, _ctx()))
    assert ser.serialize_arrow(table.slice(2), _ctx()) == frames[2:]
    assert ser.serialize_arrow(pa.concat_tables([table.slice(0, 3), table.slice(3)]), _ctx()) == frames
    offsets = pa.array([0, 2, 4, 5], pa.int32()).buffers()[1]
    validity = pa.array([True, False, True]).buffers()[1]
    items = pa.array([1, 2, 3, 4, 5], pa.int64())
    entries = pa.StructArray.from_arrays([pa.array(list("abcde")), items], fields=[
        pa.field("key", pa.utf8(), False), pa.field("value", pa.int64(), False)])
    maps = pa.Array.from_buffers(pa.map_(pa.field("key", pa.utf8(), False), pa.field("value", pa.int64(), False)), 3,
                                 [validity, offsets], children=[entries])
    lists = pa.Array.from_buffers(pa.list_(pa.field("item", pa.int64(), False)), 3, [validity, offsets],
                                  children=[items])
    odd = pa.table({"u": table.column("u").combine_chunks().slice(0, 3), "m": maps, "l": lists})
    want = [{"u": True, "m": {"a": 1, "b": 2}, "l": [1, 2]}, {"u": 5, "m": None, "l": None},
            {"u": "x", "m": {"e": 5}, "l": [5]}]
    assert ser.serialize_arrow(odd, _ctx()) == [ser(r, _ctx()) for r in want]


def test_serialize_arrow_of_a_record_without_fields(implementation: Any) -> None:
    # rows but no columns: each row is {} (the batch's length, not its columns', counts them)
    schema = {"type": "record", "name": "Empty", "fields": []}
    ser = AvroSerializer(_client("empty"), json.dumps(schema))
    table = pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array([{}, {}], pa.struct([])))])
    assert ser.serialize_arrow(table, _ctx()) == [ser({}, _ctx())] * 2
