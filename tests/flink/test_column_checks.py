"""The per-column value checks of read_debezium (``serdes/flink/_column_checks.py``), one type at a
time, without a job: each Flink type's bounds (the value at the bound passes, one past it is a
``ColumnValueError`` naming the column), and that the decode operator applies them to every column
-- metadata columns too -- so the value follows ``on_error`` (tests/flink/test_hostile_cdc.py runs
the same cases in real MiniCluster jobs)."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import pickle

import cloudpickle
import pytest
from pyflink.common import Row, Types

import serdes
from serdes import flink as sf
from serdes.flink._column_checks import FLOAT32_MAX, column_checks, declare_decimal, value_check
from serdes.flink._records import bytes_type, row_named

from tests.support import debezium_samples as ds
from tests.support.flink_context import RuntimeContext

REG = "http://127.0.0.1:1"  # never contacted


def _check(t, v):
    return value_check(t, "col")(v)


def _refused(t, v, match):
    with pytest.raises(serdes.ColumnValueError, match=match) as info:
        _check(t, v)
    assert info.value.column.startswith("col")
    return info.value


@pytest.mark.parametrize("t, sql, bits", [(Types.BYTE(), "TINYINT", 8), (Types.SHORT(), "SMALLINT", 16),
                                          (Types.INT(), "INT", 32), (Types.LONG(), "BIGINT", 64)])
def test_integer_ranges(t, sql, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    assert _check(t, lo) == lo and _check(t, hi) == hi and _check(t, None) is None
    for v in (lo - 1, hi + 1):
        err = _refused(t, v, f"outside {sql}'s range")
        assert str(v) in str(err) and "column 'col'" in str(err)
    _refused(t, True, "a bool is not an integer")
    _refused(t, "1", "a str is not an integer")
    _refused(t, 1.5, "1.5 is not an integer")
    _refused(t, math.inf, "is not an integer")
    _refused(t, math.nan, "is not an integer")
    got = _check(t, 7.0)                          # JSON Schema's integer admits 7.0: the same number
    assert got == 7 and type(got) is int
    _refused(t, float(hi) * 4, f"outside {sql}'s range")


def test_huge_integer_is_described_not_printed():
    err = _refused(Types.LONG(), 1 << 100_000, "an integer of 100001 bits")
    assert len(str(err)) < 300


def test_float_and_double_ranges():
    f, d = Types.FLOAT(), Types.DOUBLE()
    assert _check(f, FLOAT32_MAX) == FLOAT32_MAX and _check(f, -FLOAT32_MAX) == -FLOAT32_MAX
    _refused(f, 1e39, "outside FLOAT's range")
    _refused(f, -1e39, "outside FLOAT's range")
    assert _check(f, math.inf) == math.inf and math.isnan(_check(f, math.nan))   # FLOAT holds both
    assert _check(d, 1e308) == 1e308 and _check(d, -math.inf) == -math.inf
    got = _check(d, 3)
    assert got == 3.0 and type(got) is float
    _refused(d, 10 ** 400, "outside DOUBLE's range")           # int -> float overflows
    _refused(d, decimal.Decimal("1e400"), "outside DOUBLE's range")
    _refused(f, 10 ** 39, "outside FLOAT's range")
    _refused(d, True, "a bool is not a number")
    _refused(d, "1.0", "a str is not a number")


def test_boolean():
    assert _check(Types.BOOLEAN(), True) is True and _check(Types.BOOLEAN(), False) is False
    _refused(Types.BOOLEAN(), 1, "a int is not a boolean")
    _refused(Types.BOOLEAN(), "true", "a str is not a boolean")


def test_string():
    assert _check(Types.STRING(), "ascii") == "ascii" and _check(Types.STRING(), "äöü ✓") == "äöü ✓"
    _refused(Types.STRING(), "ok \ud800", "not valid Unicode \\(a lone surrogate at index 3\\)")
    _refused(Types.STRING(), 5, "a int is not a string")          # e.g. an unknown Protobuf enum number
    _refused(Types.STRING(), b"x", "a bytes is not a string")


def test_bytes():
    t = bytes_type()
    assert _check(t, b"\x00\xff") == b"\x00\xff"
    got = _check(t, bytearray(b"ab"))
    assert got == b"ab" and type(got) is bytes
    _refused(t, "ab", "a str is not bytes")


def test_decimal_declared_precision_and_scale():
    t = declare_decimal(Types.BIG_DEC(), 4, 2)
    assert t == Types.BIG_DEC()                      # the Flink type itself is unchanged
    for ok in ("99.99", "-99.99", "0.00", "0.5", "0", "0E+5"):
        assert _check(t, decimal.Decimal(ok)) == decimal.Decimal(ok)
    _refused(t, decimal.Decimal("100.00"), r"do not fit the declared decimal\(4, 2\)")
    _refused(t, decimal.Decimal("0.001"), r"do not fit the declared decimal\(4, 2\)")
    _refused(t, decimal.Decimal("1E+722469"), r"do not fit the declared decimal\(4, 2\)")
    _refused(t, decimal.Decimal("NaN"), "not a finite decimal")
    _refused(t, decimal.Decimal("-Infinity"), "not a finite decimal")
    _refused(t, 1.5, "a float is not a decimal")
    # no declared precision: any finite decimal Java's BigDecimal can parse
    free = Types.BIG_DEC()
    assert _check(free, decimal.Decimal("1E+722469")) == decimal.Decimal("1E+722469")
    _refused(free, decimal.Decimal("1E+3000000000"), "exponent 3000000000 is outside")


def test_avro_decimal_columns_carry_their_declared_precision():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}}]}
    [check] = column_checks(sf.avro_row_type_info(schema))
    assert check(decimal.Decimal("12.34")) == decimal.Decimal("12.34")
    with pytest.raises(serdes.ColumnValueError, match=r"column 'amount'.*decimal\(4, 2\)"):
        check(decimal.Decimal("123.45"))


def test_dates_times_timestamps():
    d, t, ts = Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP()
    assert _check(d, datetime.date(9999, 12, 31)) == datetime.date(9999, 12, 31)
    assert _check(d, datetime.date(1, 1, 1)) == datetime.date(1, 1, 1)
    _refused(d, datetime.datetime(2024, 1, 1, 12), "a datetime is not a date")   # would drop the time
    _refused(d, 19000, "a int is not a date")
    assert _check(t, datetime.time(23, 59, 59, 999000)) == datetime.time(23, 59, 59, 999000)
    _refused(t, 86_400_000_001, "a int is not a time of day")
    # PyFlink's SQL_TIME / SQL_TIMESTAMP coders keep milliseconds: more digits are refused, not cut
    _refused(t, datetime.time(23, 59, 59, 999999), "sub-millisecond digits, which SQL_TIME cannot hold")
    _refused(ts, datetime.datetime(2024, 1, 1, 0, 0, 0, 1), "sub-millisecond digits, which SQL_TIMESTAMP")
    assert _check(ts, datetime.datetime(9999, 12, 31, 23, 59)) == datetime.datetime(9999, 12, 31, 23, 59)
    _refused(ts, 1_700_000_000_000, "a int is not a timestamp")
    _refused(ts, datetime.date(2024, 1, 1), "a date is not a timestamp")


def test_decimal_trailing_zeros_below_the_scale_are_no_digits():
    """Flink's DECIMAL(p, s) sets the scale exactly: 1.5000 fits decimal(2, 1), 1.51 does not."""
    t = declare_decimal(Types.BIG_DEC(), 2, 1)
    assert _check(t, decimal.Decimal("1.5000")) == decimal.Decimal("1.5000")
    _refused(t, decimal.Decimal("1.51"), r"do not fit the declared decimal\(2, 1\)")
    _refused(t, decimal.Decimal("10.0"), r"do not fit the declared decimal\(2, 1\)")


def test_java_time_dates_times_timestamps_and_instants():
    """The types read_debezium gives semantic types (LocalTimeTypeInfo, Types.INSTANT())."""
    from pyflink.common.time import Instant
    from pyflink.common.typeinfo import LocalTimeTypeInfo as L

    d, t, ts = L(L.TimeType.LOCAL_DATE), L(L.TimeType.LOCAL_TIME), L(L.TimeType.LOCAL_DATE_TIME)
    assert _check(d, datetime.date(1, 1, 1)) == datetime.date(1, 1, 1)
    _refused(d, datetime.datetime(2024, 1, 1), "a datetime is not a date")
    assert _check(t, datetime.time(23, 59, 59, 999000)) == datetime.time(23, 59, 59, 999000)
    _refused(t, datetime.time(1, tzinfo=datetime.timezone.utc), "a time with a time zone is not a TIME")
    _refused(t, 5, "a int is not a time of day")
    assert _check(ts, datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)).microsecond == 999999
    # PyFlink's LocalDateTime coder writes the fields: a zone would be dropped unseen
    _refused(ts, datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), "with a time zone is not a TIMESTAMP")
    _refused(ts, datetime.date(2024, 1, 1), "a date is not a timestamp")
    i = Types.INSTANT()
    assert _check(i, Instant(-62_135_596_800, 0)) == Instant(-62_135_596_800, 0)
    _refused(i, datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), "not an Instant")
    _refused(i, Instant(0, 1_000_000_000), "is not a Java Instant")
    _refused(i, Instant(10**20, 0), "is not a Java Instant")
    _refused(i, Instant(0.5, 0), "is not a Java Instant")


def test_nested_row_list_map_name_the_path():
    inner = row_named(["zip", "tags"], [Types.INT(), Types.LIST(Types.STRING())])
    t = row_named(["address"], [inner])
    check = value_check(t, "col")
    ok = Row(Row(12345, ["a", "b"]))
    assert check(ok) is ok
    with pytest.raises(serdes.ColumnValueError, match=r"column 'col.address.zip': 4294967296 is outside INT") as info:
        check(Row(Row(1 << 32, [])))
    assert info.value.column == "col.address.zip"
    with pytest.raises(serdes.ColumnValueError, match=r"column 'col.address.tags': element 1 is null"):
        check(Row(Row(1, ["a", None])))
    with pytest.raises(serdes.ColumnValueError, match=r"column 'col.address.tags\[\]': a int is not a string"):
        check(Row(Row(1, ["a", 2])))
    with pytest.raises(serdes.ColumnValueError, match="a dict is not a row"):
        check(Row({"zip": 1}))
    with pytest.raises(serdes.ColumnValueError, match="a row of 1 fields, not 2"):
        check(Row(Row(1)))
    m = Types.MAP(Types.STRING(), Types.LONG())
    assert _check(m, {"a": 1, "b": None}) == {"a": 1, "b": None}              # null values: fine
    _refused(m, {None: 1}, "a null map key")
    _refused(m, {"a": 1 << 63}, "outside BIGINT's range")
    _refused(m, [("a", 1)], "a list is not a map")
    # a basic / object array holds null elements, a LIST does not
    assert _check(Types.OBJECT_ARRAY(Types.STRING()), ["a", None]) == ["a", None]
    _refused(Types.LIST(Types.INT()), [1, None], "element 1 is null")
    assert _check(Types.LIST(Types.LONG()), (1, 2.0)) == [1, 2]


def test_a_type_without_a_check_is_refused_when_the_job_is_built():
    with pytest.raises(ValueError, match="no value check for the Flink type"):
        value_check(Types.PICKLED_BYTE_ARRAY(), "col")


def test_checks_pickle():
    checks = column_checks(row_named(["a", "b"], [Types.LONG(), Types.LIST(Types.STRING())]))
    back = pickle.loads(cloudpickle.dumps(checks))
    with pytest.raises(serdes.ColumnValueError, match="column 'a'"):
        back[0](1 << 63)
    assert back[1](["x"]) == ["x"]


# -- the decode operator applies them --------------------------------------------------------------

PERMISSIVE_JSON = json.dumps({"type": "object", "properties": {
    "before": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}]},
    "after": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}}}]},
    "source": ds.JSON_SOURCE, "op": {"type": "string"}}})


def _function(spec, on_error, metadata=None, mode="retract", key=None):
    from serdes.flink._debezium import DebeziumDecodeFunction, _after_row, _metadata_spec

    spec, _, conv = _after_row(spec, "t", None)
    fn = DebeziumDecodeFunction(spec, key, conv, _metadata_spec(metadata), mode, on_error=on_error)
    fn = pickle.loads(cloudpickle.dumps(fn))
    ctx = RuntimeContext()
    fn.open(ctx)
    return fn, ctx.group.counters


def _feed(fn, envelopes, keys=None):
    """Run the operator on decoded envelopes (the deserializer replaced by a lookup)."""
    values = dict(enumerate(envelopes))
    fn._value_de = lambda data, ctx: values[ctx.offset]
    if keys is not None:
        fn._key_de = lambda data, ctx: keys[ctx.offset]
    out = []
    for i in range(len(envelopes)):
        out += list(fn.process_element(("t", 0, i, 0, b"k" if keys else None, b"v", None), None))
    return out


def _envelope(op, before, after, **source):
    return {"op": op, "before": before, "after": after, "source": dict(ds.source(1), **source)}


def test_operator_skips_and_counts_values_the_columns_cannot_hold():
    fn, counters = _function(sf.json_schema(REG, PERMISSIVE_JSON), "skip", metadata=["lsn"])
    rows = _feed(fn, [
        _envelope("c", None, {"id": 1, "name": "a"}),
        _envelope("c", None, {"id": 1 << 63, "name": "overflow"}),
        _envelope("c", None, {"id": 2, "name": "bad lsn"}, lsn=1 << 64),
        _envelope("c", None, {"id": 3.0, "name": "integral float"}),
        _envelope("c", None, {"id": 4, "name": "x\udc00"}),
        _envelope("c", None, {"id": 5, "name": 5}),
    ])
    assert [tuple(r) for r in rows] == [(1, "a", ds.source(1)["lsn"]), (3, "integral float", ds.source(1)["lsn"])]
    assert type(rows[1][0]) is int
    assert counters["serdes_failed"].n == 4


def test_operator_fails_with_the_column_and_the_record_coordinates():
    fn, _ = _function(sf.json_schema(REG, PERMISSIVE_JSON), "fail", metadata={"src_lsn": "lsn"})
    with pytest.raises(serdes.ColumnValueError) as info:
        _feed(fn, [_envelope("c", None, {"id": 1, "name": "a"}), _envelope("c", None, {"id": 1 << 63, "name": "a"})])
    err = info.value
    assert err.column == "id" and (err.location.topic, err.location.partition, err.location.offset) == ("t", 0, 1)
    assert "9223372036854775808 is outside BIGINT's range" in str(err)
    fn, _ = _function(sf.json_schema(REG, PERMISSIVE_JSON), "fail", metadata={"src_lsn": "lsn"})
    with pytest.raises(serdes.ColumnValueError, match="column 'src_lsn'"):
        _feed(fn, [_envelope("c", None, {"id": 1, "name": "a"}, lsn=1 << 64)])


def test_operator_dead_letters_them():
    from serdes.flink._records import DEAD_LETTER_TAG

    fn, counters = _function(sf.json_schema(REG, PERMISSIVE_JSON), "dead_letter")
    out = _feed(fn, [_envelope("u", {"id": 1, "name": "a"}, {"id": 1 << 64, "name": "a"})])
    [(tag, row)] = out
    assert tag == DEAD_LETTER_TAG and row[8] == "ColumnValueError" and "column 'id'" in row[7]
    assert counters["serdes_failed"].n == 1


def test_protobuf_unsigned_64_bit_columns_are_checked():
    from serdes_test.dbz_counters_pb2 import Envelope, Value

    fn, counters = _function(sf.protobuf(Envelope, REG), "skip")
    assert fn.after_names == ["id", "hits", "total"]
    rows = _feed(fn, [Envelope(op="c", after=Value(id=1, hits=(1 << 63) - 1, total=5)),
                      Envelope(op="c", after=Value(id=2, hits=1 << 63, total=5)),
                      Envelope(op="c", after=Value(id=3, hits=1, total=(1 << 64) - 1))])
    assert [tuple(r) for r in rows] == [(1, (1 << 63) - 1, 5)]
    assert counters["serdes_failed"].n == 2


def test_the_missing_column_rule_applies_in_the_operator():
    fn, counters = _function(sf.json_schema(REG, PERMISSIVE_JSON), "skip")
    rows = _feed(fn, [_envelope("c", None, {}), _envelope("c", None, {"id": 1}),
                      _envelope("c", None, {"id": 2, "name": None})])
    assert [tuple(r) for r in rows] == [(2, None)]          # a null column is a null value
    assert counters["serdes_failed"].n == 2
    fn, _ = _function(sf.json_schema(REG, PERMISSIVE_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError, match="'after' has no column 'id', 'name'") as info:
        _feed(fn, [_envelope("c", None, {})])
    assert info.value.location.offset == 0


def test_upsert_delete_by_a_key_of_other_names_is_malformed():
    key_spec = sf.json_schema(REG, json.dumps({"type": "object", "properties": {"pk": {"type": "integer"}}}))
    fn, _ = _function(sf.json_schema(REG, PERMISSIVE_JSON), "fail", mode="upsert", key=key_spec)
    with pytest.raises(serdes.MalformedEnvelopeError, match="key field 'pk' is not a column"):
        _feed(fn, [_envelope("d", None, None)], keys={0: {"pk": 7}})
    fn, _ = _function(sf.json_schema(REG, PERMISSIVE_JSON), "fail", mode="upsert", key=key_spec)
    [row] = _feed(fn, [_envelope("d", None, None)], keys={0: {"id": 7}})
    assert tuple(row) == (7, None)


def test_json_columns_the_schema_lets_an_event_omit_read_as_null():
    """Schema evolution: a job on envelope v2 (nullable ``email``, not required) reads v1 events,
    which have no ``email``; the required columns still must be there."""
    fn, counters = _function(sf.json_schema(REG, ds.json_envelope(with_email=True)), "skip")
    assert fn.optional_columns == {"email"}
    rows = _feed(fn, [ds.envelope("c", None, ds.row(1, "a", 5), 1), ds.envelope("c", None, {"id": 2, "owner": "b"}, 2)])
    assert [tuple(r) for r in rows] == [(1, "a", 5, None)]
    assert counters["serdes_failed"].n == 1


def test_checks_are_derived_in_the_worker_not_pickled():
    """The job graph pickles the operator as earlier releases did (tests/unit/test_flink_pickles.py
    pins its bytes); ``open()`` derives the checks from the value spec's envelope schema, so a
    graph pickled by an earlier serdes gets them too."""
    from serdes.flink._debezium import DebeziumDecodeFunction, _after_row, _metadata_spec

    spec, _, conv = _after_row(sf.json_schema(REG, PERMISSIVE_JSON), "t", None)
    data = pickle.dumps(DebeziumDecodeFunction(spec, None, conv, _metadata_spec(None), on_error="fail"), protocol=5)
    assert b"_column_checks" not in data
    fn = pickle.loads(data)
    fn.open(RuntimeContext())
    with pytest.raises(serdes.ColumnValueError, match="column 'id'"):
        _feed(fn, [_envelope("c", None, {"id": -(1 << 63) - 1, "name": "a"})])


def test_protobuf_map_of_messages_reads_as_a_map_of_rows():
    """``map<string, Message>``: the MAP's value type is a ROW, so the values are converted to rows
    (a dict there would be a ColumnValueError for every record)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from serdes.cdc import message_to_dict
    from serdes.flink._debezium import _pb_converter, _pb_row_type

    fdp = descriptor_pb2.FileDescriptorProto(name="hostile_map.proto", package="hm", syntax="proto3")
    item = fdp.message_type.add(name="Item")
    item.field.add(name="n", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    row = fdp.message_type.add(name="Row")
    entry = row.nested_type.add(name="ItemsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                    type_name=".hm.Item", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    row.field.add(name="items", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                  type_name=".hm.Row.ItemsEntry", label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("hm.Row")
    msg = message_factory.GetMessageClass(desc)()
    msg.items["a"].n = 5
    msg.items["b"].n = 1 << 63
    conv, [check] = _pb_converter(desc), column_checks(_pb_row_type(desc))
    [items] = conv.convs
    with pytest.raises(serdes.ColumnValueError, match=r"column 'items\{\}.n': 9223372036854775808 is outside BIGINT"):
        check(items(message_to_dict(msg)["items"]))
    del msg.items["b"]
    got = check(items(message_to_dict(msg)["items"]))
    assert list(got) == ["a"] and tuple(got["a"]) == (5,)


# -- objects nested in a row: the missing-column rule one level down, and further -----------------

#: ``addr.zip`` is required (though nullable), ``addr.street`` not required but not nullable: both
#: must be there; ``addr.unit`` (not required, nullable) may be omitted
NESTED_ADDR = {"type": "object", "required": ["zip"], "properties": {
    "street": {"type": "string"}, "zip": {"type": ["string", "null"]},
    "unit": {"oneOf": [{"type": "null"}, {"type": "string"}]}}}
NESTED_ITEM = {"type": "object", "properties": {
    "sku": {"type": "string"},
    "dims": {"type": "object", "properties": {"w": {"type": "integer"}, "h": {"type": "integer"}}}}}
NESTED_ROW = {"type": "object", "properties": {
    "id": {"type": "integer"}, "addr": {"oneOf": [{"type": "null"}, NESTED_ADDR]},
    "items": {"type": "array", "items": NESTED_ITEM}}}
NESTED_JSON = json.dumps({"type": "object", "properties": {
    "before": {"oneOf": [{"type": "null"}, NESTED_ROW]}, "after": {"oneOf": [{"type": "null"}, NESTED_ROW]},
    "source": ds.JSON_SOURCE, "op": {"type": "string"}}})


def _nested(addr, items=()):
    return {"id": 1, "addr": addr, "items": list(items)}


def _item(sku, **dims):
    return {"sku": sku, "dims": dims}


def test_a_nested_object_without_a_property_is_malformed():
    fn, _ = _function(sf.json_schema(REG, NESTED_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError) as info:
        _feed(fn, [_envelope("c", None, _nested({"street": "s", "zip": "z"})), _envelope("c", None, _nested({}))])
    assert type(info.value) is serdes.MalformedEnvelopeError
    assert "create event (op 'c'): no column 'after.addr.street', 'after.addr.zip'" in info.value.reason
    assert (info.value.location.topic, info.value.location.offset) == ("t", 1)
    # required, though nullable: a null value is fine, a missing key is not
    fn, _ = _function(sf.json_schema(REG, NESTED_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError, match=r"no column 'after\.addr\.zip' \("):
        _feed(fn, [_envelope("c", None, _nested({"street": "s"}))])
    fn, _ = _function(sf.json_schema(REG, NESTED_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError, match=r"update event \(op 'u'\): no column 'before\.addr\.street'"):
        _feed(fn, [_envelope("u", _nested({"zip": None}), _nested({"street": "s", "zip": None}))])


def test_a_nested_missing_property_follows_on_error():
    from serdes.flink._records import DEAD_LETTER_TAG

    fn, counters = _function(sf.json_schema(REG, NESTED_JSON), "dead_letter")
    [(tag, row)] = _feed(fn, [_envelope("c", None, _nested({"zip": "z"}))])
    assert tag == DEAD_LETTER_TAG and row[8] == "MalformedEnvelopeError" and "'after.addr.street'" in row[7]
    assert counters["serdes_failed"].n == 1


def test_a_nested_optional_property_may_be_omitted():
    """``unit`` (not required, nullable) reads as None when absent; ``zip`` (required, nullable) and
    ``street`` (not required, not nullable) do not."""
    fn, counters = _function(sf.json_schema(REG, NESTED_JSON), "skip")
    rows = _feed(fn, [_envelope("c", None, _nested({"street": "s", "zip": None})),
                      _envelope("c", None, _nested({"street": "s", "unit": "4b"})),
                      _envelope("c", None, _nested({"zip": "z", "unit": "4b"})),
                      _envelope("c", None, _nested({"street": "s", "zip": "z", "unit": "4b"}))])
    assert [r[1].as_dict() for r in rows] == [{"street": "s", "zip": None, "unit": None},
                                              {"street": "s", "zip": "z", "unit": "4b"}]
    assert counters["serdes_failed"].n == 2


def test_an_array_element_without_a_property_names_its_index():
    fn, counters = _function(sf.json_schema(REG, NESTED_JSON), "skip")
    addr = {"street": "s", "zip": "z"}
    rows = _feed(fn, [_envelope("c", None, _nested(addr, [_item("a", w=1, h=2), {"dims": {"w": 1, "h": 2}}])),
                      _envelope("c", None, _nested(addr, [_item("a", w=1, h=2), _item("b", w=1, h=2), _item("c", w=3)])),
                      _envelope("c", None, _nested(addr, [_item("a", w=1, h=2)]))])
    assert len(rows) == 1 and counters["serdes_failed"].n == 2
    fn, _ = _function(sf.json_schema(REG, NESTED_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError, match=r"no column 'after\.items\[1\]\.sku' \("):
        _feed(fn, [_envelope("c", None, _nested(addr, [_item("a", w=1, h=2), {"dims": {"w": 1, "h": 2}}]))])
    fn, _ = _function(sf.json_schema(REG, NESTED_JSON), "fail")
    with pytest.raises(serdes.MalformedEnvelopeError, match=r"no column 'after\.items\[2\]\.dims\.h' \("):
        _feed(fn, [_envelope("c", None, _nested(addr, [_item("a", w=1, h=2), _item("b", w=1, h=2), _item("c", w=3)]))])


def test_complete_nested_envelopes_read_as_they_did():
    """Complete rows are what the converter made before the rule (json_schema_row_converter, which
    still reads a missing property as None); the incomplete one between them is refused."""
    from serdes.flink._debezium import _json_after

    lax = sf.json_schema_row_converter(_json_after(NESTED_JSON))
    complete = [_nested({"street": "s", "zip": None, "unit": "u"}, [_item("a", w=1, h=2), _item("b", w=None, h=0)]),
                {"id": 2, "addr": None, "items": None}, {"id": 3, "addr": {"street": "t", "zip": "z"}, "items": []}]
    fn, counters = _function(sf.json_schema(REG, NESTED_JSON), "skip")
    rows = _feed(fn, [_envelope("c", None, complete[0]), _envelope("c", None, complete[1]),
                      _envelope("c", None, _nested({"zip": "z"})), _envelope("c", None, complete[2])])
    assert [repr(r) for r in rows] == [repr(lax(a)) for a in complete]
    assert counters["serdes_failed"].n == 1


def test_the_nested_rule_is_the_converters():
    """The converter read_debezium builds for a JSON Schema envelope refuses the missing property
    itself; the error carries the path below the row, the operator adds ``after``/``before``."""
    from serdes.flink._debezium import _after_row
    from serdes.flink._rows import MissingPropertyError

    _, _, conv = _after_row(sf.json_schema(REG, NESTED_JSON), "t", None)
    back = pickle.loads(cloudpickle.dumps(conv))
    with pytest.raises(MissingPropertyError) as info:
        back(_nested({"street": "s", "zip": "z"}, [{"sku": "a", "dims": {"h": 1}}]))
    assert info.value.where("after") == ["after.items[0].dims.w"]
    assert back(_nested({"street": "s", "zip": "z"})).addr.unit is None


def test_a_graph_pickled_with_the_lax_converters_gets_the_nested_rule():
    """An operator pickled by an earlier serdes holds converters that read a missing nested property
    as None; ``open()`` derives the converters from the envelope schema, as it does the checks."""
    from serdes.flink._debezium import DebeziumDecodeFunction, _after_row, _json_after, _metadata_spec

    spec, _, _ = _after_row(sf.json_schema(REG, NESTED_JSON), "t", None)
    lax = sf.json_schema_row_converter(_json_after(NESTED_JSON))
    fn = pickle.loads(pickle.dumps(DebeziumDecodeFunction(spec, None, lax, _metadata_spec(None), on_error="fail")))
    fn.open(RuntimeContext())
    with pytest.raises(serdes.MalformedEnvelopeError, match=r"no column 'after\.addr\.street'"):
        _feed(fn, [_envelope("c", None, _nested({"zip": "z"}))])


def test_avro_micros_logical_types_keep_their_microseconds():
    """timestamp-micros / time-micros get the java.time types, whose coders keep microseconds;
    the millis ones keep PyFlink's SQL types (milliseconds)."""
    from pyflink.common.typeinfo import LocalTimeTypeInfo as L

    schema = {"type": "record", "name": "R", "fields": [
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}}]}
    row_t = sf.avro_row_type_info(schema)
    assert row_t.get_field_types()[:3] == [L(L.TimeType.LOCAL_DATE_TIME), L(L.TimeType.LOCAL_DATE_TIME),
                                           L(L.TimeType.LOCAL_TIME)]
    assert row_t.get_field_types()[3:] == [Types.SQL_TIMESTAMP(), Types.SQL_TIME()]
    # the values fastavro gives, through the row converter and each column's check
    utc = datetime.timezone.utc
    record = {"ts_us": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=utc),
              "lts_us": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
              "t_us": datetime.time(3, 4, 5, 123456),
              "ts_ms": datetime.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=utc),
              "t_ms": datetime.time(3, 4, 5, 123000)}
    row = sf.avro_row_converter(schema)(record)
    checked = [check(v) for check, v in zip(column_checks(row_t), row, strict=True)]
    assert checked == [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
                       datetime.time(3, 4, 5, 123456), datetime.datetime(2024, 1, 2, 3, 4, 5, 123000),
                       datetime.time(3, 4, 5, 123000)]
