"""serdes.arrow's native columnar Avro decoder (rust/src/columnar.rs, on arrow-avro): it takes the
schemas and lists it can hold to serdes' rules, and its batch is the per-record path's; every
list it does not take -- and every way the crate can fail or panic -- ends in the per-record
path's batch and errors, never in another result. The same cases run on both paths: the pure one
is the reference (``_native.forced_pure``)."""

from __future__ import annotations

import decimal
import json
import logging
import uuid
from typing import Any, Dict, List, Optional, Tuple

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from serdes import _native  # noqa: E402
from serdes.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from tests.support.implementations import native_module, require_native  # noqa: E402
from tests.support.arrow_rows import panic_armed  # noqa: E402
from tests.support.small_stack import on_small_stack  # noqa: E402
from tests.unit.test_arrow import ALL_TYPES, V1, V2, V3, _all_types_record  # noqa: E402

CTX = SerializationContext("t", MessageField.VALUE)


def _client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://arrow-native-{uuid.uuid4().hex}"})


def _native_of(deser: Any) -> Any:
    """The one native columnar decoder ``deser`` built."""
    found = list(deser.__dict__.get("_arrow_native", {}).values())
    assert len(found) == 1, found
    return found[0]


def _both(client: Any, frames: List[Any], conf: Optional[Dict[str, Any]] = None, **kw: Any
          ) -> Tuple[Any, Any, Any]:
    """(native-path batch, per-record-path batch, the native decoder), errors collected."""
    deser = AvroDeserializer(client, conf=conf)
    got = deser.deserialize_arrow(frames, CTX, errors="collect", **kw)
    with _native.forced_pure():
        ref = AvroDeserializer(client, conf=conf).deserialize_arrow(frames, CTX, errors="collect", **kw)
    assert pa.record_batch(got).equals(pa.record_batch(ref))
    assert got.rows == ref.rows
    # (the same typed errors: their wording is the per-record decoders', which differ by implementation)
    assert [(i, type(e)) for i, e in got.errors] == [(i, type(e)) for i, e in ref.errors]
    return got, ref, _native_of(deser)


def _frames(client: Any, schema: Any, records: List[Any]) -> List[bytes]:
    ser = AvroSerializer(client, json.dumps(schema))
    return [ser(r, CTX) for r in records]


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def test_every_type_is_decoded_natively() -> None:
    client = _client()
    got, _, native = _both(client, _frames(client, ALL_TYPES, [_all_types_record(n) for n in range(40)]))
    assert native.taken == 1 and native.declined == 0 and got.num_rows == 40


DECIMAL = {"type": "record", "name": "D", "fields": [
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}}]}


def test_a_decimal_beyond_its_precision_is_the_per_record_error() -> None:
    client = _client()
    frames = _frames(client, DECIMAL, [{"d": decimal.Decimal("12.34")}] * 3)
    # 123456 unscaled: six digits in a precision-4 column (a writer that ignores the precision)
    frames[1] = frames[1][:5] + b"\x06" + (123456).to_bytes(3, "big", signed=True)
    got, _, native = _both(client, frames)
    assert native.declined == 1 and "precision" in native.refused[1]
    assert [i for i, _ in got.errors] == [1] and pa.record_batch(got).column("d").to_pylist() == [
        decimal.Decimal("12.34")] * 2


def test_a_decimal_writer_that_needs_resolving_stays_on_the_per_record_path() -> None:
    # the crate would keep the writer's unscaled value under the reader's scale
    client = _client()
    writer = {"type": "record", "name": "D", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 1}},
        {"name": "x", "type": "long"}]}
    frames = _frames(client, writer, [{"d": decimal.Decimal("12.3"), "x": 1}] * 2)
    got, _, native = _both(client, frames, reader_schema=json.dumps(dict(writer, fields=writer["fields"][:1])))
    assert native.taken == 0 and pa.record_batch(got).column("d").to_pylist() == [decimal.Decimal("12.3")] * 2


def test_tombstones_are_rows_of_nulls_natively() -> None:
    client = _client()
    no_union = dict(ALL_TYPES, fields=[f for f in ALL_TYPES["fields"] if f["name"] != "un"])
    frames: List[Any] = _frames(client, no_union, [
        {k: v for k, v in _all_types_record(n).items() if k != "un"} for n in range(6)])
    frames[2:2] = [None]
    frames.append(None)
    got, _, native = _both(client, frames)
    assert native.taken == 1 and got.num_rows == 8
    assert pa.record_batch(got).column("s").to_pylist()[:3] == ["s0", "s1", None]


def test_tombstones_with_a_union_column_are_the_per_record_path_s() -> None:
    client = _client()
    frames: List[Any] = _frames(client, ALL_TYPES, [_all_types_record(n) for n in range(3)]) + [None]
    got, _, native = _both(client, frames)
    assert native.taken == 0 and got.num_rows == 4


def test_evolution_resolves_natively_to_the_latest() -> None:
    client = _client()
    frames = []
    for version, schema in enumerate((V1, V2, V3)):
        rec = {"id": version, "name": "n", "legacy": 7, "email": "e", "score": 2.0}
        frames += _frames(client, schema, [{f["name"]: rec[f["name"]] for f in schema["fields"]}] * 3)
    got, _, native = _both(client, frames)
    assert native.taken == 1 and got.schema.names == ["id", "name", "email", "score"]


def test_threads_give_the_same_batch() -> None:
    client = _client()
    a = _frames(client, V1, [{"id": n, "name": f"n{n}", "legacy": n} for n in range(3000)])
    b = _frames(client, V3, [{"id": n, "name": "m", "email": None, "score": n / 7} for n in range(3000)])
    # runs of two writers, crossing the threads' shares
    frames = a[:2000] + b[:1000] + a[2000:] + b[1000:] + a[:3000] + b[:2000]
    deser = AvroDeserializer(client)
    one = pa.record_batch(deser.deserialize_arrow(frames, CTX))
    for threads in (2, 3, 16):
        assert pa.record_batch(deser.deserialize_arrow(frames, CTX, threads=threads)).equals(one)
    got, _, native = _both(client, frames, threads=2)
    assert native.taken == 1 and got.num_rows == len(frames)


ARRAY_ITEM = {"type": "record", "name": "L", "fields": [{"name": "xs", "type": {"type": "array", "items": "long"}}]}


@pytest.mark.parametrize("case", [
    "trailing byte", "truncated", "bad magic", "unknown id", "not utf-8", "huge count", "bytearray",
])
def test_a_list_with_a_bad_record_is_the_per_record_result(case: str) -> None:
    client = _client()
    frames: List[Any] = _frames(client, ARRAY_ITEM, [{"xs": [n, n]} for n in range(6)])
    s = _frames(client, V2, [{"id": 1, "name": "ab", "email": None}])[0]
    bad: Any = {
        "trailing byte": frames[2] + b"\x00",
        "truncated": frames[2][:-2],
        "bad magic": b"\x01" + frames[2][1:],
        "unknown id": frames[2][:1] + (999).to_bytes(4, "big") + frames[2][5:],
        "not utf-8": None,
        # 2^40 items announced in a 14-byte record
        "huge count": frames[2][:5] + bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]) + b"\x02\x00",
        "bytearray": bytearray(frames[2]),
    }[case]
    if case == "not utf-8":
        frames = [s[:-3] + b"\x04\xff\xfe" + s[-1:]] + _frames(client, V2, [{"id": 2, "name": "c", "email": None}])
        bad = frames[0]
    frames[2 if case != "not utf-8" else 0] = bad
    got, _, native = _both(client, frames)
    assert native.taken == 0 and native.declined == 1
    if case != "bytearray":
        assert got.errors, case


@pytest.mark.parametrize("schema, why", [
    ({"type": "record", "name": "N", "fields": [{"name": "xs", "type": {"type": "array", "items": "null"}}]},
     "take no bytes"),
    ({"type": "record", "name": "O", "fields": [{"name": "u", "type": ["long"]}]}, "one branch"),
    # arrow-avro 60.1 builds invalid columns for these three
    ({"type": "record", "name": "Z", "fields": [{"name": "n", "type": "null"}, {"name": "x", "type": "long"}]},
     "type null outside a union"),
    ({"type": "record", "name": "E", "fields": [
        {"name": "e", "type": {"type": "record", "name": "Empty", "fields": []}}, {"name": "x", "type": "long"}]},
     "without fields"),
    ({"type": "record", "name": "F", "fields": [
        {"name": "f", "type": {"type": "fixed", "name": "F0", "size": 0}}, {"name": "x", "type": "long"}]},
     "size 0"),
])
def test_schemas_kept_on_the_per_record_path(schema: Dict[str, Any], why: str) -> None:
    client = _client()
    values = {"take no bytes": {"xs": [None, None]}, "one branch": {"u": 3}, "type null outside a union":
              {"n": None, "x": 1}, "without fields": {"e": {}, "x": 1}, "size 0": {"f": b"", "x": 1}}[why]
    got, _, native = _both(client, _frames(client, schema, [values] * 3))
    assert native.taken == 0 and got.num_rows == 3
    assert any(why in (w or "") for w in native._writers.values())


def test_a_dropped_field_with_blocks_stays_on_the_per_record_path() -> None:
    # arrow-avro skips a dropped array by the block's byte size, serdes reads (and counts) its items
    client = _client()
    writer = {"type": "record", "name": "W", "fields": [
        {"name": "id", "type": "long"}, {"name": "xs", "type": {"type": "array", "items": "long"}}]}
    frames = _frames(client, writer, [{"id": n, "xs": [1, 2]} for n in range(3)])
    reader = {"type": "record", "name": "W", "fields": [{"name": "id", "type": "long"}]}
    got, _, native = _both(client, frames, reader_schema=json.dumps(reader))
    assert native.taken == 0 and pa.record_batch(got).column("id").to_pylist() == [0, 1, 2]


UNION_REF_V1 = {"type": "record", "name": "U", "fields": [
    {"name": "a", "type": {"type": "record", "name": "Item", "fields": [{"name": "s", "type": "string"}]}},
    {"name": "u", "type": ["null", "string", "Item"]}]}
UNION_REF_V2 = dict(UNION_REF_V1, fields=UNION_REF_V1["fields"] + [{"name": "n", "type": "long", "default": 5}])


def test_a_union_naming_a_type_is_native_only_without_resolution() -> None:
    # arrow-avro 60 reads none of such a branch's bytes when it resolves a writer to a reader
    client = _client()
    frames = _frames(client, UNION_REF_V1, [{"a": {"s": "x"}, "u": {"s": "yz"}}, {"a": {"s": "x"}, "u": "w"}])
    got, _, native = _both(client, frames)
    assert native.taken == 1 and pa.record_batch(got).column("u").to_pylist() == [{"s": "yz"}, "w"]
    got, _, native = _both(client, frames, reader_schema=json.dumps(UNION_REF_V2))
    assert native.taken == 0 and pa.record_batch(got).column("n").to_pylist() == [5, 5]


def test_a_frame_over_max_items_bytes_stays_on_the_per_record_path() -> None:
    client = _client()
    frames = _frames(client, ARRAY_ITEM, [{"xs": list(range(n))} for n in (1, 30)])
    got, _, native = _both(client, frames, conf={"serdes.max.items": 20})
    assert native.declined == 1 and [i for i, _ in got.errors] == [1]


def test_a_panic_in_the_native_decoder_gives_the_per_record_result() -> None:
    mod = native_module()
    client = _client()
    frames = _frames(client, V2, [{"id": n, "name": "x", "email": None} for n in range(5)])
    deser = AvroDeserializer(client)
    deser.deserialize_arrow(frames, CTX)  # the decoder built and its writer added
    with panic_armed(mod):
        batch = deser.deserialize_arrow(frames, CTX)
    native = _native_of(deser)
    assert native.declined == 1 and "panicked" in native.refused[1]
    assert pa.record_batch(batch).column("id").to_pylist() == list(range(5))
    assert pa.record_batch(deser.deserialize_arrow(frames, CTX)).equals(pa.record_batch(batch))  # and on again
    assert native.taken == 2


def _deep(depth: int) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "record", "name": f"R{depth}", "fields": [{"name": "v", "type": "long"}]}
    for d in range(depth - 1, 0, -1):
        schema = {"type": "record", "name": f"R{d}", "fields": [{"name": "c", "type": schema}]}
    return schema


def _deep_value(depth: int) -> Dict[str, Any]:
    v: Dict[str, Any] = {"v": 1}
    for _ in range(depth - 1):
        v = {"c": v}
    return v


def test_a_thread_without_stack_for_the_schema_gets_the_per_record_path() -> None:
    client = _client()
    # 30 levels need (30 + 16) * 4 KiB of stack here; deeper records do not parse in arrow-avro
    # (serde_json's recursion limit: the writer stays on the per-record path)
    frames = _frames(client, _deep(30), [_deep_value(30)] * 2)
    deser = AvroDeserializer(client)
    out = [on_small_stack(lambda: deser.deserialize_arrow(frames, CTX), kib=160)]
    native = _native_of(deser)
    assert native.declined == 1 and native.refused is not None and "stack" in native.refused[1], (
        native._writers, native.refused, native._off)
    assert pa.record_batch(deser.deserialize_arrow(frames, CTX)).equals(pa.record_batch(out[0]))
    assert native.taken == 1


def test_columns_that_differ_from_the_reference_turn_the_native_path_off_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    client = _client()
    frames = _frames(client, V2, [{"id": n, "name": "x", "email": None} for n in range(3)])
    deser = AvroDeserializer(client)
    deser.deserialize_arrow(frames, CTX)
    native = _native_of(deser)
    native._target = pa.struct([pa.field("id", pa.int32())])  # as if arrow-avro typed a column otherwise
    with caplog.at_level(logging.WARNING, logger="serdes.arrow"):
        batch = deser.deserialize_arrow(frames, CTX)
        deser.deserialize_arrow(frames, CTX)
    assert len(caplog.records) == 1 and "differ" in caplog.records[0].message
    assert pa.record_batch(batch).column("id").to_pylist() == [0, 1, 2] and native.declined == 2


def test_bad_threads_argument() -> None:
    with pytest.raises(ValueError, match="threads"):
        AvroDeserializer(_client()).deserialize_arrow([], CTX, threads=0)


# -- the flat-record loop (rust/src/columnar/flat.rs) against arrow-avro and the per-record path --

FLAT = {"type": "record", "name": "Flat", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": {"type": "double"}}, {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"}, {"name": "ns", "type": ["null", "string"]},
    {"name": "nl", "type": ["long", "null"]}, {"name": "nb", "type": ["null", "bytes"]}]}


def _flat_record(n: int) -> Dict[str, Any]:
    edge = [(-(2**31), -(2**63)), (2**31 - 1, 2**63 - 1), (0, 0), (-1, 1)][n % 4]
    return {"b": n % 2 == 1, "i": edge[0], "l": edge[1], "f": [1.5, -0.0, float("inf"), -3.25][n % 4],
            "d": [1e308, -0.0, float("-inf"), 5e-324][n % 4], "s": ["", "zoë ☃", "a" * 300, "x"][n % 4],
            "by": [b"", b"\x00\xff", b"b" * 200, b"\x80"][n % 4], "ns": None if n % 3 else f"n{n}",
            "nl": None if n % 2 else -n, "nb": None if n % 5 else bytes([n % 256])}


@pytest.fixture
def flat_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from serdes.arrow import _native as native_columns

    monkeypatch.setattr(native_columns, "FLAT_RECORDS", False)


def test_flat_records_decode_as_arrow_avro_and_the_per_record_path_do(monkeypatch: pytest.MonkeyPatch) -> None:
    from serdes.arrow import _native as native_columns

    client = _client()
    frames = _frames(client, FLAT, [_flat_record(n) for n in range(40)])
    flat, _, native = _both(client, frames)
    assert native.taken == 1 and native._writers and flat.num_rows == 40
    monkeypatch.setattr(native_columns, "FLAT_RECORDS", False)
    crate, _, native = _both(client, frames)
    assert native.taken == 1
    assert pa.record_batch(flat).equals(pa.record_batch(crate))
    nan = _frames(client, FLAT, [dict(_flat_record(0), f=float("nan"), d=float("nan"))])
    monkeypatch.setattr(native_columns, "FLAT_RECORDS", True)
    row = pa.record_batch(AvroDeserializer(client).deserialize_arrow(nan, CTX)).to_pylist()[0]
    assert row["f"] != row["f"] and row["d"] != row["d"]


@pytest.mark.parametrize("case", [
    "boolean byte 2", "union index 2", "negative length", "int in 6 bytes", "int out of range",
    "long in 11 bytes", "truncated double", "length beyond the record", "not utf-8",
])
def test_a_flat_record_the_loop_refuses_is_the_per_record_result(case: str) -> None:
    client = _client()
    schema = {"type": "record", "name": "F", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "u", "type": ["null", "long"]},
        {"name": "d", "type": "double"}, {"name": "s", "type": "string"}]}
    good = _frames(client, schema, [{"b": True, "i": 1, "u": 2, "d": 0.5, "s": "ok"}] * 3)
    head, dbl = good[0][:5], good[0][9:17]
    body = {
        "boolean byte 2": b"\x02\x02\x02\x04" + dbl + b"\x04ok",
        "union index 2": b"\x01\x02\x04\x04" + dbl + b"\x04ok",
        "negative length": b"\x01\x02\x02\x04" + dbl + b"\x03ok",
        "int in 6 bytes": b"\x01\x82\x80\x80\x80\x80\x00\x02\x04" + dbl + b"\x04ok",
        "int out of range": b"\x01\x80\x80\x80\x80\x10\x02\x04" + dbl + b"\x04ok",
        "long in 11 bytes": b"\x01\x02\x02" + b"\x80" * 10 + b"\x00" + dbl + b"\x04ok",
        "truncated double": b"\x01\x02\x02\x04" + dbl[:5],
        "length beyond the record": b"\x01\x02\x02\x04" + dbl + b"\x40ok",
        "not utf-8": b"\x01\x02\x02\x04" + dbl + b"\x04\xff\xfe",
    }[case]
    frames = good[:1] + [head + body] + good[1:]
    got, _, native = _both(client, frames)
    assert native.taken == 0 and native.declined == 1 and native.refused is not None
    # the per-record path decides: an error, or (a boolean byte 2, a 6-byte int, which it
    # reads) a value -- the loop is stricter than it, never looser
    assert [i for i, _ in got.errors] == ([] if case in ("boolean byte 2", "int in 6 bytes") else [1]), case
