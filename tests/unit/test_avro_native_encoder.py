"""The native Avro encoder (rust/src/avro_encode) against the pure encoder and fastavro.

Differential: on random schemas (tests/support/avro_strategies.py) the native encoder, the pure
encoder and fastavro's ``schemaless_writer`` write identical bytes for valid records, and native and
pure raise the same typed error (class and message) for invalid ones. Hostile values (cyclic,
deep, huge ints, subclasses, mutation during encoding) get a typed error or the pure encoder's
answer, never a crash. Every test here needs the extension and skips, saying why, without it (CI
builds it: .ci/run).
"""

from __future__ import annotations

import copy
import datetime
import decimal
import io
import json
import math
import uuid
from collections import OrderedDict
from typing import Any, Callable, List, Tuple

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serdes import ValidationError, _native
from serdes.avro import AvroSerializer
from serdes.avro._codegen import compile_encoder
from serdes.avro._native_encoder import compile_native_encoder, is_native_encoder

from tests.support.small_stack import on_small_stack  # noqa: E402
from tests.support.avro_samples import COMPLEX, STANDARD, records
from tests.support.avro_strategies import _named_table, schema_and_record, schemas, values
from tests.support.confluent_releases import at_least
from tests.support.implementations import Implementation, require_native

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
_PREFIX = b"\x00\x00\x00\x00\x2a"


@pytest.fixture(autouse=True)
def _needs_native() -> None:
    require_native()


def _outcome(enc: Callable[[Any, Any], bytes], value: Any) -> Tuple[str, Any]:
    try:
        return "ok", enc(value, None)
    except Exception as e:  # noqa: BLE001 - compared between the implementations
        return type(e).__name__, str(e)


def _pair(schema: Any, **kw: Any) -> Tuple[Any, Any]:
    native = compile_native_encoder(schema, _PREFIX, **kw)
    pure = compile_encoder(schema, _PREFIX, **kw)
    return native, pure


def _fastavro(schema: Any, value: Any) -> bytes:
    fo = io.BytesIO()
    fastavro.schemaless_writer(fo, fastavro.parse_schema(copy.deepcopy(schema)), value)
    return _PREFIX + fo.getvalue()


class _Str(str):
    pass


class _Int(int):
    pass


NULLABLE_ONLY = {"type": "record", "name": "N", "fields": [
    {"name": "a", "type": "int"}, {"name": "u", "type": ["null", "string"]},
    {"name": "v", "type": ["long", "null"], "default": 3}]}
GENERAL_UNION = {"type": "record", "name": "G", "fields": [{"name": "u", "type": ["int", "string"]}]}
LOGICAL_UNION = {"type": "record", "name": "G", "fields": [
    {"name": "u", "type": ["null", "string", {"type": "long", "logicalType": "timestamp-millis"}]}]}
LINKED = {"type": "record", "name": "L", "fields": [{"name": "v", "type": "long"}, {"name": "next", "type": ["null", "L"]}]}
TREE = {"type": "record", "name": "T", "fields": [{"name": "children", "type": {"type": "array", "items": "T"}}]}
JSONISH = {"type": "record", "name": "J", "fields": [
    {"name": "v", "type": ["null", "boolean", "long", "double", "string", {"type": "array", "items": "J"}]}]}


# -- which encoder is built ------------------------------------------------------------------------

@pytest.mark.parametrize("schema", [STANDARD, COMPLEX, NULLABLE_ONLY, GENERAL_UNION, LINKED, TREE, "long", {"type": "array", "items": "string"}],
                         ids=["standard", "complex", "nullable", "general-union", "linked", "tree", "long", "array"])
def test_supported_schemas_build_the_native_encoder(schema: Any) -> None:
    assert is_native_encoder(compile_native_encoder(schema))


@pytest.mark.parametrize("schema", [LOGICAL_UNION, "bytes", {"type": "bytes"}], ids=["logical-union", "bytes", "bytes-dict"])
def test_unsupported_schemas_build_the_pure_encoder(schema: Any) -> None:
    enc = compile_native_encoder(schema, _PREFIX)
    # a "bytes" schema is the raw value on confluent-kafka 2.13+ (no encoder to run); on 2.12 it is
    # Avro bytes, which the native encoder writes
    assert bool(is_native_encoder(enc)) == (schema is not LOGICAL_UNION and not at_least("2.13"))
    value = {"u": "x"} if schema is LOGICAL_UNION else b"raw"
    assert enc(value, None) == compile_encoder(schema, _PREFIX)(value, None)


def test_forced_pure_builds_the_pure_encoder() -> None:
    with _native.forced_pure():
        enc = compile_native_encoder(STANDARD)
    assert not is_native_encoder(enc)


def test_serializer_uses_the_native_encoder_and_matches_pure() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://native-enc-{uuid.uuid4().hex}"})
    ctx = SerializationContext("t", MessageField.VALUE)
    for name in ("standard", "complex"):
        schema, rec = records()[name]
        ser = AvroSerializer(client, json.dumps(schema))
        with _native.forced_pure():
            pure = AvroSerializer(client, json.dumps(schema))
            want = pure(rec, ctx)
        assert ser(rec, ctx) == want
        assert any(is_native_encoder(e) for e in ser._encoders.values())
        assert not any(is_native_encoder(e) for e in pure._encoders.values())


# -- differential: valid values --------------------------------------------------------------------

@_SETTINGS
@given(schema_and_record())
def test_valid_records_native_pure_fastavro_identical_bytes(sr: Any) -> None:
    schema, rec = sr
    native, pure = _pair(schema)
    got = native(rec, None)
    assert got == pure(rec, None) == _fastavro(schema, rec)


@_SETTINGS
@given(schema_and_record(), st.sampled_from([{"strict": True}, {"strict_allow_default": True}]))
def test_strict_modes_native_and_pure_agree(sr: Any, mode: Any) -> None:
    schema, rec = sr
    native, pure = _pair(schema, **mode)
    assert _outcome(native, rec) == _outcome(pure, rec)
    extra = dict(rec, not_a_field=1)
    assert _outcome(native, extra) == _outcome(pure, extra)
    for k in list(rec)[:1]:
        missing = {x: y for x, y in rec.items() if x != k}
        assert _outcome(native, missing) == _outcome(pure, missing)


def _nullable_unions(s: Any) -> Any:
    """``s`` with every general union cut to ``["null", first other branch]`` (natively compiled)."""
    if isinstance(s, list):
        others = [b for b in s if b != "null"]
        return ["null", _nullable_unions(others[0])]
    if isinstance(s, dict):
        s = dict(s)
        if s["type"] in ("record", "error"):
            s["fields"] = [dict(f, type=_nullable_unions(f["type"])) for f in s["fields"]]
        elif s["type"] == "array":
            s["items"] = _nullable_unions(s["items"])
        elif s["type"] == "map":
            s["values"] = _nullable_unions(s["values"])
    return s


@_SETTINGS
@given(st.data())
def test_valid_records_on_natively_compiled_schemas(data: Any) -> None:
    schema = _nullable_unions(data.draw(schemas()))
    try:
        fastavro.parse_schema(copy.deepcopy(schema))
    except Exception:  # noqa: BLE001 - a named type defined only in a dropped branch
        assume(False)
    rec = data.draw(values(schema, _named_table(schema, {})))
    native, pure = _pair(schema)
    assert is_native_encoder(native)
    assert native(rec, None) == pure(rec, None) == _fastavro(schema, rec)


# -- differential: invalid values ------------------------------------------------------------------

_JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**31, max_value=2**70),
    st.floats(), st.text(max_size=4), st.binary(max_size=4), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2), st.just(("X", 1)),
    st.just(OrderedDict(a=1)), st.just(bytearray(b"ab")), st.just(1.5j), st.just("\ud800"),
    st.dates(), st.datetimes(), st.uuids(), st.decimals(allow_nan=False, allow_infinity=False),
)


def _paths(v: Any, here: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    out = [here]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, here + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, here + (i,))
    return out


def _replaced(v: Any, path: Tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    v = copy.copy(v)
    v[path[0]] = _replaced(v[path[0]], path[1:], new)
    return v


@st.composite
def _any_or_native_schema_and_record(draw: Any) -> Any:
    """A random schema and record; half the time with unions cut so the native program compiles."""
    schema = draw(schemas())
    if draw(st.booleans()):
        cut = _nullable_unions(schema)
        try:
            fastavro.parse_schema(copy.deepcopy(cut))
            schema = cut
        except Exception:  # noqa: BLE001 - a named type defined only in a dropped branch
            pass
    return schema, draw(values(schema, _named_table(schema, {})))


@_SETTINGS
@given(_any_or_native_schema_and_record(), st.data())
def test_invalid_values_same_error_in_native_and_pure(sr: Any, data: Any) -> None:
    schema, rec = sr
    path = data.draw(st.sampled_from(_paths(rec)))
    action = data.draw(st.sampled_from(["replace", "replace", "drop", "add"]))
    if action == "replace" or not path:
        bad = _replaced(rec, path, data.draw(_JUNK))
    else:
        bad = copy.deepcopy(rec)
        holder = bad
        for p in path[:-1]:
            holder = holder[p]
        if isinstance(holder, dict):
            if action == "drop":
                del holder[path[-1]]
            else:
                holder["zz_extra"] = data.draw(_JUNK)
        else:
            holder.append(data.draw(_JUNK))
    native, pure = _pair(schema)
    n, p = _outcome(native, bad), _outcome(pure, bad)
    assert n == p
    if n[0] == "ok":  # the change left a valid value: fastavro writes the same bytes
        try:
            want = _fastavro(schema, bad)
        except Exception:  # noqa: BLE001 - fastavro's own failure on a value serdes accepts
            return
        assert n[1] == want


# -- semantics the pure encoder defines ------------------------------------------------------------

def test_defaults_nullable_branches_and_tuple_notation() -> None:
    native, pure = _pair(NULLABLE_ONLY)
    for value in [{"a": 1, "u": None}, {"a": 1, "u": "x", "v": None}, {"a": 1, "u": "x", "v": 9},
                  {"a": 1}, {"a": 1, "u": ("string", "x")}, {"a": 1, "u": 5}]:
        assert _outcome(native, value) == _outcome(pure, value), value


_UNION_CASES = [
    ["null", "int", "long", "string"], ["long", "int"], ["float", "double"], ["float", "int"], ["double", "float"],
    ["int", "float", "string", "double"], ["boolean", "string", {"type": "enum", "name": "E", "symbols": ["A", "B"]}],
    [{"type": "enum", "name": "E", "symbols": ["A", "B"]}, "string"], ["bytes", {"type": "fixed", "name": "F", "size": 2}],
    [{"type": "fixed", "name": "F", "size": 2}, "bytes"], ["string", {"type": "array", "items": "int"}],
    ["null", {"type": "map", "values": "long"}, "string"], ["int", {"type": "record", "name": "Q", "fields": [{"name": "x", "type": "int"}]}],
    ["null", {"type": "record", "name": "Q", "fields": [{"name": "x", "type": "int"}]},
     {"type": "record", "name": "P", "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}]}],
    ["null", "boolean", "double"],
]
_UNION_VALUES = [None, True, False, 0, 5, -(2**31) - 1, 2**31, 2**40, 2**63, 1.5, -0.0, math.inf, "A", "C", "", b"ab", b"abc",
                 bytearray(b"ab"), [1, 2], [], (1, 2), ("string", "x"), {"k": 1}, {"x": 1}, {"x": 1, "y": 2}, {"-type": "P", "x": 1},
                 _Str("A"), OrderedDict(k=1), 1.5j]


@pytest.mark.parametrize("branches", _UNION_CASES, ids=lambda b: json.dumps(b)[:40])
def test_general_unions_choose_the_branch_fastavro_chooses(branches: Any) -> None:
    schema = {"type": "record", "name": "U", "fields": [{"name": "u", "type": branches}]}
    native, pure = _pair(schema)
    assert is_native_encoder(native)
    for v in _UNION_VALUES:
        got = _outcome(native, {"u": v})
        assert got == _outcome(pure, {"u": v}), v
        if got[0] == "ok":
            assert got[1] == _fastavro(schema, {"u": v}), v


@pytest.mark.parametrize("field, value", [
    ("int", 2**31), ("int", -(2**31) - 1), ("long", 2**63), ("long", -(2**63) - 1), ("long", 2**1000),
    ("long", True), ("int", 1.0), ("float", 2**1000), ("float", 1e300), ("float", -1e39), ("double", 2**1000),
    ("double", 2**53 + 1), ("float", math.inf), ("double", -math.inf), ("float", math.nan), ("double", math.nan),
    ("string", "\ud800"), ("string", b"x"), ("bytes", "x"), ("bytes", memoryview(b"x")), ("boolean", 1),
    ("long", 2**63 - 1), ("long", -(2**63)), ("int", 2**31 - 1),
])
def test_edge_scalars_same_outcome(field: str, value: Any) -> None:
    schema = {"type": "record", "name": "S", "fields": [{"name": "x", "type": field}]}
    native, pure = _pair(schema)
    n, p = _outcome(native, {"x": value}), _outcome(pure, {"x": value})
    if isinstance(value, float) and math.isnan(value):
        assert n[0] == p[0] == "ok" and len(n[1]) == len(p[1])
    else:
        assert n == p


def test_subclasses_and_mappings_get_the_pure_answer() -> None:
    schema = {"type": "record", "name": "S", "fields": [
        {"name": "s", "type": "string"}, {"name": "i", "type": "long"},
        {"name": "m", "type": {"type": "map", "values": "int"}}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}]}
    native, pure = _pair(schema)
    base = {"s": "x", "i": 1, "m": {"k": 1}, "e": "A"}
    for value in [base, dict(base, s=_Str("y")), dict(base, i=_Int(5)), OrderedDict(base), dict(base, m=OrderedDict(k=2)),
                  dict(base, e=_Str("A")), dict(base, m={1: 2})]:
        assert _outcome(native, value) == _outcome(pure, value)


def test_logical_types_take_what_fastavro_prepares() -> None:
    schema, rec = records()["complex"]
    native, pure = _pair(schema)
    for value in [rec, dict(rec, id=str(rec["id"])), dict(rec, at=1_700_000_000_000_000), dict(rec, day=19000),
                  dict(rec, at=datetime.datetime(2024, 1, 1)), dict(rec, id=12), dict(rec, amount="1.5"),
                  dict(rec, amount=b"\x01")]:
        assert _outcome(native, value) == _outcome(pure, value)


def test_to_dict_is_called_once_per_record() -> None:
    calls: List[Any] = []

    def to_dict(obj: Any, ctx: Any) -> Any:
        calls.append(ctx)
        return obj

    schema, rec = records()["standard"]
    enc = compile_native_encoder(schema, _PREFIX, to_dict=to_dict)
    assert is_native_encoder(enc)
    assert enc(rec, "ctx") == compile_encoder(schema, _PREFIX)(rec, None)
    assert calls == ["ctx"]
    with pytest.raises(ValidationError):
        enc(dict(rec, count="x"), "ctx2")  # the fallback runs on the converted value
    assert calls == ["ctx", "ctx2"]


# -- recursive schemas and hostile values ----------------------------------------------------------

def _linked(n: int) -> Any:
    v = None
    for i in range(n):
        v = {"v": i, "next": v}
    return v


def test_recursive_schema_matches_fastavro() -> None:
    native, pure = _pair(LINKED)
    assert native.recursive  # type: ignore[attr-defined]
    for n in (1, 2, 10, 40):
        assert native(_linked(n), None) == pure(_linked(n), None) == _fastavro(LINKED, _linked(n))
    tree = {"children": [{"children": []}, {"children": [{"children": []}]}]}
    assert compile_native_encoder(TREE, _PREFIX)(tree, None) == _fastavro(TREE, tree)


def test_recursive_general_union_matches_fastavro() -> None:
    native, pure = _pair(JSONISH)
    assert is_native_encoder(native) and native.recursive  # type: ignore[attr-defined]
    for v in [None, True, 3, 2.5, "s", [], [{"v": 1}, {"v": [{"v": "x"}]}], [{"v": None}], {"v": 1}, 2**70]:
        got = _outcome(native, {"v": v})
        assert got == _outcome(pure, {"v": v}), v
        if got[0] == "ok":
            assert got[1] == _fastavro(JSONISH, {"v": v})


def test_recursive_values_are_bounded_by_max_depth() -> None:
    native = compile_native_encoder(LINKED, _PREFIX)
    # each list node is a record inside a union: two levels of serdes.max.depth (100)
    native(_linked(50), None)
    with pytest.raises(ValidationError, match="serdes.max.depth=100"):
        native(_linked(51), None)
    with pytest.raises(ValidationError, match="serdes.max.depth"):
        native(_linked(100_000), None)


def test_cyclic_values_are_a_validation_error() -> None:
    # (the pure encoder refuses them before fastavro, whose validator crashes on a cycle: tested below)
    d: Any = {"v": 1}
    d["next"] = d
    with pytest.raises(ValidationError, match="serdes.max.depth"):
        compile_native_encoder(LINKED)(d, None)
    t: Any = {"children": []}
    t["children"].append(t)
    with pytest.raises(ValidationError, match="serdes.max.depth"):
        compile_native_encoder(TREE)(t, None)


def test_self_referencing_list_in_a_finite_schema() -> None:
    a: Any = []
    a.append(a)
    native, pure = _pair({"type": "array", "items": {"type": "array", "items": "long"}})
    n = _outcome(native, a)
    assert n == _outcome(pure, a) and n[0] == "ValidationError"


def test_huge_collections_and_strings() -> None:
    schema = {"type": "record", "name": "H", "fields": [
        {"name": "xs", "type": {"type": "array", "items": "long"}}, {"name": "s", "type": "string"},
        {"name": "m", "type": {"type": "map", "values": "boolean"}}]}
    native, pure = _pair(schema)
    value = {"xs": list(range(-50_000, 50_000)), "s": "é" * 100_000, "m": {str(i): i % 2 == 0 for i in range(10_000)}}
    assert native(value, None) == pure(value, None)


class _Meddling(datetime.datetime):
    """A datetime whose conversion (run by fastavro's prepare function) empties the list holding it."""

    victim: List[Any] = []

    def timestamp(self) -> float:
        self.victim.clear()
        return super().timestamp()

    def utcoffset(self) -> Any:
        self.victim.clear()
        return super().utcoffset()


def test_mutation_during_encoding_is_safe() -> None:
    schema = {"type": "array", "items": {"type": "long", "logicalType": "timestamp-micros"}}
    native = compile_native_encoder(schema, _PREFIX)
    utc = datetime.timezone.utc
    items: List[Any] = [_Meddling(2024, 1, 1, tzinfo=utc), datetime.datetime(2024, 1, 2, tzinfo=utc)]
    _Meddling.victim = items
    # no crash; the answer is whatever the pure encoder makes of the list as it is now
    out = _outcome(native, items)
    assert out[0] in ("ok", "ValidationError")


def test_shared_encoder_across_threads() -> None:
    import threading

    schema, rec = records()["complex"]
    native = compile_native_encoder(schema, _PREFIX)
    want = native(rec, None)
    bad: List[Any] = []

    def run() -> None:
        for _ in range(500):
            if native(rec, None) != want:
                bad.append(1)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


class _UUID(uuid.UUID):
    def __str__(self) -> str:
        return "not-the-uuid"


_LOGICAL_SCHEMA = {"type": "record", "name": "LT", "fields": [
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}


@_SETTINGS
@given(st.uuids(), st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30),
                                timezones=st.sampled_from([datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=5, minutes=30))])),
       st.dates(), st.booleans())
def test_native_logical_conversions_match_fastavro(u: Any, at: Any, day: Any, as_ints: bool) -> None:
    native, pure = _pair(_LOGICAL_SCHEMA)
    rec = {"id": u, "ms": at, "us": at, "day": day}
    if as_ints:
        rec.update(ms=int(at.timestamp() * 1000), us=int(at.timestamp()) * 10**6, day=day.toordinal() - 719163)
    assert native(rec, None) == pure(rec, None) == _fastavro(_LOGICAL_SCHEMA, rec)


def test_logical_subclasses_and_naive_values_use_the_prepare_function() -> None:
    native, pure = _pair(_LOGICAL_SCHEMA)
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    at = datetime.datetime(1960, 1, 1, 0, 0, 0, 999, tzinfo=datetime.timezone.utc)
    day = datetime.date(1900, 3, 1)
    for rec in [{"id": u, "ms": at, "us": at, "day": day},
                {"id": _UUID(int=5), "ms": at, "us": at, "day": day},
                {"id": str(u), "ms": at.replace(tzinfo=None), "us": at.replace(tzinfo=None), "day": datetime.datetime(2020, 1, 1)},
                {"id": u, "ms": at, "us": at, "day": "2020-01-02"}]:
        assert _outcome(native, rec) == _outcome(pure, rec)


def test_a_registered_logical_writer_replaces_the_native_conversion(monkeypatch: Any) -> None:
    from fastavro.write import LOGICAL_WRITERS

    monkeypatch.setitem(LOGICAL_WRITERS, "string-uuid", lambda data, schema: "custom")
    native, pure = _pair(_LOGICAL_SCHEMA)
    rec = {"id": uuid.uuid4(), "ms": 1, "us": 2, "day": 3}
    assert native(rec, None) == pure(rec, None)
    assert b"custom" in native(rec, None)


def test_a_huge_max_depth_is_bounded_by_the_stack() -> None:
    from serdes._limits import Limits

    # no count stops a cycle here: the thread's stack does, and the pure encoder then names it
    enc = compile_native_encoder(LINKED, _PREFIX, limits=Limits(max_depth=10**9))
    d: Any = {"v": 1}
    d["next"] = d
    with pytest.raises(ValidationError, match="reference cycle"):
        enc(d, None)


def test_the_depth_cap_fits_a_small_thread_stack() -> None:

    from serdes._limits import Limits

    enc = compile_native_encoder(LINKED, _PREFIX, limits=Limits(max_depth=10**9))
    d: Any = {"v": 1}
    d["next"] = d
    seen: List[Any] = []

    def run() -> None:
        try:
            enc(d, None)
        except ValidationError as e:
            seen.append(e)

    on_small_stack(run, kib=512)
    assert len(seen) == 1


# -- schema checks hold on both implementations (the encoder cases of test_avro_security.py) --------

@pytest.mark.parametrize("schema", [
    {"type": "record", "name": "O'Brien", "fields": []},
    {"type": "record", "name": "R", "namespace": "x;import os", "fields": []},
    {"type": "record", "name": "R", "fields": [{"name": "e", "type": {"type": "enum", "name": "E)", "symbols": ["A"]}}]},
    {"type": "record", "name": "int", "fields": []},
])
def test_invalid_names_are_a_schema_mismatch_on_both(implementation: Implementation, schema: Any) -> None:
    from serdes import SchemaMismatchError

    with pytest.raises(SchemaMismatchError):
        implementation.compile_encoder(schema)


def test_too_deep_schemas_are_a_schema_mismatch_on_both(implementation: Implementation) -> None:
    from serdes import SchemaMismatchError
    from serdes._limits import Limits

    schema: Any = "int"
    for _ in range(20_000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(SchemaMismatchError, match="serdes.max.schema.depth=256"):
        implementation.compile_encoder(schema)
    with pytest.raises(SchemaMismatchError, match="too deep"):
        implementation.compile_encoder(schema, limits=Limits(max_schema_depth=1_000_000))


@pytest.mark.parametrize("kind,depth", [("array", 40), ("map", 120), ("record", 110)])
def test_deep_schemas_encode_on_both(implementation: Implementation, kind: str, depth: int) -> None:
    s: Any = "long"
    value: Any = 7
    for i in range(depth):
        if kind == "array":
            s, value = {"type": "array", "items": s}, [value]
        elif kind == "map":
            s, value = {"type": "map", "values": s}, {"k": value}
        else:
            s, value = {"type": "record", "name": f"R{i}", "fields": [{"name": "a", "type": s}]}, {"a": value}
    enc = implementation.compile_encoder(s, _PREFIX)
    assert is_native_encoder(enc) == (implementation.name == "native")
    assert enc(value, None) == _fastavro(s, value)


@pytest.mark.parametrize("name", ["a b", "ünï", "x'); import os #", "-type", ""])
def test_hostile_field_names_and_map_keys_are_data_on_both(implementation: Implementation, name: str) -> None:
    schema = {"type": "record", "name": "R", "fields": [
        {"name": name, "type": "string", "default": name}, {"name": "m", "type": {"type": "map", "values": "string"}}]}
    enc = implementation.compile_encoder(schema, _PREFIX)
    for rec in ({name: "v", "m": {name: name}}, {"m": {}}):
        assert _outcome(enc, rec) == _outcome(compile_encoder(schema, _PREFIX), rec)


_DECIMAL_SCHEMA = {"type": "record", "name": "D", "fields": [
    {"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3}},
    {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38}},
    {"name": "c", "type": {"type": "fixed", "name": "FD", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 2}}]}


@_SETTINGS
@given(st.one_of(st.decimals(min_value=-(10**16), max_value=10**16, places=3), st.decimals()),
       st.one_of(st.integers(-(10**37), 10**37).map(decimal.Decimal),
                 st.tuples(st.integers(-(10**20), 10**20), st.integers(0, 17)).map(lambda t: decimal.Decimal(t[0]).scaleb(t[1])),
                 st.decimals(allow_nan=False, allow_infinity=False)),
       st.decimals(min_value=-(10**9), max_value=10**9, places=2))
def test_native_decimal_conversion_matches_fastavro(a: Any, b: Any, c: Any) -> None:
    native, pure = _pair(_DECIMAL_SCHEMA)
    rec = {"a": a, "b": b, "c": c}
    got = _outcome(native, rec)
    assert got == _outcome(pure, rec)
    if got[0] == "ok":
        assert got[1] == _fastavro(_DECIMAL_SCHEMA, rec)


_PURE_CYCLE_SCRIPT = r"""
import sys
from typing import Any
from serdes import ValidationError
from serdes._native import forced_pure
from serdes.avro._codegen import compile_encoder
LINKED = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]}
d: Any = {"v": 1}
d["next"] = d
deep: Any = None
for i in range(300):
    deep = {"v": i, "next": deep}
with forced_pure():
    enc = compile_encoder(LINKED)
for value, expected in ((d, "reference cycle"), (deep, "nests deeper"), ({"v": "x", "next": d}, "")):
    try:
        enc(value, None)
    except ValidationError as e:
        assert expected in str(e), str(e)
    else:
        sys.exit(f"accepted {expected!r}")
print("ok")
"""


def test_pure_encoder_refuses_cyclic_and_too_deep_values_instead_of_crashing() -> None:
    # fastavro's Cython validator overflows the C stack on a cyclic value of a recursive schema: the
    # pure encoder must refuse it before fastavro sees it (run in a child: a regression is a crash)
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PURE_CYCLE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.returncode, out.stdout, out.stderr[-2000:])
