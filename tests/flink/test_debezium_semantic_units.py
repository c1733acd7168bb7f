"""read_debezium(semantic_types=True): Debezium / Connect semantic types -> Flink column types, without a
job or servers.  Records go through a real Avro round trip on a mock registry and the decode operator's
``process_element`` (so errors carry the record's topic/partition/offset and follow ``on_error``).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import pickle
from decimal import Decimal

import cloudpickle
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Row, RowKind, Types

from serdes import ColumnValueError
from serdes import flink as sf
from serdes.cdc import PLACEHOLDER
from serdes.flink._debezium import DebeziumDecodeFunction, _after_row, _metadata_spec
from serdes.flink._semantic import FLINK_TYPES

from tests.support import debezium_samples as ds
from tests.support import debezium_semantic_samples as ss
from tests.support.flink_context import RuntimeContext

REG = "http://127.0.0.1:1"  # never contacted: the tests hand the operator a mock registry's serdes
TOPIC = "pg.public.kinds"


class Wire:
    """A mock registry with the envelope registered, and a decode operator built as the worker gets
    it (pickled), whose deserializer and writer-schema registry are the mock's."""

    def __init__(self, schema=None, on_error="fail", mode="retract", semantic_types=True, metadata=None):
        from serdes.avro import AvroDeserializer, AvroSerializer

        self.schema = schema or ss.envelope_schema()
        self.client = SchemaRegistryClient.new_client({"url": "mock://semantic-units"})
        spec = sf.avro(REG, self.schema)
        spec, _, conv = _after_row(spec, TOPIC, None, semantic_types)
        fn = DebeziumDecodeFunction(spec, None, conv, _metadata_spec(metadata), mode, on_error=on_error,
                                    semantic_types=semantic_types)
        self.fn = pickle.loads(cloudpickle.dumps(fn))
        self.ctx = RuntimeContext()
        self.fn.open(self.ctx)
        self.fn._value_de = AvroDeserializer(self.client, self.schema)
        self.fn._writer_registry = self.client
        self.serialize = AvroSerializer(self.client, self.schema)
        self.offset = 0

    def raw(self, event, schema=None):
        from serdes.avro import AvroSerializer

        ser = self.serialize if schema is None else AvroSerializer(self.client, schema)
        return ser(event, SerializationContext(TOPIC, MessageField.VALUE))

    def out(self, event, schema=None):
        """What the operator emits for one record: rows (kind, dict) or ('dead', error type, reason)."""
        self.offset += 1
        raw = self.raw(event, schema)
        got = []
        for r in self.fn.process_element((TOPIC, 2, self.offset, 0, None, raw, None), None):
            if isinstance(r, tuple):            # (DEAD_LETTER_TAG, row)
                got.append(("dead", r[1][8], r[1][7]))
            else:
                got.append((r.get_row_kind(), r.as_dict()))
        return got

    def row(self, after, op="r"):
        [(kind, row)] = self.out(ss.change(op, None, after))
        return row

    @property
    def failed(self):
        return self.ctx.group.counters["serdes_failed"].n


def _fn(schema=None, **kw):
    return Wire(schema, **kw)


def _after(**values):
    return dict(ss.PHYSICAL, **values)


def _one_column(name, avro_type):
    """An envelope with one column of ``avro_type`` (optional) beside id."""
    return ss.envelope_schema([(name, avro_type)])


# -- the row type ---------------------------------------------------------------------------------

def test_row_type_maps_each_semantic_type():
    t = sf.debezium_row_type(sf.avro(REG, ss.envelope_schema()), TOPIC)
    expected = ss.flink_types()
    assert t.get_field_names() == list(expected)
    for name, ft in zip(t.get_field_names(), t.get_field_types(), strict=True):
        assert ft == expected[name], name


def test_semantic_types_false_keeps_the_physical_types():
    t = sf.debezium_row_type(sf.avro(REG, ss.envelope_schema()), TOPIC, semantic_types=False)
    types = dict(zip(t.get_field_names(), t.get_field_types(), strict=True))
    assert types["born"] == Types.INT() and types["seen"] == Types.LONG() and types["seen_tz"] == Types.STRING()
    assert types["ratio"] == Types.ROW_NAMED(["scale", "value"], [Types.INT(), Types.PRIMITIVE_ARRAY(Types.BYTE())])
    assert types["c_date"] == Types.SQL_DATE() and types["days"] == Types.LIST(Types.INT())


def test_every_rule_of_semantic_types_has_a_flink_type():
    from serdes.cdc import SEMANTIC_TYPES

    assert set(FLINK_TYPES) == set(SEMANTIC_TYPES)
    covered = {t.get("connect.name") if isinstance(t, dict) else "io.debezium.data.VariableScaleDecimal"
               for _, t in ss.COLUMNS}
    assert set(SEMANTIC_TYPES) <= covered  # the samples (and so these tests) cover every one


# -- values ---------------------------------------------------------------------------------------

def test_every_semantic_type_becomes_its_flink_value():
    w = _fn()
    row = w.row(ss.PHYSICAL)
    expected = ss.flink_row()
    assert row == expected
    for col, value in row.items():   # equal and of the same type (1 == 1.0 == Decimal(1) would pass ==)
        assert type(value) is type(expected[col]), col


def test_semantic_types_false_gives_the_physical_values():
    w = _fn(semantic_types=False)
    row = w.row(ss.PHYSICAL)
    assert row["seen"] == ss.PHYSICAL["seen"] and row["born"] == 19782 and row["seen_tz"] == ss.PHYSICAL["seen_tz"]
    assert row["ratio"] == Row(scale=5, value=ss.PHYSICAL["ratio"]["value"]) and row["days"] == [0, -1, 19782]


def test_nulls_stay_null():
    w = _fn()
    nulls = {c: None for c in ss.PHYSICAL if c != "id"}
    assert w.row(dict(nulls, id=7)) == dict(nulls, id=7)


@pytest.mark.parametrize("column,physical,value", [
    # dates: before 1970, year 1, year 9999
    ("born", -1, dt.date(1969, 12, 31)),
    ("born", -719_162, dt.date(1, 1, 1)),
    ("born", 2_932_896, dt.date(9999, 12, 31)),
    ("c_date", dt.date(1, 1, 1), dt.date(1, 1, 1)),
    # times: Flink's TIME keeps milliseconds
    ("at", 0, dt.time(0)),
    ("at", 86_399_999_000, dt.time(23, 59, 59, 999000)),
    ("at_ms", 86_399_999, dt.time(23, 59, 59, 999000)),
    ("at_ns", 1_000_000, dt.time(0, 0, 0, 1000)),
    # timestamps: micros, before the epoch, years 1 and 9999
    ("seen", -1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("seen", -62_135_596_800_000_000, dt.datetime(1, 1, 1)),
    ("seen", 253_402_300_799_999_999, dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    ("seen_ms", -1, dt.datetime(1969, 12, 31, 23, 59, 59, 999000)),
    ("seen_ns", 1_000, dt.datetime(1970, 1, 1, 0, 0, 0, 1)),
    ("seen_ns", -9_223_372_036_854_775_000, dt.datetime(1677, 9, 21, 0, 12, 43, 145225)),  # ~ int64's least
    ("c_ts", dt.datetime(1, 1, 1, tzinfo=ss.UTC), dt.datetime(1, 1, 1)),
    # instants: exact seconds and nanos, an offset is the same instant
    ("seen_tz", "1969-12-31T23:59:59.999999Z", ("instant", -1, 999_999_000)),
    ("seen_tz", "0001-01-01T00:00:00Z", ("instant", -62_135_596_800, 0)),
    ("seen_tz", "9999-12-31T23:59:59.999999Z", ("instant", 253_402_300_799, 999_999_000)),
    ("seen_tz", "2024-01-02T03:04:05.123456+02:00", ("instant", 1_704_157_445, 123_456_000)),
    ("seen_tz", "2024-01-02T03:04:05.120Z", ("instant", 1_704_164_645, 120_000_000)),
    # durations: BIGINT microseconds, negative too
    ("span", -1, -1),
    ("span", 2**63 - 1, 2**63 - 1),
    ("span", -(2**63), -(2**63)),
    # DECIMAL(38, 18): 38 digits, 18 after the point; trailing zeros beyond the scale are no digits
    ("ratio", ss.vsd(10**38 - 1, 18), Decimal("99999999999999999999.999999999999999999")),
    ("ratio", ss.vsd(-(10**38 - 1), 18), Decimal("-99999999999999999999.999999999999999999")),
    ("ratio", ss.vsd(15 * 10**19, 20), Decimal("1.5")),
    ("ratio", ss.vsd(1, 18), Decimal("1E-18")),
    ("ratio", ss.vsd(0, 30), Decimal("0")),
    ("ratio", ss.vsd(123, -2), Decimal("12300")),
    ("amount", Decimal("-99999999.99"), Decimal("-99999999.99")),
    # text types keep their text, validated
    ("uid", "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000"),
    ("doc", "[]", "[]"),
    ("doc", "3.5", "3.5"),
    ("bits", b"", b""),
    ("days", [], []),
    ("at_tz", "00:00:00Z", "00:00:00Z"),
])
def test_boundary_values(column, physical, value):
    w = _fn()
    row = w.row(_after(**{column: physical}))
    if isinstance(value, tuple):
        value = ss.instant(value[1], value[2])
    assert row[column] == value and type(row[column]) is type(value)


@pytest.mark.parametrize("column,physical,words", [
    ("born", 2_932_897, "date range"),                         # 10000-01-01
    ("born", -719_163, "date range"),                          # year 0
    ("at", 86_400_000_000, "24:00"),                           # PostgreSQL's time '24:00:00'
    ("at", -1, "time of day"),
    ("at", 47_655_500_001, "sub-millisecond"),                 # 13:14:15.500001: TIME keeps ms
    ("at_ns", 1_000, "sub-millisecond"),
    ("at_ns", 1, "sub-microsecond"),
    ("seen", 253_402_300_800_000_000, "datetime range"),       # 10000-01-01
    ("seen_ns", 1_704_164_645_123_456_789, "sub-microsecond"),
    ("seen_tz", "2024-01-02T01:04:05.1234567Z", "sub-microsecond"),
    ("seen_tz", "2024-01-02 01:04:05Z", "ISO-8601"),
    ("seen_tz", "2024-02-30T00:00:00Z", "day is out of range"),
    ("at_tz", "25:00:00Z", "hour must be"),
    ("ratio", ss.vsd(10**38, 18), "decimal(38, 18)"),          # 21 digits before the point
    ("ratio", ss.vsd(1, 19), "decimal(38, 18)"),               # a digit below the 18th
    ("ratio", ss.vsd(10**20, 0), "decimal(38, 18)"),
    ("uid", "not-a-uuid", "not a UUID"),
    ("uids", [ss.UID, "nope"], "not a UUID"),
    ("doc", "{nope", "not JSON"),
    ("days", [0, None], "null"),                               # a Flink LIST has no null element
])
def test_values_the_flink_type_cannot_hold_are_column_value_errors(column, physical, words):
    w = _fn()
    with pytest.raises(ColumnValueError) as info:
        w.out(ss.change("c", None, _after(**{column: physical})))
    err = info.value
    assert err.column == column and words in str(err), str(err)
    assert (err.location.topic, err.location.partition, err.location.offset) == (TOPIC, 2, w.offset)


@pytest.mark.parametrize("amount", [Decimal("123456789.01"), Decimal("1.234")])
def test_a_decimal_beyond_its_columns_precision_is_a_column_value_error(amount):
    """numeric(10, 2): SemanticTypes' check of the declared precision (the Avro serializer refuses
    such a value, so the decoded row is handed to the operator's row logic directly)."""
    from serdes.cdc import parse_change

    with pytest.raises(ColumnValueError, match=r"decimal\(10, 2\)") as info:
        _fn().fn.rows(parse_change(ss.change("c", None, _after(amount=amount))))
    assert info.value.column == "amount"


def test_arrays_map_element_by_element():
    w = _fn()
    row = w.row(_after(days=[-719_162, 2_932_896], uids=[ss.UID]))
    assert row["days"] == [dt.date(1, 1, 1), dt.date(9999, 12, 31)] and row["uids"] == [ss.UID]


# -- changes: every row of a change is converted, before and after --------------------------------

def test_update_and_delete_convert_before_and_after():
    w = _fn(metadata=["op"])
    after = _after(seen=0, name="bob")
    got = w.out(ss.change("u", ss.PHYSICAL, after))
    assert [k for k, _ in got] == [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER]
    assert got[0][1] == dict(ss.flink_row(), op="u")
    assert got[1][1]["seen"] == dt.datetime(1970, 1, 1) and got[1][1]["name"] == "bob"
    [(kind, row)] = w.out(ss.change("d", after, None))
    assert kind == RowKind.DELETE and row["seen"] == dt.datetime(1970, 1, 1)


def test_a_bad_before_fails_the_record_too():
    w = _fn()
    with pytest.raises(ColumnValueError) as info:
        w.out(ss.change("u", _after(uid="nope"), ss.PHYSICAL))
    assert info.value.column == "uid" and "before.uid" in str(info.value)


def test_upsert_delete_by_key_converts_the_key_columns():
    schema = ss.envelope_schema([("born", ss.sem("int", "io.debezium.time.Date"))])
    w = _fn(schema, mode="upsert")
    [(kind, row)] = w.out(ss.change("u", None, {"id": 1, "born": 0}))
    assert kind == RowKind.UPDATE_AFTER and row == {"id": 1, "born": dt.date(1970, 1, 1)}


# -- unchanged TOAST placeholders: today's ColumnValueError, and SemanticTypes' rule elsewhere -------

@pytest.mark.parametrize("mode", ["retract", "upsert"])
@pytest.mark.parametrize("column,placeholder", [
    ("name", PLACEHOLDER), ("doc", PLACEHOLDER), ("uids", [PLACEHOLDER]), ("bits", PLACEHOLDER.encode()),
    ("amount", "decimal"),
])
def test_an_unchanged_toast_placeholder_in_an_update_is_a_column_error(mode, column, placeholder):
    if placeholder == "decimal":   # the decoder reads the placeholder's bytes in a decimal(10, 2) column as a number
        n = int.from_bytes(PLACEHOLDER.encode(), "big", signed=True)
        placeholder = Decimal((0, tuple(int(c) for c in str(n)), -2))
    w = _fn(mode=mode)
    event = ss.change("u", ss.PHYSICAL, _after(**{column: placeholder}))
    if placeholder.__class__ is Decimal:   # too many digits for decimal(10, 2): build the row without Avro
        from serdes.cdc import parse_change

        with pytest.raises(ColumnValueError, match="unavailable-value placeholder") as info:
            w.fn.rows(parse_change(event))
    else:
        with pytest.raises(ColumnValueError, match="unavailable-value placeholder") as info:
            w.out(event)
        assert info.value.location.offset == w.offset
    assert info.value.column == column


def test_a_placeholder_where_the_value_is_required():
    w = _fn()
    with pytest.raises(ColumnValueError, match="placeholder") as info:   # a semantic type: SemanticTypes' error
        w.out(ss.change("c", None, _after(mood=PLACEHOLDER)))
    assert info.value.column == "mood"
    assert w.row(_after(name=PLACEHOLDER), op="c")["name"] == PLACEHOLDER   # plain text: the column's text


# -- unknown semantic types and on_error ----------------------------------------------------------

UNKNOWN = ss.envelope_schema([("shape", ss.sem("string", "io.debezium.data.Imaginary")),
                              ("born", ss.sem("int", "io.debezium.time.Date"))])


def test_unknown_semantic_type_keeps_its_physical_type_and_a_null_passes():
    t = sf.debezium_row_type(sf.avro(REG, UNKNOWN), TOPIC)
    assert t.get_field_types()[1] == Types.STRING()
    assert _fn(UNKNOWN).row({"id": 1, "shape": None, "born": 0}) == {"id": 1, "shape": None,
                                                                      "born": dt.date(1970, 1, 1)}


@pytest.mark.parametrize("on_error", ["fail", "skip", "dead_letter"])
def test_unknown_semantic_type_follows_on_error(on_error):
    w = _fn(UNKNOWN, on_error=on_error)
    bad = ss.change("c", None, {"id": 1, "shape": "x", "born": 0})
    good = ss.change("c", None, {"id": 2, "shape": None, "born": 1})
    if on_error == "fail":
        with pytest.raises(ColumnValueError) as info:
            w.out(bad)
        err = info.value
        assert err.column == "shape" and "io.debezium.data.Imaginary" in str(err)
        assert (err.location.topic, err.location.partition, err.location.offset) == (TOPIC, 2, 1)
    elif on_error == "skip":
        assert w.out(bad) == [] and w.failed == 1
    else:
        [(dead, error_type, reason)] = w.out(bad)
        assert error_type == "ColumnValueError" and "io.debezium.data.Imaginary" in reason and w.failed == 1
    assert w.out(good) == [(RowKind.INSERT, {"id": 2, "shape": None, "born": dt.date(1970, 1, 2)})]


@pytest.mark.parametrize("on_error", ["skip", "dead_letter"])
def test_bad_values_follow_on_error(on_error):
    w = _fn(on_error=on_error)
    out = w.out(ss.change("c", None, _after(seen_tz="yesterday")))
    assert w.failed == 1
    assert out == [] if on_error == "skip" else out[0][:2] == ("dead", "ColumnValueError")


# -- writer schemas of other versions -------------------------------------------------------------

def test_other_writer_versions_resolve_to_the_row_type():
    v1 = ss.envelope_schema([("born", ss.sem("int", "io.debezium.time.Date"))])
    v2 = ss.envelope_schema([("born", ss.sem("int", "io.debezium.time.Date")),
                             ("seen", ss.sem("long", "io.debezium.time.MicroTimestamp"))])
    w = _fn(v2)                                           # the job's reader: the latest version
    assert w.out(ss.change("c", None, {"id": 1, "born": 0}), schema=v1) == [
        (RowKind.INSERT, {"id": 1, "born": dt.date(1970, 1, 1), "seen": None})]
    w1 = _fn(v1)                                          # a job pinned to v1 reads v2 events
    assert w1.out(ss.change("c", None, {"id": 1, "born": 0, "seen": 5}), schema=v2) == [
        (RowKind.INSERT, {"id": 1, "born": dt.date(1970, 1, 1)})]


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_writer_with_another_semantic_type_for_a_column_is_refused(on_error):
    """time.precision.mode changed: the connector now writes NanoTimestamp longs; Avro resolves long
    to long, so read as the reader's MicroTimestamp they would be 1000 times off."""
    micro = ss.envelope_schema([("seen", ss.sem("long", "io.debezium.time.MicroTimestamp"))])
    nano = ss.envelope_schema([("seen", ss.sem("long", "io.debezium.time.NanoTimestamp"))])
    plain = ss.envelope_schema([("seen", "long")])
    w = _fn(micro, on_error=on_error)
    for writer in (nano, plain):
        if on_error == "fail":
            with pytest.raises(ColumnValueError) as info:
                w.out(ss.change("c", None, {"id": 1, "seen": 5_000}), schema=writer)
            assert info.value.column == "seen" and "io.debezium.time.MicroTimestamp" in str(info.value)
            assert info.value.location.offset == w.offset
        else:
            assert w.out(ss.change("c", None, {"id": 1, "seen": 5_000}), schema=writer) == []
    assert w.out(ss.change("c", None, {"id": 1, "seen": 5_000})) == [
        (RowKind.INSERT, {"id": 1, "seen": dt.datetime(1970, 1, 1, 0, 0, 0, 5000)})]
    assert len(w.fn._writer_verdicts) == 3   # one verdict per writer schema id


def test_writer_verdicts_are_bounded(monkeypatch):
    from serdes.flink import _debezium

    monkeypatch.setattr(_debezium, "MAX_WRITER_SCHEMAS", 2)
    w = _fn(ss.envelope_schema([("born", ss.sem("int", "io.debezium.time.Date"))]))
    for i in range(5):
        extra = [("born", ss.sem("int", "io.debezium.time.Date"))] + [(f"x{j}", "string") for j in range(i)]
        w.out(ss.change("c", None, {"id": 1, "born": 0}), schema=ss.envelope_schema(extra))
        assert len(w.fn._writer_verdicts) <= 2


# -- formats, pickles, hostile schemas ------------------------------------------------------------

JSON_WITH_TYPES = json.dumps({"type": "object", "title": "pg.public.kinds.Envelope", "properties": {
    "before": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Value"}]},
    "after": {"oneOf": [{"type": "null"}, {"type": "object", "title": "pg.public.kinds.Value", "properties": {
        "id": {"type": "integer", "connect.type": "int32"},
        "born": {"oneOf": [{"type": "null"}, {"type": "integer", "title": "io.debezium.time.Date",
                                              "connect.type": "int32", "connect.version": 1}]}},
        "required": ["id"]}]},
    "op": {"type": "string"}}, "required": ["op"]})


def test_json_schema_envelope_with_semantic_types_is_refused_when_the_job_is_built():
    with pytest.raises(ValueError, match=r"semantic types of Avro envelopes only.*'born' \(io.debezium.time.Date\)"):
        sf.debezium_row_type(sf.json_schema(REG, JSON_WITH_TYPES), TOPIC)
    t = sf.debezium_row_type(sf.json_schema(REG, JSON_WITH_TYPES), TOPIC, semantic_types=False)
    assert t.get_field_types() == [Types.LONG(), Types.LONG()]
    # without semantic types in its columns (the source block's Enum is no column) it builds as before
    assert sf.debezium_row_type(sf.json_schema(REG, ds.json_envelope()), TOPIC).get_field_names() == [
        "id", "owner", "balance"]


def test_protobuf_envelopes_keep_their_physical_types():
    from serdes_test.dbz_accounts_pb2 import Envelope

    assert sf.debezium_row_type(sf.protobuf(Envelope, REG), TOPIC).get_field_types() == [
        Types.INT(), Types.STRING(), Types.LONG()]


def test_a_job_graph_pickled_before_the_option_reads_physical_values():
    w = _fn()
    fn = copy.copy(w.fn)
    del fn.__dict__["semantic_types"]
    fn.open(RuntimeContext())
    fn._value_de = w.fn._value_de
    w.fn = fn
    assert w.row(ss.PHYSICAL)["seen"] == ss.PHYSICAL["seen"]


def test_hostile_schemas_are_bounded():
    deep = ss.sem("int", "io.debezium.time.Date")
    for _ in range(40):
        deep = {"type": "array", "items": deep}
    with pytest.raises(ValueError, match="deeper than"):
        sf.debezium_row_type(sf.avro(REG, ss.envelope_schema([("deep", deep)])), TOPIC)
    # the physical row type does not walk semantic types: the same schema builds without them
    sf.debezium_row_type(sf.avro(REG, ss.envelope_schema([("deep", deep)])), TOPIC, semantic_types=False)


def test_the_documented_table_gives_each_flink_type():
    """docs/cdc.md's mapping table: the read_debezium column of each semantic type's row starts with
    its Flink type (then the semantic_types=False type in parentheses)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cdc.md").read_text()
    rows = {line.split("`")[1]: line for line in doc.splitlines() if line.startswith("| `")}
    for name, (_, _, flink) in FLINK_TYPES.items():
        last = rows[name].rstrip(" |").rsplit(" | ", 1)[1]
        assert last.startswith(f"{flink} (") and last.endswith(")"), (name, last)
