"""Avro schemas and payloads an attacker chooses cost what they are (issue 21, Avro findings 3, 7, 9, 11).

* 3: a ``bytes`` decimal's length is checked against its precision before it is converted, and a
  value with more digits than the precision is a ``CorruptPayloadError`` (fastavro rounds it);
* 7: schema references are resolved with bounded count and depth, each distinct subject version
  fetched once (a DAG of references costs its edges, not its paths);
* 9: code for a wide record is generated in bounded memory, and ``serdes.max.fields`` bounds it;
* 11: list/dict reader defaults are fresh per record, counted against ``serdes.max.items``.

Both implementations (the ``implementation`` fixture); the bombs run in a child process under
``RLIMIT_AS`` (tests/support/isolated.py) and assert the typed error, the number of registry
requests or the memory growth -- never a duration (the child's timeout is only a safety net).
"""

from __future__ import annotations

import io
import json
import uuid
from decimal import Decimal
from typing import Any, Dict, List

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import CorruptPayloadError, SchemaMismatchError, ValidationError
from serdes._varint import write_zigzag
from serdes.avro import AvroDeserializer, AvroSerializer

from tests.support.confluent_releases import at_least
from tests.support.implementations import Implementation
from tests.support.isolated import CHILD_PRELUDE, run_bounded

pytestmark = pytest.mark.usefixtures("implementation")

CTX = SerializationContext("t", MessageField.VALUE)


def new_registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://hostile-avro-{uuid.uuid4().hex}"})


def frame(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def length_prefixed(raw: bytes) -> bytes:
    buf = bytearray()
    write_zigzag(buf, len(raw))
    return bytes(buf) + raw


def fastavro_bytes(schema: Any, value: Any) -> bytes:
    fo = io.BytesIO()
    fastavro.schemaless_writer(fo, fastavro.parse_schema(schema), value)
    return fo.getvalue()


#: the child's prelude: build serdes objects with the implementation under test
def child(implementation: Implementation, body: str) -> str:
    return CHILD_PRELUDE + f'''
import contextlib
from serdes import _native
IMPL = {implementation.name!r}
BUILD = _native.forced_pure() if IMPL == "pure" else contextlib.nullcontext()
assert IMPL == "pure" or _native.active() is not None
''' + body


# -- 3: decimals ----------------------------------------------------------------------------------

DECIMAL_RECORD = {"type": "record", "name": "Price", "fields": [
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}},
]}
FIXED_DECIMAL_RECORD = {"type": "record", "name": "Price", "fields": [
    {"name": "amount", "type": {"type": "fixed", "name": "d8", "size": 8, "logicalType": "decimal",
                                "precision": 4, "scale": 2}},
]}


def test_decimal_longer_than_its_precision_is_refused_before_converting(implementation: Implementation) -> None:
    # 1 MB of unscaled integer for a decimal(4,2): confluent-kafka takes over a minute and returns
    # Decimal('...E+2400000'); refused by its length, in a child under a memory limit
    out = run_bounded(child(implementation, f'''
import json
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes._varint import write_zigzag
from serdes.avro import AvroDeserializer
reg = SchemaRegistryClient.new_client({{"url": "mock://decimal-bomb"}})
sid = reg.register_schema("t-value", Schema(json.dumps({DECIMAL_RECORD!r}), "AVRO"))
with BUILD:
    de = AvroDeserializer(reg)
raw = b"\\x7f" * 1_000_000
buf = bytearray(); write_zigzag(buf, len(raw))
data = b"\\x00" + sid.to_bytes(4, "big") + bytes(buf) + raw
report(lambda: de(data, SerializationContext("t", MessageField.VALUE)))
'''))
    assert out["error"] == "CorruptPayloadError", out
    assert "field 'amount'" in out["message"] and "decimal(4,2)" in out["message"]
    assert "takes 1000000 bytes" in out["message"] and "at most 2" in out["message"]


@pytest.mark.parametrize("schema", [DECIMAL_RECORD, FIXED_DECIMAL_RECORD], ids=["bytes", "fixed"])
def test_decimal_with_more_digits_than_its_precision_is_refused(schema: Dict[str, Any]) -> None:
    reg = new_registry()
    sid = reg.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
    de = AvroDeserializer(reg)
    fixed = schema is FIXED_DECIMAL_RECORD

    def payload(unscaled: int) -> bytes:
        if fixed:
            return frame(sid, unscaled.to_bytes(8, "big", signed=True))
        return frame(sid, length_prefixed(unscaled.to_bytes(2, "big", signed=True)))

    # values the type holds decode as confluent-kafka decodes them
    cde = ConfluentAvroDeserializer(reg)
    for unscaled in (0, 1, -1, 9999, -9999, 1234):
        assert de(payload(unscaled), CTX) == cde(payload(unscaled), CTX)
    assert de(payload(-9999), CTX) == {"amount": Decimal("-99.99")}
    # 12345 (2 bytes) does not fit decimal(4,2): fastavro rounds it to Decimal('123.4')
    assert cde(payload(12345), CTX) == {"amount": Decimal("123.4")}
    for unscaled in (12345, -10000, 10000):
        with pytest.raises(CorruptPayloadError, match=r"decimal field 'amount' \(decimal\(4,2\)\): .* more than 4 digits"):
            de(payload(unscaled), CTX)


def test_decimal_in_a_union_of_an_array_names_its_field() -> None:
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0}
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "L", "fields": [
            {"name": "qty", "type": ["null", dec]}]}}}]}
    reg = new_registry()
    sid = reg.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
    de = AvroDeserializer(reg)
    good = fastavro_bytes(schema, {"lines": [{"qty": Decimal(99)}, {"qty": None}]})
    assert de(frame(sid, good), CTX) == {"lines": [{"qty": Decimal(99)}, {"qty": None}]}
    bad = b"\x02" + b"\x02" + length_prefixed((100).to_bytes(2, "big")) + b"\x00"
    with pytest.raises(CorruptPayloadError, match=r"field 'lines.qty' \(decimal\(2,0\)\)"):
        de(frame(sid, bad), CTX)


@pytest.mark.parametrize("schema", [DECIMAL_RECORD, FIXED_DECIMAL_RECORD], ids=["bytes", "fixed"])
def test_serializer_refuses_a_decimal_the_type_cannot_hold(schema: Dict[str, Any]) -> None:
    reg = new_registry()
    ser = AvroSerializer(reg, json.dumps(schema))
    de = AvroDeserializer(reg)
    for ok in (Decimal("99.99"), Decimal("-0.01"), Decimal("12.3"), Decimal(0), Decimal("0E+9")):
        written = ser({"amount": ok}, CTX)
        assert written[5:] == fastavro_bytes(schema, {"amount": ok})
        assert de(written, CTX) == {"amount": ok}
    # fastavro writes Decimal("999.9") for decimal(4,2) as the unscaled 99990, five digits
    for bad in (Decimal("999.9"), Decimal("1E+2"), Decimal("-100.00")):
        with pytest.raises(ValidationError, match=r"Price\.amount .*decimal\(4,2\)"):
            ser({"amount": bad}, CTX)


# -- 7: references --------------------------------------------------------------------------------

class Counting:
    """The registry client, counting ``get_version`` (a reference fetch each)."""

    def __init__(self, reg: SchemaRegistryClient) -> None:
        self.reg = reg
        self.calls: List[Any] = []
        original = reg.get_version

        def get_version(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(args[:2])
            return original(*args, **kwargs)

        reg.get_version = get_version  # type: ignore[method-assign]


def register_diamond(reg: SchemaRegistryClient, levels: int) -> int:
    """Level i is a record of two fields of level i+1's type, referencing it twice."""
    leaf = {"type": "record", "name": f"L{levels}", "namespace": "ns", "fields": [{"name": "x", "type": "int"}]}
    reg.register_schema(f"L{levels}", Schema(json.dumps(leaf), "AVRO"))
    sid = 0
    for i in range(levels - 1, -1, -1):
        refs = [SchemaReference(f"ns.L{i + 1}", f"L{i + 1}", 1), SchemaReference(f"L{i + 1}-again", f"L{i + 1}", 1)]
        s = {"type": "record", "name": f"L{i}", "namespace": "ns",
             "fields": [{"name": "a", "type": f"ns.L{i + 1}"}, {"name": "b", "type": f"ns.L{i + 1}"}]}
        sid = reg.register_schema(f"L{i}", Schema(json.dumps(s), "AVRO", refs))
    return sid


def test_a_diamond_of_references_costs_its_edges(implementation: Implementation) -> None:
    out = run_bounded(child(implementation, '''
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.unit.test_hostile_avro import Counting, register_diamond, frame
from serdes.avro import AvroDeserializer
reg = SchemaRegistryClient.new_client({"url": "mock://diamond-full"})
sid = register_diamond(reg, 22)
counting = Counting(reg)
with BUILD:
    de = AvroDeserializer(reg)
def decode():
    try:
        de(frame(sid, b""), SerializationContext("t", MessageField.VALUE))
    except Exception as e:
        return type(e).__name__, len(counting.calls), len(set(counting.calls))
report(decode)
'''))
    assert out["error"] is None, out
    error, calls, distinct = eval(out["value"])  # noqa: S307 - our own child's repr
    # the schema resolved (22 subject versions, each fetched once) and the empty payload is corrupt
    assert error == "CorruptPayloadError"
    assert calls == distinct == 22


def test_resolved_references_parse_as_confluent_kafka_parses_them() -> None:
    reg = new_registry()
    sid = register_diamond(reg, 4)
    root = reg.get_schema(sid)
    ours = AvroDeserializer(reg)._get_parsed_schema(root)
    theirs = ConfluentAvroDeserializer(reg)._get_parsed_schema(root)
    # confluent-kafka 2.12-2.15 parse each reference with fastavro before the root (the nested
    # definitions then carry fastavro's bookkeeping keys); 2.16 keeps them raw, as serdes does
    assert _without_fastavro_marks(ours) == _without_fastavro_marks(theirs)
    if at_least("2.16"):
        assert ours == theirs


def _without_fastavro_marks(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_fastavro_marks(v) for k, v in schema.items() if k not in ("__fastavro_parsed", "__named_schemas")}
    if isinstance(schema, list):
        return [_without_fastavro_marks(v) for v in schema]
    return schema


def test_a_fan_out_of_references_is_refused_before_fetching() -> None:
    reg = new_registry()
    counting = Counting(reg)
    refs = [SchemaReference(f"T{i}", f"s{i}", 1) for i in range(10_000)]
    sid = reg.register_schema("wide", Schema(json.dumps({"type": "record", "name": "W", "fields": []}), "AVRO", refs))
    de = AvroDeserializer(reg)
    with pytest.raises(SchemaMismatchError, match=r"list of 10000 entries: more than serdes.max.references=1000"):
        de(frame(sid, b""), CTX)
    assert counting.calls == []


def test_references_count_transitively_against_max_references() -> None:
    reg = new_registry()
    sid = register_diamond(reg, 6)  # 12 edges
    counting = Counting(reg)
    de = AvroDeserializer(reg, conf={"serdes.max.references": 10})
    with pytest.raises(SchemaMismatchError, match=r"more than serdes.max.references=10 references"):
        de(frame(sid, b""), CTX)
    assert len(counting.calls) <= 10


def test_a_reference_chain_deeper_than_max_schema_depth_is_refused() -> None:
    # each schema references the next without nesting it: the parsed schema is flat, the chain deep
    reg = new_registry()
    flat = {"type": "record", "name": "C8", "fields": [{"name": "x", "type": "int"}]}
    reg.register_schema("C8", Schema(json.dumps(flat), "AVRO"))
    for i in range(7, -1, -1):
        flat = {"type": "record", "name": f"C{i}", "fields": [{"name": "x", "type": "int"}]}
        sid = reg.register_schema(f"C{i}", Schema(json.dumps(flat), "AVRO", [SchemaReference(f"C{i + 1}", f"C{i + 1}", 1)]))
    assert AvroDeserializer(reg)(frame(sid, b"\x02"), CTX) == {"x": 1}
    counting = Counting(reg)
    with pytest.raises(SchemaMismatchError, match=r"'C6' is nested deeper than serdes.max.schema.depth=5"):
        AvroDeserializer(reg, conf={"serdes.max.schema.depth": 5})(frame(sid, b"\x02"), CTX)
    assert len(counting.calls) == 5


def test_a_cycle_of_references_is_followed_once() -> None:
    # A references B, B references A (confluent-kafka recurses until the stack runs out)
    reg = new_registry()
    a = {"type": "record", "name": "A", "fields": [{"name": "b", "type": ["null", "B"]}]}
    b = {"type": "record", "name": "B", "fields": [{"name": "x", "type": "int"}]}
    reg.register_schema("B", Schema(json.dumps(b), "AVRO", [SchemaReference("A", "A", 1)]))
    sid = reg.register_schema("A", Schema(json.dumps(a), "AVRO", [SchemaReference("B", "B", 1)]))
    counting = Counting(reg)
    de = AvroDeserializer(reg)
    assert de(frame(sid, b"\x02\x04"), CTX) == {"b": {"x": 2}}
    assert counting.calls.count(("B", 1)) == 1 and counting.calls.count(("A", 1)) == 1


def test_serializer_resolves_references_within_the_limits() -> None:
    reg = new_registry()
    sid = register_diamond(reg, 3)
    root = reg.get_schema(sid)
    reg.register_schema("t-value", root)
    parsed = ConfluentAvroDeserializer(reg)._get_parsed_schema(root)  # 14 fetches for 3 levels
    counting = Counting(reg)
    ser = AvroSerializer(reg, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    leaf = [{"x": i} for i in range(8)]
    value = {"a": {"a": {"a": leaf[0], "b": leaf[1]}, "b": {"a": leaf[2], "b": leaf[3]}},
             "b": {"a": {"a": leaf[4], "b": leaf[5]}, "b": {"a": leaf[6], "b": leaf[7]}}}
    written = ser(value, CTX)
    assert written[5:] == fastavro_bytes(parsed, value)
    assert len(counting.calls) == 3
    counting.calls.clear()
    assert AvroDeserializer(reg)(written, CTX) == value
    assert len(counting.calls) == 3


# -- 9: wide records ------------------------------------------------------------------------------

def wide(n: int, name: str = "W") -> Dict[str, Any]:
    return {"type": "record", "name": name, "fields": [
        {"name": f"f{i}", "type": ["null", "string"] if i % 2 else "long"} for i in range(n)]}


def test_a_wide_record_builds_in_bounded_memory(implementation: Implementation) -> None:
    # one function per schema peaked at +0.5 GB for 5,000 fields (20,000 fields: 1.9 GB), growing with
    # the width: 2,500 fields (half the build time of 5,000) would still be ~+0.25 GB, far over the bound
    out = run_bounded(child(implementation, '''
import resource
from serdes.avro._deserializer import compile_avro_decoder
from serdes.avro._native_encoder import compile_native_encoder
from tests.unit.test_hostile_avro import wide
schema = wide(2500)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def build():
    with BUILD:
        dec = compile_avro_decoder(schema, None, False, None)
        enc = compile_native_encoder(schema, b"", False, False, None)
    value = {f"f{i}": (None if i % 4 == 1 else str(i)) if i % 2 else i for i in range(2500)}
    assert dec(enc(value, None), 0, None) == value
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
report(build)
'''))
    assert out["error"] is None, out
    assert int(out["value"]) < 100, f"building for 2,500 fields grew the peak RSS by {out['value']} MB"


def test_more_fields_than_max_fields_is_a_schema_mismatch() -> None:
    reg = new_registry()
    sid = reg.register_schema("t-value", Schema(json.dumps(wide(10_001)), "AVRO"))
    de = AvroDeserializer(reg)
    with pytest.raises(SchemaMismatchError, match=r"more than serdes.max.fields=10000 record fields"):
        de(frame(sid, b""), CTX)
    # nested records count together; the limit is a conf key
    nested = {"type": "record", "name": "O", "fields": [
        {"name": "a", "type": wide(30, "A")}, {"name": "b", "type": wide(30, "B")}]}
    sid = reg.register_schema("n-value", Schema(json.dumps(nested), "AVRO"))
    with pytest.raises(SchemaMismatchError, match=r"serdes.max.fields=50 "):
        AvroDeserializer(reg, conf={"serdes.max.fields": 50})(frame(sid, b""), CTX)
    with pytest.raises(SchemaMismatchError, match=r"serdes.max.fields=50 "):
        AvroSerializer(reg, json.dumps(nested), conf={"serdes.max.fields": 50})({}, CTX)


def test_wide_records_decode_and_resolve_as_fastavro() -> None:
    # 200 fields: field groups of 64, with skipped writer fields and reader defaults between them
    writer = wide(200)
    reader = {"type": "record", "name": "W", "fields": [
        f for i, f in enumerate(writer["fields"]) if i % 3] + [
        {"name": "extra", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
        {"name": "tag", "type": "string", "default": "t"}]}
    value = {f"f{i}": (None if i % 4 == 1 else f"s{i}") if i % 2 else -i for i in range(200)}
    reg = new_registry()
    sid = reg.register_schema("t-value", Schema(json.dumps(writer), "AVRO"))
    data = frame(sid, fastavro_bytes(writer, value))
    assert AvroDeserializer(reg)(data, CTX) == value
    expected = fastavro.schemaless_reader(io.BytesIO(data[5:]), fastavro.parse_schema(writer), fastavro.parse_schema(reader))
    got = AvroDeserializer(reg, json.dumps(reader))(data, CTX)
    assert got == expected and list(got) == list(expected)
    with pytest.raises(CorruptPayloadError):
        AvroDeserializer(reg, json.dumps(reader))(data[:-1], CTX)
    # the serializer writes what fastavro writes
    ser = AvroSerializer(reg, json.dumps(writer))
    assert ser(value, CTX)[5:] == fastavro_bytes(writer, value)


# -- 11: reader defaults --------------------------------------------------------------------------

def many_defaults(n: int, items: int) -> Dict[str, Any]:
    return {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}] + [
        {"name": f"d{i}", "type": {"type": "array", "items": "int"}, "default": list(range(items))} for i in range(n)]}


def test_reader_defaults_are_fresh_per_record() -> None:
    writer = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "int"},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["a", "b"]},
        {"name": "attrs", "type": {"type": "map", "values": {"type": "array", "items": "int"}}, "default": {"k": [1]}},
        {"name": "s", "type": "string", "default": "x"}]}
    reg = new_registry()
    sid = reg.register_schema("t-value", Schema(json.dumps(writer), "AVRO"))
    de = AvroDeserializer(reg, json.dumps(reader))
    first = de(frame(sid, b"\x02"), CTX)
    assert first == {"id": 1, "tags": ["a", "b"], "attrs": {"k": [1]}, "s": "x"}
    first["tags"].append("mutated")
    first["attrs"]["k"].append(2)
    first["attrs"]["new"] = []
    assert de(frame(sid, b"\x04"), CTX) == {"id": 2, "tags": ["a", "b"], "attrs": {"k": [1]}, "s": "x"}
    assert ConfluentAvroDeserializer(reg, json.dumps(reader))(frame(sid, b"\x04"), CTX) == de(frame(sid, b"\x04"), CTX)


def test_reader_default_items_count_against_max_items(implementation: Implementation) -> None:
    # 2,000 list defaults of 1,000 items for a 6-byte record: 2,000,000 items per record
    out = run_bounded(child(implementation, '''
import json
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.unit.test_hostile_avro import many_defaults, frame
from serdes.avro import AvroDeserializer
reg = SchemaRegistryClient.new_client({"url": "mock://defaults"})
writer = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}
sid = reg.register_schema("t-value", Schema(json.dumps(writer), "AVRO"))
reader = json.dumps(many_defaults(2000, 1000))
ctx = SerializationContext("t", MessageField.VALUE)
with BUILD:
    small = AvroDeserializer(reg, reader, conf={"serdes.max.items": 1_000_000})
    big = AvroDeserializer(reg, reader)
def run():
    v = big(frame(sid, b"\\x02"), ctx)
    assert len(v) == 2001 and v["d7"] == list(range(1000)) and v["d0"] is not v["d1"]
    small(frame(sid, b"\\x02"), ctx)
report(run)
'''))
    assert out["error"] == "CorruptPayloadError", out
    assert "serdes.max.items=1000000" in out["message"]
