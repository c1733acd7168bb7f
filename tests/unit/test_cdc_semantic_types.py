"""serdes.cdc.SemanticTypes: Debezium / Connect semantic types -> Python values, from writer schemas.

The schema below is written in the shape Debezium's PostgreSQL connector registers through a
registry Avro converter (``connect.name`` / ``connect.parameters`` on the physical types, the
``Value`` row defined in ``before`` and referenced by name in ``after``);
tests/integration/test_debezium_real.py checks the same mapping on a real connector's topics.
"""

from __future__ import annotations

import datetime as dt
import json
import pickle
import uuid
from decimal import Decimal

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import ColumnValueError, ValidationError
from serdes.cdc import PLACEHOLDER, SEMANTIC_TYPES, UNAVAILABLE, ChangeParser, Op, SemanticTypes

pytestmark = pytest.mark.usefixtures("implementation")

NS = "pg.public.items"


def sem(physical, name, **params):
    t = {"type": physical, "connect.version": 1, "connect.name": name}
    if params:
        t["connect.parameters"] = {k.replace("_", "."): str(v) for k, v in params.items()}
    return t


def opt(t):
    return {"type": ["null", t], "default": None}


VSD = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
       "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
       "connect.name": "io.debezium.data.VariableScaleDecimal"}
AMOUNT = dict(sem("bytes", "org.apache.kafka.connect.data.Decimal"), logicalType="decimal", precision=10, scale=2,
              **{"connect.parameters": {"scale": "2", "connect.decimal.precision": "10"}})

COLUMNS = [
    ("id", "int"),
    ("amount", ["null", AMOUNT]),
    ("ratio", ["null", VSD]),
    ("ratio2", ["null", "io.debezium.data.VariableScaleDecimal"]),   # a reference to the named type
    ("name", ["null", "string"]),
    ("born", ["null", sem("int", "io.debezium.time.Date")]),
    ("seen", ["null", sem("long", "io.debezium.time.MicroTimestamp")]),
    ("seen_ms", ["null", sem("long", "io.debezium.time.Timestamp")]),
    ("seen_ns", ["null", sem("long", "io.debezium.time.NanoTimestamp")]),
    ("seen_tz", ["null", sem("string", "io.debezium.time.ZonedTimestamp")]),
    ("at", ["null", sem("long", "io.debezium.time.MicroTime")]),
    ("at_ms", ["null", sem("int", "io.debezium.time.Time")]),
    ("at_tz", ["null", sem("string", "io.debezium.time.ZonedTime")]),
    ("span", ["null", sem("long", "io.debezium.time.MicroDuration")]),
    ("uid", ["null", sem("string", "io.debezium.data.Uuid")]),
    ("doc", ["null", sem("string", "io.debezium.data.Json")]),
    ("feeling", ["null", sem("string", "io.debezium.data.Enum", allowed="sad,ok,happy")]),
    ("days", ["null", {"type": "array", "items": ["null", sem("int", "io.debezium.time.Date")]}]),
    ("tags", ["null", {"type": "array", "items": ["null", "string"]}]),
]
VALUE = {"type": "record", "name": "Value", "namespace": NS,
         "fields": [dict({"name": n, "type": t}, **({"default": None} if isinstance(t, list) else {}))
                    for n, t in COLUMNS], "connect.name": f"{NS}.Value"}
SOURCE = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
    {"name": "connector", "type": "string"}, {"name": "table", "type": "string"},
    {"name": "snapshot", "type": [sem("string", "io.debezium.data.Enum", allowed="true,last,false"), "null"],
     "default": "false"}]}
ENVELOPE = {"type": "record", "name": "Envelope", "namespace": NS, "fields": [
    {"name": "before", "type": ["null", VALUE], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "source", "type": SOURCE},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": None}]}
KEY = {"type": "record", "name": "Key", "namespace": NS,
       "fields": [{"name": "id", "type": "int"}, {"name": "uid", "type": sem("string", "io.debezium.data.Uuid")}]}

UID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"

# what the Avro decoder gives (physical values) and what SemanticTypes must make of them
PHYSICAL = {
    "id": 1, "amount": Decimal("12.34"), "ratio": {"scale": 5, "value": (314159).to_bytes(3, "big", signed=True)},
    "ratio2": {"scale": 0, "value": (-42).to_bytes(1, "big", signed=True)}, "name": "alice",
    "born": 19782, "seen": 1_704_164_645_123_456, "seen_ms": 1_704_164_645_123, "seen_ns": 1_704_164_645_123_456_000,
    "seen_tz": "2024-01-02T01:04:05.5Z", "at": 47_655_500_000, "at_ms": 47_655_500, "at_tz": "13:14:15+02:00",
    "span": 90_061_000_001, "uid": UID, "doc": '{"k": [1, 2.5, null], "s": "x"}', "feeling": "happy",
    "days": [0, None, 19782], "tags": ["x", None],
}
EXPECTED = {
    "id": 1, "amount": Decimal("12.34"), "ratio": Decimal("3.14159"), "ratio2": Decimal("-42"), "name": "alice",
    "born": dt.date(2024, 2, 29), "seen": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
    "seen_ms": dt.datetime(2024, 1, 2, 3, 4, 5, 123000), "seen_ns": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
    "seen_tz": dt.datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=dt.timezone.utc),
    "at": dt.time(13, 14, 15, 500000), "at_ms": dt.time(13, 14, 15, 500000),
    "at_tz": dt.time(13, 14, 15, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    "span": dt.timedelta(days=1, hours=1, minutes=1, seconds=1, microseconds=1), "uid": uuid.UUID(UID),
    "doc": {"k": [1, 2.5, None], "s": "x"}, "feeling": "happy", "days": [dt.date(1970, 1, 1), None, dt.date(2024, 2, 29)],
    "tags": ["x", None],
}
SRC = {"connector": "postgresql", "table": "items", "snapshot": "false"}


def envelope(op, before=None, after=None):
    return {"before": before, "after": after, "source": SRC, "op": op, "ts_ms": 1}


@pytest.fixture
def wire():
    """(value serializer, value deserializer, key serializer, key deserializer, client) on a mock registry."""
    from serdes.avro import AvroDeserializer, AvroSerializer

    client = SchemaRegistryClient.new_client({"url": f"mock://cdc-types-{uuid.uuid4().hex}"})
    return (AvroSerializer(client, json.dumps(ENVELOPE)), AvroDeserializer(client),
            AvroSerializer(client, json.dumps(KEY)), AvroDeserializer(client), client)


class _Msg:
    def __init__(self, topic, offset, key, value):
        self._t, self._o, self._k, self._v = topic, offset, key, value

    def topic(self):
        return self._t

    def partition(self):
        return 3

    def offset(self):
        return self._o

    def key(self):
        return self._k

    def value(self):
        return self._v

    def headers(self):
        return None


def _message(wire, offset, event, key=None):
    vser, _, kser, _, _ = wire
    raw_v = None if event is None else vser(event, SerializationContext(NS, MessageField.VALUE))
    raw_k = None if key is None else kser(key, SerializationContext(NS, MessageField.KEY))
    return _Msg(NS, offset, raw_k, raw_v)


def _parse(wire, parser, msg):
    _, vde, _, kde, _ = wire
    return parser.parse_message(msg, vde, kde)


# -- the mapping, through a real Avro round trip on the registry ---------------------------------

def test_every_semantic_type_maps_to_its_python_value(wire):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    ch = _parse(wire, parser, _message(wire, 0, envelope("r", None, PHYSICAL), {"id": 1, "uid": UID}))
    assert ch.op is Op.READ and ch.before is None
    assert ch.after == EXPECTED
    for col, value in ch.after.items():  # equal and of the same type (1 == 1.0 == Decimal(1) would pass ==)
        assert type(value) is type(EXPECTED[col]), col
    assert ch.source == SRC  # the source block is not a row: left as decoded


def test_without_semantic_types_values_stay_physical(wire):
    ch = _parse(wire, ChangeParser(), _message(wire, 0, envelope("c", None, PHYSICAL)))
    assert ch.after["seen"] == PHYSICAL["seen"] and ch.after["uid"] == UID


def test_key_columns_are_mapped_too(wire):
    parser = ChangeParser(before_required=False, semantic_types=SemanticTypes(wire[4]))
    ch = _parse(wire, parser, _message(wire, 5, envelope("d", None, None), {"id": 7, "uid": UID}))
    assert ch.op is Op.DELETE and ch.before == {"id": 7, "uid": uuid.UUID(UID)}


def test_update_and_delete_rows_both_mapped(wire):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    after = dict(PHYSICAL, name="bob")
    ch = _parse(wire, parser, _message(wire, 1, envelope("u", PHYSICAL, after)))
    assert ch.before == EXPECTED and ch.after == dict(EXPECTED, name="bob")
    ch = _parse(wire, parser, _message(wire, 2, envelope("d", PHYSICAL, None)))
    assert ch.before == EXPECTED and ch.after is None
    assert _parse(wire, parser, _message(wire, 3, None, {"id": 1, "uid": UID})) is None
    assert parser.tombstones == 1 and parser.counts[Op.UPDATE] == 1 and parser.counts[Op.DELETE] == 1


def test_converters_are_cached_per_schema_id(wire):
    class Counting:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def get_schema(self, *a, **k):
            self.calls += 1
            return self.inner.get_schema(*a, **k)

    counting = Counting(wire[4])
    parser = ChangeParser(semantic_types=SemanticTypes(counting))
    for off in range(5):
        _parse(wire, parser, _message(wire, off, envelope("c", None, PHYSICAL)))
    assert counting.calls == 1


def test_converter_cache_is_bounded():
    types_ = SemanticTypes(max_schemas=2)
    schema = json.dumps(ENVELOPE)
    for sid in range(10):
        types_._by_id.clear() if sid == 0 else None
        conv = types_.for_schema(schema)
        from serdes._cache import bounded_store

        bounded_store(types_._by_id, sid, conv, types_.max_schemas)
    assert len(types_._by_id) <= 2


# -- unchanged TOAST columns ----------------------------------------------------------------------

def test_placeholder_in_an_update_after_is_unavailable(wire):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    after = dict(PHYSICAL, name=PLACEHOLDER, doc=PLACEHOLDER, tags=[PLACEHOLDER],
                 amount=None)
    ch = _parse(wire, parser, _message(wire, 0, envelope("u", PHYSICAL, after)))
    assert ch.after["name"] is UNAVAILABLE and ch.after["doc"] is UNAVAILABLE and ch.after["tags"] is UNAVAILABLE
    assert ch.after["amount"] is None and ch.after["seen"] == EXPECTED["seen"]
    assert not UNAVAILABLE and repr(UNAVAILABLE) == "UNAVAILABLE"
    assert pickle.loads(pickle.dumps(UNAVAILABLE)) is UNAVAILABLE


def test_placeholder_in_a_decimal_column_is_recognised_after_avro_decoding():
    """The Avro decoder reads the placeholder's bytes in a decimal column as a number: the
    converter knows that number and does not pass it on as the column's value."""
    conv = SemanticTypes().for_schema(ENVELOPE)
    raw = PLACEHOLDER.encode()
    as_number = Decimal((0, tuple(int(c) for c in str(int.from_bytes(raw, "big", signed=True))), -2))
    row = conv.convert(dict(PHYSICAL, amount=as_number), "after", None, unavailable_ok=True)
    assert row["amount"] is UNAVAILABLE
    with pytest.raises(ColumnValueError) as exc:
        conv.convert(dict(PHYSICAL, amount=as_number), "after", None)
    assert exc.value.column == "amount"


def test_placeholder_where_a_value_is_required_is_an_error(wire):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    with pytest.raises(ColumnValueError) as exc:
        _parse(wire, parser, _message(wire, 11, envelope("c", None, dict(PHYSICAL, doc=PLACEHOLDER))))
    err = exc.value
    assert err.column == "doc" and "placeholder" in str(err)
    assert (err.location.topic, err.location.partition, err.location.offset) == (NS, 3, 11)
    # a plain text column may hold that text: it is the column's value there
    ch = _parse(wire, parser, _message(wire, 12, envelope("c", None, dict(PHYSICAL, name=PLACEHOLDER))))
    assert ch.after["name"] == PLACEHOLDER


def test_no_placeholder_configured_leaves_the_text():
    conv = SemanticTypes(placeholder=None).for_schema(ENVELOPE)
    row = conv.convert(dict(PHYSICAL, name=PLACEHOLDER), "after", None, unavailable_ok=True)
    assert row["name"] == PLACEHOLDER


# -- values their semantic type cannot be: typed errors naming the column and the record ---------

@pytest.mark.parametrize("column,value,words", [
    ("at", 86_400_000_000, "24:00"),                       # PostgreSQL's time '24:00:00'
    ("at", -1, "time of day"),
    ("seen_ns", 1_704_164_645_123_456_789, "sub-microsecond"),
    ("seen", 10**18, "datetime range"),
    ("born", 10**7, "date range"),
    ("seen_tz", "2024-01-02 01:04:05", "ISO-8601"),
    ("seen_tz", "2024-02-30T00:00:00Z", "day is out of range"),
    ("seen_tz", "2024-01-02T01:04:05.1234567Z", "sub-microsecond"),
    ("at_tz", "25:00:00Z", "hour must be"),
    ("uid", "not-a-uuid", "not a UUID"),
    ("doc", "{nope", "not JSON"),
    ("doc", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("ratio", {"scale": 1}, "record"),
])
def test_unmappable_values_are_column_value_errors(wire, column, value, words):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    with pytest.raises(ColumnValueError) as exc:
        parser.parse(envelope("c", None, dict(PHYSICAL, **{column: value})),
                     value_types=SemanticTypes().for_schema(ENVELOPE),
                     location=serdes_location(21))
    err = exc.value
    assert isinstance(err, ValidationError) and err.column == column
    assert words in str(err) and f"after.{column}" in str(err)
    assert err.location.offset == 21 and err.location.topic == NS


def serdes_location(offset):
    from serdes import RecordLocation

    return RecordLocation(NS, "value", 0, offset)


def test_unknown_semantic_type_is_an_error_not_a_passed_value(wire):
    schema = json.loads(json.dumps(ENVELOPE))
    schema["fields"][0]["type"][1]["fields"].append(
        {"name": "shape", "type": ["null", sem("string", "io.debezium.data.Imaginary")], "default": None})
    conv = SemanticTypes().for_schema(schema)
    assert conv.convert(dict(PHYSICAL, shape=None), "after", None)["shape"] is None  # a NULL has no type problem
    with pytest.raises(ColumnValueError) as exc:
        conv.convert(dict(PHYSICAL, shape="x"), "after", None)
    assert exc.value.column == "shape" and "io.debezium.data.Imaginary" in str(exc.value)


def test_connect_decimal_precision_is_checked():
    conv = SemanticTypes().for_schema(ENVELOPE)
    with pytest.raises(ColumnValueError) as exc:
        conv.convert(dict(PHYSICAL, amount=Decimal("123456789.01")), "after", None)
    assert exc.value.column == "amount" and "decimal(10, 2)" in str(exc.value)
    with pytest.raises(ColumnValueError):  # a digit below the declared scale
        conv.convert(dict(PHYSICAL, amount=Decimal("1.234")), "after", None)
    # the same number with trailing zeros (what a Flink DECIMAL(38, 18) column hands back) fits
    row = conv.convert(dict(PHYSICAL, amount=Decimal("12345678.900000000000000000")), "after", None)
    assert row["amount"] == Decimal("12345678.9")


def test_variable_scale_decimal_keeps_every_digit():
    conv = SemanticTypes().for_schema(ENVELOPE)
    n = 10**40 + 1
    raw = n.to_bytes(20, "big", signed=True)
    row = conv.convert(dict(PHYSICAL, ratio={"scale": 3, "value": raw}), "after", None)
    assert str(row["ratio"]) == str(n)[:-3] + "." + str(n)[-3:]  # 41 digits: more than a default context's 28


def test_hostile_schemas_are_bounded():
    deep = {"type": "int"}
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    schema = json.loads(json.dumps(ENVELOPE))
    schema["fields"][0]["type"][1]["fields"].append({"name": "deep", "type": deep})
    with pytest.raises(ColumnValueError, match="deeper"):
        SemanticTypes().for_schema(json.dumps(schema))
    with pytest.raises(ColumnValueError, match="not Avro JSON"):
        SemanticTypes().for_schema("{not json")


def test_the_documented_table_lists_every_rule():
    """docs/cdc.md's mapping table has a row for every semantic type serdes maps, with its type."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cdc.md").read_text()
    for name, (_, python_type) in SEMANTIC_TYPES.items():
        assert f"| `{name}` | {python_type} |" in doc, name


def test_a_bad_key_column_names_the_key(wire):
    parser = ChangeParser(semantic_types=SemanticTypes(wire[4]))
    with pytest.raises(ColumnValueError) as exc:
        _parse(wire, parser, _message(wire, 9, envelope("c", None, PHYSICAL), {"id": 1, "uid": "nope"}))
    err = exc.value
    assert err.column == "uid" and "key.uid" in str(err)
    assert (err.location.field, err.location.offset, err.location.partition) == ("key", 9, 3)
