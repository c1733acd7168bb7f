"""serdes.arrow's native columnar Avro encoder (rust/src/arrow_encode/, serdes/arrow/_native_encoder.py):
``serialize_arrow`` writes, row for row, the bytes ``serializer(row, ctx)`` writes; every call it
does not take -- a null where the schema has none, an enum value that is not a symbol, a value
pyarrow's conversion cannot make, invalid Arrow data, a panic -- ends in the per-record path's
result and typed errors, never in another. Each case runs on both paths (``NATIVE_ROWS`` off: the
per-record path, the reference) and compares them, and with the per-record serializer."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import struct
import uuid
from typing import Any, Dict, List, Optional, Tuple

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from serdes import BatchError, ValidationError  # noqa: E402
from serdes.arrow import _native_encoder  # noqa: E402
from serdes.arrow._avro import avro_shape  # noqa: E402
from serdes.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from serdes.avro._generator import Unsupported  # noqa: E402
from tests.support.avro_strategies import _named_table, schemas, values  # noqa: E402
from tests.support.implementations import native_module, require_native  # noqa: E402
from tests.support.small_stack import on_small_stack  # noqa: E402
from tests.unit.test_arrow import ALL_TYPES, _all_types_record  # noqa: E402

CTX = SerializationContext("t", MessageField.VALUE)
UTC = datetime.timezone.utc


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def _client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://arrow-enc-{uuid.uuid4().hex}"})


def _rows_of(ser: Any) -> Any:
    """The native encoder ``ser`` built (``None``: its schema is not one it takes)."""
    return ser.__dict__.get("_arrow_native_rows")


def _outcome(ser: Any, data: Any, ctx: Optional[SerializationContext], errors: str) -> Tuple[str, Any]:
    """("ok", frames) or ("error", (type, [(row, error type), ...]))."""
    try:
        return "ok", ser.serialize_arrow(data, ctx, errors=errors)
    except BatchError as e:
        return "error", (BatchError, [(i, type(x)) for i, x in e.errors])
    except Exception as e:  # noqa: BLE001 - compared by type with the reference
        return "error", (type(e), None)


def _both(schema: Any, data: Any, ctx: Optional[SerializationContext] = CTX, errors: str = "raise",
          conf: Optional[Dict[str, Any]] = None, client: Any = None) -> Tuple[Tuple[str, Any], Any]:
    """The native call's outcome, checked equal to the per-record path's on a serializer of its
    own (the registry's answers the same), and the native encoder it used."""
    client = client or _client()
    ser = AvroSerializer(client, json.dumps(schema), conf=conf)
    got = _outcome(ser, data, ctx, errors)
    ref_ser = AvroSerializer(client, json.dumps(schema), conf=conf)
    _native_encoder.NATIVE_ROWS = False
    try:
        ref = _outcome(ref_ser, data, ctx, errors)
    finally:
        _native_encoder.NATIVE_ROWS = True
    if got[0] == "ok" and errors == "collect":
        # typed errors in place: compared by type (their wording is the per-record encoders')
        got = ("ok", [type(v) if isinstance(v, Exception) else v for v in got[1]])
        ref = ("ok", [type(v) if isinstance(v, Exception) else v for v in ref[1]])
    assert got == ref
    return got, _rows_of(ser)


def _per_record(schema: Any, rows: List[Any], ctx: SerializationContext = CTX) -> List[Any]:
    ser = AvroSerializer(_client(), json.dumps(schema))
    return [ser(r, ctx) for r in rows]


def _table(schema: Any, records: List[Any]) -> Any:
    """The records as Arrow columns: the per-record path's (``avro_shape``) column building."""
    shape = avro_shape(_parse(schema))
    struct_ = shape.build(records if not shape.wrapped else [{"value": r} for r in records], "")
    if struct_.type.num_fields == 0:
        # a record of no fields: columns cannot carry its row count, the batch can
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(struct_)])
    # (column by column: pyarrow 26's from_struct_array flattens, which aborts on a union child)
    return pa.Table.from_arrays([struct_.field(i) for i in range(struct_.type.num_fields)],
                                schema=pa.schema(list(struct_.type)))


def _parse(schema: Any) -> Any:
    from fastavro import parse_schema

    return parse_schema(schema)


def _native_taken(schema: Any, records: List[Any], data: Any = None) -> List[bytes]:
    """Encode ``records`` (or ``data`` holding them) natively; check the native encoder took the
    call, and the bytes are the per-record serializer's and the per-record path's."""
    data = _table(schema, records) if data is None else data
    (kind, frames), native = _both(schema, data)
    assert kind == "ok", frames
    assert native is not None and native.taken == 1 and native.declined == 0, native and native.refused
    assert frames == _per_record(schema, records)
    return frames  # type: ignore[no-any-return]


NO_UNION = dict(ALL_TYPES, fields=[f for f in ALL_TYPES["fields"] if f["name"] != "un"])


def test_every_type_but_a_general_union_is_written_natively() -> None:
    records = [{k: v for k, v in _all_types_record(n).items() if k != "un"} for n in range(30)]
    client = _client()
    ser = AvroSerializer(client, json.dumps(NO_UNION))
    frames = [ser(r, CTX) for r in records]
    # the columns the deserializer gives (native columnar decoder), and back
    table = pa.table(AvroDeserializer(client).deserialize_arrow(frames, CTX))
    assert _native_taken(NO_UNION, records, table) == frames


def test_a_general_union_keeps_the_schema_on_the_per_record_path() -> None:
    records = [_all_types_record(n) for n in range(8)]
    (kind, frames), native = _both(ALL_TYPES, _table(ALL_TYPES, records))
    assert kind == "ok" and frames == _per_record(ALL_TYPES, records)
    assert native is None  # the lowering declined the schema
    with pytest.raises(Unsupported):
        _native_encoder.lower(_parse(ALL_TYPES), avro_shape(_parse(ALL_TYPES)))


STANDARD = {"type": "record", "name": "S", "fields": [
    {"name": "id", "type": "long"}, {"name": "n", "type": "int"}, {"name": "s", "type": "string"},
    {"name": "b", "type": "bytes"}, {"name": "ok", "type": "boolean"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "opt", "type": ["null", "string"]},
    {"name": "optr", "type": ["long", "null"]}]}


def _standard(n: int) -> Dict[str, Any]:
    return {"id": n * 10**12, "n": -n, "s": "é" * (n % 4), "b": bytes(range(n % 7)), "ok": n % 2 == 0,
            "f": 1.5 * n, "d": n / 7, "opt": None if n % 3 else f"o{n}", "optr": None if n % 2 else n}


def test_sliced_and_chunked_tables() -> None:
    records = [_standard(n) for n in range(40)]
    table = _table(STANDARD, records)
    frames = _per_record(STANDARD, records)
    assert _native_taken(STANDARD, records[7:30], table.slice(7, 23)) == frames[7:30]
    chunked = pa.concat_tables([table.slice(0, 5), table.slice(5, 1), table.slice(6, 0), table.slice(6)])
    assert chunked.column(0).num_chunks > 1
    assert _native_taken(STANDARD, records, chunked) == frames
    # a record batch, and objects that only have the PyCapsule interface
    assert _native_taken(STANDARD, records, table.to_batches()[0]) == frames

    class Stream:
        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return table.__arrow_c_stream__(requested_schema)

    class Batch:
        def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
            return table.to_batches()[0].__arrow_c_array__(requested_schema)

    assert _native_taken(STANDARD, records, Stream()) == frames
    assert _native_taken(STANDARD, records, Batch()) == frames


def test_boundaries_nan_and_unicode() -> None:
    f32 = [struct.unpack("<f", struct.pack("<I", bits))[0] for bits in (0x7F800001, 0xFF800123, 0x7FC00000)]
    floats = [0.0, -0.0, math.inf, -math.inf, math.nan, 3.4028234663852886e38, 1e-45] + f32
    doubles = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]
    strings = ["", "a", "é", "€", "\U0001F600", "\x00", "\ud7ff", "x" * 200]
    records = [{"id": [-(2**63), 2**63 - 1, 0, -1, 63, 64, -64, -65][n % 8],
                "n": [-(2**31), 2**31 - 1, 0, -1][n % 4], "s": strings[n % len(strings)], "b": b"\x00\xff" * (n % 3),
                "ok": n % 3 == 0, "f": floats[n % len(floats)], "d": doubles[n % len(doubles)],
                "opt": strings[(n + 1) % len(strings)], "optr": None} for n in range(40)]
    table = _table(STANDARD, records)
    # NaN payloads the way Arrow holds them (a float32 signalling NaN, a float64 NaN with a payload)
    odd_f32 = pa.array(struct.unpack("<4f", struct.pack("<4I", 0x7F800001, 0xFFBFFFFF, 0x7FC00001, 0x00000001)),
                       pa.float32())
    odd_f64 = pa.array(struct.unpack("<2d", struct.pack("<2Q", 0x7FF0000000000001, 0xFFF8000000000123)), pa.float64())
    odd = table.slice(0, 4).set_column(5, "f", odd_f32).set_column(
        6, "d", pa.concat_arrays([odd_f64, odd_f64]))
    (kind, frames), native = _both(STANDARD, odd)
    assert kind == "ok" and native.taken == 1
    assert frames == _per_record(STANDARD, odd.to_pylist())
    _native_taken(STANDARD, records, table)


ENUM = {"type": "record", "name": "E", "fields": [
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
    {"name": "oe", "type": ["null", "Color"]}]}


def test_enums_from_any_dictionary_or_strings() -> None:
    rows = [{"e": c, "oe": o} for c, o in [("BLUE", None), ("RED", "GREEN"), ("GREEN", "BLUE")]]
    frames = _per_record(ENUM, rows)
    # a dictionary of another order, with values no row uses (and one that is not a symbol)
    dictionary = pa.array(["PURPLE", "GREEN", "BLUE", "RED"])
    e = pa.DictionaryArray.from_arrays(pa.array([2, 3, 1], pa.int32()), dictionary)
    oe = pa.DictionaryArray.from_arrays(pa.array([None, 1, 2], pa.int32()), dictionary)
    assert _native_taken(ENUM, rows, pa.table({"e": e, "oe": oe})) == frames
    # plain strings: cast to a dictionary of their own
    assert _native_taken(ENUM, rows, pa.table({"e": [r["e"] for r in rows], "oe": [r["oe"] for r in rows]})) == frames
    # a value that is not a symbol: the per-record path's ValidationError for that row
    bad = pa.table({"e": ["RED", "PURPLE", "BLUE"], "oe": [None, None, "NAVY"]})
    for errors in ("raise", "collect"):
        (kind, out), native = _both(ENUM, bad, errors=errors)
        assert native.declined == 1 and "symbol" in native.refused[1]
    assert out[1] is ValidationError and out[2] is ValidationError and out[0] == frames[0][:5] + b"\x00\x00"
    # a null symbol in the dictionary is a null value
    nulls = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array([None, "RED"]))
    (kind, out), native = _both(ENUM, pa.table({"e": ["RED"] * 3, "oe": nulls}))
    assert kind == "ok" and native.taken == 1
    assert out == _per_record(ENUM, [{"e": "RED", "oe": o} for o in (None, "RED", None)])


def test_a_null_where_the_schema_has_none_is_the_per_record_error() -> None:
    table = _table(STANDARD, [_standard(n) for n in range(5)])
    holes = table.set_column(0, "id", pa.array([1, None, 3, None, 5], pa.int64()))
    for errors in ("raise", "collect"):
        (kind, out), native = _both(STANDARD, holes, errors=errors)
        assert native.declined == 1 and native.refused[0] == 1
    # (errors in place, compared by type)
    assert kind == "ok" and [v if v is ValidationError else type(v) for v in out] == [
        bytes, ValidationError, bytes, ValidationError, bytes]
    (kind, out), _ = _both(STANDARD, holes)
    assert kind == "error" and out == (BatchError, [(1, ValidationError), (3, ValidationError)])


NESTED = {"type": "record", "name": "N", "fields": [
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "I", "fields": [
        {"name": "sku", "type": "string"}, {"name": "q", "type": ["null", "int"]},
        {"name": "tags", "type": {"type": "map", "values": ["null", "long"]}}]}}},
    {"name": "maybe", "type": ["null", "I"]},
    {"name": "lists", "type": {"type": "array", "items": {"type": "array", "items": "double"}}},
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}}]}


def _nested(n: int) -> Dict[str, Any]:
    item = {"sku": f"s{n}", "q": None if n % 2 else n, "tags": {f"k{j}": (None if j % 2 else j) for j in range(n % 3)}}
    return {"items": [item] * (n % 3), "maybe": None if n % 2 else item, "lists": [[float(j)] * j for j in range(n % 4)],
            "m": {"": [], "é": ["x"] * (n % 2)} if n % 3 else {}}


def test_nested_records_lists_and_maps() -> None:
    records = [_nested(n) for n in range(25)]
    table = _table(NESTED, records)
    _native_taken(NESTED, records, table)
    _native_taken(NESTED, records[3:20], table.slice(3, 17))


def test_a_map_with_a_key_twice_is_the_per_record_path_s_dict() -> None:
    schema = {"type": "record", "name": "M", "fields": [{"name": "m", "type": {"type": "map", "values": "long"}}]}
    m = pa.array([[("a", 1), ("b", 2), ("a", 3)], [("x", 1)]], pa.map_(pa.utf8(), pa.int64()))
    (kind, out), native = _both(schema, pa.table({"m": m}))
    assert kind == "ok" and native.declined == 1 and "twice" in native.refused[1]
    assert out == _per_record(schema, [{"m": {"a": 3, "b": 2}}, {"m": {"x": 1}}])
    # many keys: the hashed check
    many = [(f"k{j}", j) for j in range(40)]
    (kind, out), native = _both(schema, pa.table({"m": pa.array([many, many + [("k3", 0)]], m.type)}))
    assert native.declined == 1 and out == _per_record(schema, [{"m": dict(many)}, {"m": dict(many + [("k3", 0)])}])


def test_null_lists_and_maps_with_entries_behind_them() -> None:
    # a producer may leave items behind a null list or map; neither path writes them
    schema = {"type": "record", "name": "L", "fields": [
        {"name": "l", "type": ["null", {"type": "array", "items": "long"}]},
        {"name": "m", "type": ["null", {"type": "map", "values": "long"}]}]}
    offsets = pa.array([0, 2, 4, 5], pa.int32()).buffers()[1]
    validity = pa.array([True, False, True]).buffers()[1]
    items = pa.array([1, 2, 3, 4, 5], pa.int64())
    lists = pa.Array.from_buffers(pa.list_(pa.field("item", pa.int64(), False)), 3, [validity, offsets],
                                  children=[items])
    entries = pa.StructArray.from_arrays([pa.array(list("abcde")), items], fields=[
        pa.field("key", pa.utf8(), False), pa.field("value", pa.int64(), False)])
    maps = pa.Array.from_buffers(pa.map_(pa.field("key", pa.utf8(), False), pa.field("value", pa.int64(), False)), 3,
                                 [validity, offsets], children=[entries])
    rows = [{"l": [1, 2], "m": {"a": 1, "b": 2}}, {"l": None, "m": None}, {"l": [5], "m": {"e": 5}}]
    (kind, out), native = _both(schema, pa.table({"l": lists, "m": maps}))
    assert kind == "ok" and native.taken == 1 and out == _per_record(schema, rows)


LOGICAL = {"type": "record", "name": "Lg", "fields": [
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltsu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}},
    {"name": "decf", "type": {"type": "fixed", "name": "DF", "size": 5, "logicalType": "decimal",
                              "precision": 11, "scale": 0}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
    {"name": "odd", "type": {"type": "long", "logicalType": "not-a-logical-type"}}]}

_WIDE = decimal.Context(prec=76)  # (the default context rounds to 28 digits)
_EDGE_DT = [datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 999000),
            datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), datetime.datetime(1970, 1, 1)]


def _logical(n: int) -> Dict[str, Any]:
    dt = _EDGE_DT[n % 4]
    return {
        "date": [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1)][n % 3],
        "tm": datetime.time(23, 59, 59, 999000) if n % 2 else datetime.time(0),
        "tu": datetime.time(23, 59, 59, 999999) if n % 2 else datetime.time(0, 0, 0, 1),
        "tsm": dt.replace(tzinfo=UTC), "tsu": dt.replace(tzinfo=UTC, microsecond=n % 1000), "ltsm": dt,
        "ltsu": dt.replace(microsecond=n),
        "dec": decimal.Decimal([10**38 - 1, -(10**38) + 1, 0, 128, -128, 255, -256][n % 7]).scaleb(-4, _WIDE),
        "decf": decimal.Decimal([10**11 - 1, -(10**11) + 1, 0, 1, -1, 127, -128, 255][n % 8]),
        "u": uuid.UUID(int=(n * 0x1234567890ABCDEF1234567890ABCDEF) % 2**128),
        "dur": (2**31 - 1 - n).to_bytes(4, "little") + n.to_bytes(4, "little") + (2**32 - 1 - n).to_bytes(4, "little"),
        "odd": -n}


def test_logical_types_and_their_boundaries() -> None:
    records = [_logical(n) for n in range(30)]
    _native_taken(LOGICAL, records)


@pytest.mark.parametrize("column, arrow_type, value", [
    ("date", pa.date32(), -719163),  # the day before date(1, 1, 1)
    ("tm", pa.time32("ms"), 86_400_000),  # pyarrow wraps it to midnight
    ("tu", pa.time64("us"), -1),
    ("tsm", pa.timestamp("ms", "+00:00"), 253_402_300_800_000),  # past datetime.max
    ("ltsu", pa.timestamp("us"), -62_135_596_800_000_001),
    ("dec", pa.decimal128(38, 4), 10**38),  # beyond the precision
    ("decf", pa.decimal128(11, 0), -(10**11)),
])
def test_values_python_cannot_hold_are_the_per_record_path_s(column: str, arrow_type: Any, value: Any) -> None:
    # row 1 holds the value (row 0 establishes the topic's encoder on the per-record path)
    table = _table(LOGICAL, [_logical(n) for n in range(3)])
    i = table.schema.get_field_index(column)
    good = table.column(i).combine_chunks()
    if pa.types.is_decimal(arrow_type):
        raw = b"".join(v.to_bytes(16, "little", signed=True) for v in (0, value, 0))
        bad = pa.Array.from_buffers(arrow_type, 3, [None, pa.py_buffer(raw)])
    else:
        bad = pa.array([0, value, 0], pa.int64() if arrow_type.bit_width == 64 else pa.int32()).view(arrow_type)
    col = pa.concat_arrays([good.slice(0, 1), bad.slice(1, 1), good.slice(2, 1)])
    (kind, out), native = _both(LOGICAL, table.set_column(i, column, col), errors="collect")
    assert native.declined == 1 and native.refused[0] == 1, native.refused


def test_a_negative_duration_is_the_per_record_path_s_error() -> None:
    table = _table(LOGICAL, [_logical(n) for n in range(2)])
    i = table.schema.get_field_index("dur")
    dur = pa.array([(1, 2, 3_000_000), (1, -1, 0)], pa.month_day_nano_interval())
    (kind, out), native = _both(LOGICAL, table.set_column(i, "dur", dur))
    assert kind == "error" and native.declined == 1 and native.refused[0] == 1


def test_a_schema_that_is_not_a_record() -> None:
    for schema, col, rows in [
        ("string", pa.array(["a", None, "é"]), ["a", None, "é"]),
        (["null", "long"], pa.array([None, 5, -1], pa.int64()), [None, 5, -1]),
        ({"type": "array", "items": "int"}, pa.array([[1], None, []], pa.list_(pa.field("item", pa.int32(), False))),
         [[1], None, []]),
    ]:
        (kind, out), native = _both(schema, pa.table({"value": col}))
        assert kind == "ok" and native.taken == 1, native.refused
        assert out == _per_record(schema, rows)
        assert out[rows.index(None)] is None  # serializer(None) is None, whatever the schema
    # an enum whose dictionary has a null: that value is None too
    enum = {"type": "enum", "name": "C", "symbols": ["A", "B"]}
    col = pa.DictionaryArray.from_arrays(pa.array([1, 0, 2], pa.int32()), pa.array(["A", None, "B"]))
    (kind, out), native = _both(enum, pa.table({"value": col}))
    assert kind == "ok" and native.taken == 1 and out == _per_record(enum, [None, "A", "B"])
    # every value null: nothing to encode (the per-record path gives the Nones)
    (kind, out), native = _both("string", pa.table({"value": pa.array([None, None], pa.utf8())}))
    assert out == [None, None] and native.taken == 0


def test_raw_bytes_schemas_stay_on_the_per_record_path() -> None:
    (kind, out), native = _both("bytes", pa.table({"value": [b"a", b"bc"]}))
    assert kind == "ok" and native is None and out == _per_record("bytes", [b"a", b"bc"])


def test_framing_follows_the_per_record_path() -> None:
    records = [_standard(n) for n in range(6)]
    table = _table(STANDARD, records)
    client = _client()
    # the first call of a (topic, field) registers through the per-record path; the key field
    # and another topic get their own subjects and ids
    for ctx in (SerializationContext("a", MessageField.VALUE), SerializationContext("a", MessageField.KEY),
                SerializationContext("b", MessageField.VALUE)):
        ser = AvroSerializer(client, json.dumps(STANDARD))
        assert ser.serialize_arrow(table, ctx) == [ser(r, ctx) for r in records]
        assert _rows_of(ser).taken == 1
    # no ctx (confluent-kafka's own call), use.latest.version, header framing: the per-record path
    from confluent_kafka.schema_registry import header_schema_id_serializer

    for conf, ctx in [(None, None), ({"use.latest.version": True, "auto.register.schemas": False}, CTX),
                      ({"schema.id.serializer": header_schema_id_serializer},
                       SerializationContext("h", MessageField.VALUE, []))]:
        if conf and conf.get("use.latest.version"):
            AvroSerializer(client, json.dumps(STANDARD))(records[0], ctx)  # registered
        _, native = _both(STANDARD, table, ctx, conf=conf, client=client)
        assert native.taken == 0 and native.declined == 1


def test_a_registry_failure_on_the_first_value_is_the_per_record_path_s() -> None:
    # auto.register.schemas off and nothing registered: the lookup fails, typed, as per record
    conf = {"auto.register.schemas": False}
    (kind, out), native = _both(STANDARD, _table(STANDARD, [_standard(1)]), conf=conf)
    assert kind == "error" and native.declined == 1


def test_errors_mode_is_checked() -> None:
    (kind, out), _ = _both(STANDARD, _table(STANDARD, [_standard(1)]), errors="skip")
    assert out == (ValueError, None)


def test_a_panic_is_caught_and_the_per_record_path_runs() -> None:
    mod = native_module()
    records = [_standard(n) for n in range(5)]
    table = _table(STANDARD, records)
    ser = AvroSerializer(_client(), json.dumps(STANDARD))
    frames = [ser(r, CTX) for r in records]
    assert ser.serialize_arrow(table, CTX) == frames  # the encoder built
    for arm in (1, 2):  # the import, then the writing
        mod._arm_panic(arm)
        try:
            assert ser.serialize_arrow(table, CTX) == frames
        finally:
            mod._arm_panic(0)
        assert "panicked" in _rows_of(ser).refused[1]
    assert ser.serialize_arrow(table, CTX) == frames and _rows_of(ser).taken == 2


def _encoder(schema: Any) -> Any:
    parsed = _parse(schema)
    nodes, root, wrapped = _native_encoder.lower(parsed, avro_shape(parsed))
    return native_module().AvroArrowEncoder(nodes, root, wrapped)


def _batch(**columns: Any) -> Any:
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def test_invalid_arrow_data_is_refused_before_it_is_read() -> None:
    # straight to the extension: the per-record path's pyarrow conversion is not for invalid data
    schema = {"type": "record", "name": "V", "fields": [{"name": "s", "type": "string"}]}
    enc = _encoder(schema)
    good = pa.array(["ab", "c"])
    values, _, _ = enc.encode(b"\x00\x00\x00\x00\x01", [_batch(s=good).__arrow_c_array__()])
    assert values == [b"\x00\x00\x00\x00\x01\x04ab", b"\x00\x00\x00\x00\x01\x02c"]

    def strings(offsets: List[int], data: bytes) -> Any:
        return pa.Array.from_buffers(pa.utf8(), len(offsets) - 1, [None, pa.py_buffer(
            struct.pack(f"<{len(offsets)}i", *offsets)), pa.py_buffer(data)])

    # (pyarrow checks offsets against the buffer and their sign itself, but not their order or UTF-8)
    for bad in (strings([0, 2, 1], b"abc"), strings([0, 3, 2], b"abc"), strings([0, 1, 3], b"a\xff\xfe")):
        values, row, why = enc.encode(b"\x00" * 5, [_batch(s=bad).__arrow_c_array__()])
        assert values is None and "invalid Arrow data" in why
    # a dictionary index beyond its dictionary
    enum = {"type": "record", "name": "V", "fields": [{"name": "e", "type": {"type": "enum", "name": "C",
                                                                             "symbols": ["A"]}}]}
    keys = pa.array([0, 5], pa.int32())
    bad_dict = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.utf8()), 2, keys.buffers(),
                                               pa.array(["A"]))
    values, row, why = _encoder(enum).encode(b"\x00" * 5, [_batch(e=bad_dict).__arrow_c_array__()])
    assert values is None and "invalid Arrow data" in why
    # columns of another type than the program's
    values, row, why = enc.encode(b"\x00" * 5, [_batch(s=pa.array([1], pa.int64())).__arrow_c_array__()])
    assert values is None and "utf8" in why


def test_malformed_programs_are_value_errors() -> None:
    mod = native_module()
    for nodes, root, wrapped in [
        ([("long",)], 1, True), ([("record", [0])], 0, False), ([("array", 3), ("record", [0])], 1, False),
        ([("nullable", 0, 0, 0)], 0, True), ([("what",)], 0, True), ([("decimal", 40, 0, None)], 0, True),
        ([("decimal", 10, 2, 17)], 0, True), ([("enum", [("A", 0), ("A", 1)])], 0, True),
        ([("long",)], 0, False), ([("long",), ("record", [0])], 1, True), ([()], 0, True), (["long"], 0, True),
    ]:
        with pytest.raises(ValueError):
            mod.AvroArrowEncoder(nodes, root, wrapped)


def _deep(depth: int) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "record", "name": f"R{depth}", "fields": [{"name": "v", "type": "long"}]}
    for d in range(depth - 1, 0, -1):
        schema = {"type": "record", "name": f"R{d}", "fields": [{"name": "r", "type": schema}]}
    return schema


def test_a_thread_without_the_stack_for_the_schema_takes_the_per_record_path() -> None:
    schema = _deep(50)
    record: Dict[str, Any] = {"v": 7}
    for _ in range(49):
        record = {"r": record}
    table = _table(schema, [record])
    ser = AvroSerializer(_client(), json.dumps(schema))
    frames = [ser(record, CTX)]
    assert ser.serialize_arrow(table, CTX) == frames and _rows_of(ser).taken == 1
    out = [on_small_stack(lambda: ser.serialize_arrow(table, CTX), kib=160)]  # the writer asks (50 + 16) * 4 KiB
    assert out == [frames] and _rows_of(ser).declined == 1 and "stack" in _rows_of(ser).refused[1]


# -- random schemas and data ------------------------------------------------------------------------

def _general_union(schema: Any, named: Dict[str, Any]) -> bool:
    if isinstance(schema, list):
        return len(schema) != 2 or "null" not in schema or any(_general_union(b, named) for b in schema)
    if isinstance(schema, dict):
        t = schema["type"]
        if t == "record":
            return any(_general_union(f["type"], named) for f in schema["fields"])
        if t == "array":
            return _general_union(schema["items"], named)
        if t == "map":
            return _general_union(schema["values"], named)
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_schemas_and_values(data: Any) -> None:
    schema = data.draw(schemas(max_depth=3))
    named = _named_table(schema, {})
    records = data.draw(st.lists(values(schema, named), min_size=1, max_size=6))
    table = _table(schema, records)
    expected = _per_record(schema, records)
    start = data.draw(st.integers(0, len(records) - 1))
    for sub, want in [(table, expected), (table.slice(start), expected[start:]),
                      (pa.concat_tables([table.slice(0, start), table.slice(start)]), expected)]:
        (kind, frames), native = _both(schema, sub)
        assert kind == "ok" and frames == want
        if native is not None:
            assert native.taken == 1, native.refused  # every valid value of a schema it takes
        else:
            assert _general_union(schema, named)
    # the first field's type as a schema of its own (not a record: one column `value`; its named
    # types are its own, defined before any other field's)
    inner = schema["fields"][0]["type"]
    values_ = [r[schema["fields"][0]["name"]] for r in records]
    if inner == "bytes" or isinstance(inner, dict) and inner["type"] == "bytes":
        return  # written raw: a decimal is not bytes there (test_raw_bytes_schemas...)
    if not avro_shape(_parse(inner)).wrapped:
        # a record (or null-or-record) schema: each row is a record, a table has no null row
        # (docs/arrow.md: only a schema that is not a record gives None for a null value)
        values_ = [v for v in values_ if v is not None]
        if not values_:
            return
    (kind, frames), native = _both(inner, _table(inner, values_))
    assert kind == "ok" and frames == _per_record(inner, values_)
    if native is not None and any(v is not None for v in values_):
        assert native.taken == 1, native.refused


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_schemas_with_nulls_anywhere(data: Any) -> None:
    # nulls where the schema may have none: both paths give the same frames or typed errors
    schema = data.draw(schemas(max_depth=2))
    named = _named_table(schema, {})
    records = data.draw(st.lists(values(schema, named), min_size=1, max_size=5))
    table = _table(schema, records)
    column = data.draw(st.integers(0, table.num_columns - 1))
    mask = pa.array(data.draw(st.lists(st.booleans(), min_size=len(records), max_size=len(records))))
    col = table.column(column).combine_chunks()
    if pa.types.is_union(col.type) or pa.types.is_null(col.type):
        return  # (a union column has no nulls of its own; a null column is all nulls)
    holed = col.take(pa.array([None if hole else i for i, hole in enumerate(mask.to_pylist())], pa.int64()))
    _both(schema, table.set_column(column, table.field(column).name, holed), errors="collect")


FLAT = dict(STANDARD, fields=STANDARD["fields"] + [
    {"name": "fl", "type": {"type": "array", "items": "float"}},
    {"name": "dm", "type": ["null", {"type": "map", "values": ["double", "null"]}]}])


@st.composite
def _flat_columns(draw: Any) -> Any:
    """Random columns of FLAT: any bit pattern of a float (NaN payloads, -0.0, subnormals), ints at
    and near their bounds, any text, nulls anywhere (also where the schema has none)."""
    n = draw(st.integers(1, 8))

    def column(values: Any, typ: Any) -> Any:
        return pa.array(draw(st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values,
                                      min_size=n, max_size=n)), typ)

    f32 = st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])
    f64 = st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])
    floats = pa.array(draw(st.lists(st.integers(0, 2**32 - 1), min_size=n * 2, max_size=n * 2)), pa.uint32())
    fl_items = floats.view(pa.float32())  # the bits as they are (pa.array would convert via float)
    cuts = sorted(draw(st.lists(st.integers(0, n * 2), min_size=n - 1, max_size=n - 1)))
    fl = pa.ListArray.from_arrays(pa.array([0, *cuts, n * 2], pa.int32()), fl_items,
                                  type=pa.list_(pa.field("item", pa.float32(), False)))
    dm_type = pa.map_(pa.field("key", pa.utf8(), False), pa.field("value", pa.float64(), True))
    dm = pa.array(draw(st.lists(st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.one_of(st.none(), f64),
                                                                       max_size=3).map(lambda d: list(d.items()))),
                                min_size=n, max_size=n)), dm_type)
    table = pa.table({
        "id": column(st.integers(-(2**63), 2**63 - 1), pa.int64()),
        "n": column(st.integers(-(2**31), 2**31 - 1), pa.int32()),
        "s": column(st.text(max_size=6), pa.utf8()), "b": column(st.binary(max_size=6), pa.binary()),
        "ok": column(st.booleans(), pa.bool_()), "f": column(f32, pa.float32()),
        "d": column(f64, pa.float64()), "opt": column(st.text(max_size=4), pa.utf8()),
        "optr": column(st.integers(-(2**63), 2**63 - 1), pa.int64()), "fl": fl, "dm": dm})
    # float32 values from Python floats went through a conversion: set some raw bit patterns too
    raw = pa.array(draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n)), pa.uint32()).view(pa.float32())
    if draw(st.booleans()):
        table = table.set_column(5, "f", raw)
    start = draw(st.integers(0, n - 1))
    return table.slice(start) if draw(st.booleans()) else table


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_flat_columns())
def test_random_columns_of_primitives_lists_and_maps(table: Any) -> None:
    (kind, out), native = _both(FLAT, table, errors="collect")
    assert native is not None
    no_nulls_where_none = all(table.column(c).null_count == 0 for c in ("id", "n", "s", "b", "ok", "f", "d"))
    if no_nulls_where_none:
        assert native.taken == 1, native.refused
        rows = [dict(r, dm=None if r["dm"] is None else dict(r["dm"])) for r in table.to_pylist()]
        if all(len(r["dm"] or {}) == len(m or []) for r, m in zip(rows, table.column("dm").to_pylist(), strict=True)):
            assert out == _per_record(FLAT, rows)
