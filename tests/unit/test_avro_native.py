"""The native Avro decoder against the pure-Python one and fastavro (differential), and its limits.

Differential: on random schemas (tests/support/avro_strategies.py), random evolved reader schemas,
and random, truncated, extended and bit-flipped payloads, native and pure return identical values
(types, key order and NaN included) or fail with the same error class -- the class the
deserializer reports: a ``SerdesError`` as raised, anything else as ``CorruptPayloadError`` (what
``serdes._serde._payload_error`` turns it into; the pure decoder lets Python's ``IndexError`` or
``struct.error`` escape where the native one raises ``CorruptPayloadError`` itself). Values that
decode also match fastavro's ``schemaless_reader``.

Every test here needs the extension and skips, saying so, when it is not built (CI builds it).
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import math
from typing import Any, Tuple

import fastavro
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serdes import CorruptPayloadError, SchemaMismatchError, SerdesError
from serdes._limits import Limits
from serdes.avro import _native_decoder
from serdes.avro._codegen import Unsupported, compile_decoder
from serdes.avro._native_decoder import compile_native_decoder

from tests.support.avro_samples import records
from tests.support.avro_strategies import evolve, schema_and_record
from tests.support.confluent_releases import at_least
from tests.support.implementations import is_native, native_module

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
_DEFAULT_LIMITS = Limits()


@pytest.fixture(scope="module")
def native() -> Any:
    return native_module()


def _enc(schema: Any, rec: Any) -> bytes:
    fo = io.BytesIO()
    fastavro.schemaless_writer(fo, fastavro.parse_schema(schema), rec)
    return fo.getvalue()


def _same(a: Any, b: Any) -> bool:
    """Equality that also compares types (True vs 1, 1 vs 1.0, str vs bytes), key order and NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, datetime.datetime):
        return a == b and a.tzinfo is b.tzinfo
    return a == b


def _outcome(dec: Any, data: bytes) -> Tuple[str, Any]:
    try:
        return "ok", dec(data, 0, None)
    except SerdesError as e:
        return "err", type(e)
    except Exception:  # noqa: BLE001 - what the deserializer reports as CorruptPayloadError
        return "err", CorruptPayloadError


def _pair(native: Any, w: Any, r: Any = None, rrn: bool = False, limits: Limits = _DEFAULT_LIMITS) -> Tuple[Any, Any]:
    pure = compile_decoder(w, r, rrn, limits=limits)
    nat = compile_native_decoder(w, r, rrn, None, limits, native=native)
    return pure, nat


def _agree(pure: Any, nat: Any, data: bytes, what: Any) -> Tuple[str, Any]:
    p, n = _outcome(pure, data), _outcome(nat, data)
    assert p[0] == n[0], (what, data.hex(), p, n)
    if p[0] == "ok":
        assert _same(n[1], p[1]), (what, data.hex(), p, n)
    else:
        assert n[1] is p[1], (what, data.hex(), p, n)
    return n


# -- values ----------------------------------------------------------------------------------------

@_SETTINGS
@given(schema_and_record(), st.booleans())
def test_native_pure_and_fastavro_return_identical_values(native: Any, sr: Any, rrn: bool) -> None:
    schema, rec = sr
    w = fastavro.parse_schema(schema)
    data = _enc(schema, rec)
    pure, nat = _pair(native, w, None, rrn)
    assert is_native(nat) or w == "bytes" or (isinstance(w, dict) and w.get("type") == "bytes")
    kind, value = _agree(pure, nat, data, json.dumps(schema))
    assert kind == "ok"
    expected = fastavro.schemaless_reader(io.BytesIO(data), w, None, rrn)
    assert _same(value, expected), (json.dumps(schema), value, expected)


@_SETTINGS
@given(st.data())
def test_native_and_pure_agree_on_evolved_reader_schemas(native: Any, data: Any) -> None:
    schema, rec = data.draw(schema_and_record(max_depth=2))
    reader = data.draw(evolve(schema))
    try:
        r = fastavro.parse_schema(reader)
    except Exception:
        assume(False)
    w = fastavro.parse_schema(schema)
    rrn = data.draw(st.booleans())
    try:
        pure, nat = _pair(native, w, r, rrn)
    except (SchemaMismatchError, Unsupported) as e:
        # build-time answers come from the same code for both (compile_decoder runs first)
        with pytest.raises(type(e)):
            compile_native_decoder(w, r, rrn, None, native=native)
        return
    _agree(pure, nat, _enc(schema, rec), (json.dumps(schema), json.dumps(reader)))


# -- garbage ---------------------------------------------------------------------------------------

@_SETTINGS
@given(schema_and_record(max_depth=2), st.data())
def test_native_and_pure_agree_on_truncated_extended_and_flipped_payloads(native: Any, sr: Any, data: Any) -> None:
    schema, rec = sr
    w = fastavro.parse_schema(schema)
    good = _enc(schema, rec)
    pure, nat = _pair(native, w)
    what = json.dumps(schema)
    for cut in range(len(good)):
        _agree(pure, nat, good[:cut], what)
    _agree(pure, nat, good + data.draw(st.binary(min_size=1, max_size=4)), what)
    if good:
        i = data.draw(st.integers(0, len(good) - 1))
        flipped = good[:i] + bytes([good[i] ^ data.draw(st.integers(1, 255))]) + good[i + 1:]
        _agree(pure, nat, flipped, what)


@_SETTINGS
@given(schema_and_record(max_depth=2), st.binary(max_size=48), st.data())
def test_native_and_pure_agree_on_random_bytes(native: Any, sr: Any, garbage: bytes, data: Any) -> None:
    schema, _ = sr
    w = fastavro.parse_schema(schema)
    reader = data.draw(st.one_of(st.none(), evolve(schema)))
    try:
        r = fastavro.parse_schema(reader) if reader is not None else None
        pure, nat = _pair(native, w, r, limits=Limits(max_items=1000, max_depth=8))
    except Exception:  # an invalid evolved default, or a pair that never resolves: not this test
        assume(False)
    _agree(pure, nat, garbage, (json.dumps(schema), json.dumps(reader)))


@pytest.mark.parametrize("name", ["trivial", "standard", "complex"])
def test_sample_records_through_both(native: Any, name: str) -> None:
    schema, rec = records()[name]
    data = _enc(schema, rec)
    pure, nat = _pair(native, fastavro.parse_schema(schema))
    assert is_native(nat)
    assert _same(nat(data, 0, None), pure(data, 0, None))
    assert nat(data, 0, None) == rec
    # the decoder is a serdes Decoder: (data, offset, ctx), the payload is data[offset:]
    assert nat(b"\x00\x00\x00\x00\x01" + data, 5, None) == rec
    assert nat(bytearray(data)) == rec and nat(memoryview(data), 0) == rec


# -- limits ----------------------------------------------------------------------------------------

_NODE = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
_ARR_NULL = {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}


def _zz(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    n &= 0xFFFFFFFFFFFFFFFF
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_native_depth_limit(native: Any) -> None:
    dec = compile_native_decoder(_NODE, limits=Limits(max_depth=10), native=native)
    assert is_native(dec)
    value: Any = None
    for _ in range(10):
        value = {"next": value}
    assert dec(b"\x02" * 10 + b"\x00") == {"next": value}
    with pytest.raises(CorruptPayloadError, match="serdes.max.depth=10"):
        dec(b"\x02" * 11 + b"\x00")
    # a hostile depth far past the limit is refused, not a stack overflow
    with pytest.raises(CorruptPayloadError, match="serdes.max.depth=100"):
        compile_native_decoder(_NODE, native=native)(b"\x02" * 1_000_000 + b"\x00")


def test_native_depth_limit_also_applies_to_skipped_values(native: Any) -> None:
    writer = {"type": "record", "name": "W", "fields": [{"name": "n", "type": _NODE}, {"name": "b", "type": "int"}]}
    reader = {"type": "record", "name": "W", "fields": [{"name": "b", "type": "int"}]}
    w, r = fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    dec = compile_native_decoder(w, r, limits=Limits(max_depth=5), native=native)
    assert is_native(dec)
    assert dec(b"\x02" * 4 + b"\x00" + _zz(7)) == {"b": 7}
    with pytest.raises(CorruptPayloadError, match="serdes.max.depth=5"):
        dec(b"\x02" * 50 + b"\x00" + _zz(7))


@pytest.mark.parametrize("payload", [
    _zz(6) + _zz(0),  # one block over the budget
    _zz(3) + _zz(3) + _zz(0),  # two blocks over it together
    _zz(-6) + _zz(0) + _zz(0),  # a negative count (with its byte size)
    _zz(2**62),  # a count no payload could hold
    _zz(-(2**63)) + _zz(0),  # the most negative long (then its byte size): |count| still fits the arithmetic
])
def test_native_items_budget(native: Any, payload: bytes) -> None:
    dec = compile_native_decoder(_ARR_NULL, limits=Limits(max_items=5), native=native)
    assert is_native(dec)
    assert dec(_zz(5) + _zz(0)) == {"a": [None] * 5}
    with pytest.raises(CorruptPayloadError, match="serdes.max.items=5"):
        dec(payload)


def test_native_items_budget_counts_skipped_items(native: Any) -> None:
    writer = {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}},
                                                       {"name": "b", "type": "int"}]}
    reader = {"type": "record", "name": "R", "fields": [{"name": "b", "type": "int"}]}
    dec = compile_native_decoder(fastavro.parse_schema(writer), fastavro.parse_schema(reader),
                                 limits=Limits(max_items=5), native=native)
    assert dec(_zz(5) + _zz(0) + _zz(1)) == {"b": 1}
    with pytest.raises(CorruptPayloadError, match="serdes.max.items=5"):
        dec(_zz(3) + _zz(3) + _zz(0) + _zz(1))


@pytest.mark.parametrize("schema,payload,message", [
    ("string", _zz(2**62) + b"abc", "length 4611686018427387904 but only 3 bytes left"),
    ({"type": "record", "name": "B", "fields": [{"name": "b", "type": "bytes"}]}, _zz(-1), "negative length -1"),
    ({"type": "map", "values": "null"}, _zz(1000), "block of 1000 items but only 0 bytes left"),
    ({"type": "array", "items": "long"}, _zz(1000) + b"\x00", "block of 1000 items but only 1 bytes left"),
    ("long", b"\xff" * 10 + b"\x01", "varint longer than 10 bytes"),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, _zz(-1), "enum index -1 out of range"),
    (["null", "int"], _zz(5), "union branch index 5 out of range for a 2-branch union"),
    ("int", _zz(1) + b"\x00", "1 trailing bytes"),
    ({"type": "fixed", "name": "F", "size": 4}, b"ab", "payload ends 2 bytes early"),
    ("long", b"\x80", "payload ends early"),
    ("double", b"\x00" * 7, "payload ends early"),
    ({"type": "long", "logicalType": "timestamp-millis"}, _zz(2**62), "out of datetime's range"),
    ({"type": "int", "logicalType": "date"}, _zz(-10**9), "out of range"),
])
def test_native_huge_lengths_and_bad_indexes_are_typed_errors(native: Any, schema: Any, payload: bytes, message: str) -> None:
    dec = compile_native_decoder(fastavro.parse_schema(schema), native=native)
    assert is_native(dec)
    with pytest.raises(CorruptPayloadError, match=message):
        dec(payload)
    pure = compile_decoder(fastavro.parse_schema(schema))
    # the pure decoder refuses it too, with whatever Python raises there (the deserializer types both alike)
    with pytest.raises(Exception):  # noqa: B017
        pure(payload, 0, None)


def test_native_invalid_utf8_raises_what_the_pure_decoder_raises(native: Any) -> None:
    dec = compile_native_decoder("string", native=native)
    with pytest.raises(UnicodeDecodeError):
        dec(_zz(2) + b"\xc3\x28")
    with pytest.raises(UnicodeDecodeError):
        compile_decoder("string")(_zz(2) + b"\xc3\x28", 0, None)


def test_any_depth_limit_decodes_natively_with_the_pure_decoder_past_the_stack(native: Any) -> None:
    # the stack guard bounds the native recursion whatever serdes.max.depth says; a value deeper
    # than the thread's stack allows natively goes to the pure decoder (test_native_guards.py
    # covers small thread stacks)
    dec = compile_native_decoder(_NODE, limits=Limits(max_depth=10**30, max_schema_depth=10**30), native=native)
    assert is_native(dec)
    assert dec(b"\x02" * 3 + b"\x00") == {"next": {"next": {"next": {"next": None}}}}
    deep = b"\x02" * 200_000 + b"\x00"
    with pytest.raises(RecursionError):  # the pure decoder's verdict (a CorruptPayloadError in the deserializer)
        dec(deep)


def test_raw_bytes_writer_stays_pure(native: Any) -> None:
    dec = compile_native_decoder("bytes", native=native)
    if at_least("2.13"):  # the raw payload (a slice): no program to run
        assert not is_native(dec)
        assert dec(b"\x00raw", 1, None) == b"raw"
    else:  # confluent-kafka 2.12 writes a "bytes" schema as Avro bytes: a program like any other
        assert is_native(dec)
        assert dec(b"\x00\x06raw", 1, None) == b"raw"


def test_malformed_programs_are_refused_not_run(native: Any) -> None:
    from serdes import _native

    args = (10, 10, None, CorruptPayloadError, SchemaMismatchError, datetime.timezone.utc)
    for nodes, root in [([], 0), ([(0, (0,))], 1), ([(9, (0,), 5, 1)], 0), ([(99, (0,))], 0),
                        ([(12, (0,), ["a"], [(0, 3)], [], None, False)], 0), ([(0, (42,))], 0)]:
        with pytest.raises(ValueError, match="invalid serdes Avro decoder program"):
            native.AvroDecoder(nodes, root, *args)
    assert _native.active() is native


def test_forced_pure_builds_the_pure_decoder(native: Any) -> None:
    from serdes import _native

    with _native.forced_pure():
        dec = _native_decoder.compile_native_decoder(_NODE)
    assert not is_native(dec)
    assert is_native(_native_decoder.compile_native_decoder(_NODE))


@pytest.mark.parametrize("text", [
    "12345678-1234-5678-1234-567812345678", "ABCDEF01-ABCD-ABCD-ABCD-ABCDEF012345", "{12345678-1234-5678-1234-567812345678}",
    "urn:uuid:12345678-1234-5678-1234-567812345678", "12345678123456781234567812345678", "1234-5678-1234-5678-1234-5678-12345678",
    "12345678-1234-5678-1234-56781234567g", "12345678-1234-5678-1234_567812345678", "not a uuid", "",
])
def test_native_uuid_is_the_object_uuid_builds(native: Any, text: str) -> None:
    schema = {"type": "string", "logicalType": "uuid"}
    pure, nat = _pair(native, schema)
    data = _enc("string", text)
    kind, value = _agree(pure, nat, data, text)
    if kind == "ok":
        p = pure(data, 0, None)
        assert (value.int, value.is_safe, str(value), hash(value)) == (p.int, p.is_safe, str(p), hash(p))


@pytest.mark.parametrize("unscaled", [0, 1, -1, 99, -100, 10**11 - 1, -(10**11), 10**12, -(10**15), 2**100, -(2**127)])
@pytest.mark.parametrize("scale", [0, 2, 11])
def test_native_decimal_is_the_value_the_pure_decoder_builds(native: Any, unscaled: int, scale: int) -> None:
    schema = {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": scale}
    pure, nat = _pair(native, {"type": "record", "name": "D", "fields": [{"name": "d", "type": schema}]})
    raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    for b in (raw, b"", b"\xff" + raw if unscaled < 0 else b"\x00" + raw):
        _agree(pure, nat, _enc("bytes", b), (unscaled, scale, b))
