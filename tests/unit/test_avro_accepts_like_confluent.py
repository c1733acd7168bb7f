"""serdes' AvroSerializer takes the legitimate values confluent-kafka's takes (issue 25 item 4).

Differential: each value goes through ``confluent_kafka.schema_registry.avro.AvroSerializer``
(fastavro) and ``serdes.avro.AvroSerializer`` on one mock registry; both give identical bytes, or
both refuse. What serdes writes reads back (serdes' and confluent-kafka's deserializers) as the
value given, converted the way Avro types decode (a ``StrEnum`` member reads as its ``str``, a
memoryview as ``bytes``). Covered: ``str`` subclass instances (``enum.StrEnum`` members) as enum
symbols, map keys, strings, union values; ``memoryview`` for bytes, fixed and decimal, and inside a
union (where confluent-kafka refuses it: so does serdes); unions of 1,024 branches as the top-level
schema, a field, array items, map values and a nullable union, encoded and decoded, and read with a
reader schema. Every test runs on both implementations (tests/support/implementations.py).
"""

from __future__ import annotations

import array
import decimal
import enum
import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import CorruptPayloadError, SchemaMismatchError, ValidationError
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.avro import _native_encoder
from serdes.avro._codegen import compile_validator

from tests.support.implementations import Implementation

pytestmark = pytest.mark.usefixtures("implementation")

_CTX = SerializationContext("accepts", MessageField.VALUE)
REFUSED = object()


if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # the same kind of member: a str subclass instance whose value is the symbol
    class StrEnum(str, enum.Enum):
        pass


class Color(StrEnum):
    RED = "RED"
    BLUE = "BLUE"


class Renamed(StrEnum):
    """A member whose name is not its value (a StrEnum member hashes as its name)."""

    FIRST = "BLUE"
    SECOND = "GREEN"


class Sub(str):
    pass


class Plain(enum.Enum):
    RED = "RED"


E = {"type": "enum", "name": "E", "symbols": ["RED", "BLUE"]}
F2 = {"type": "fixed", "name": "F2", "size": 2}


def _record(t: Any, name: str = "R") -> Dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "f", "type": t}]}


def _outcome(fn: Callable[[], Any]) -> Tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - compared between the serializers
        return "refused", e


def _differential(schema: Any, value: Any) -> Tuple[Tuple[str, Any], Tuple[str, Any], SchemaRegistryClient]:
    client = SchemaRegistryClient.new_client({"url": f"mock://accepts-{uuid.uuid4().hex}"})
    text = json.dumps(schema)
    theirs = _outcome(lambda: ConfluentAvroSerializer(client, text)(value, _CTX))
    ours = _outcome(lambda: AvroSerializer(client, text)(value, _CTX))
    return theirs, ours, client


def _same_as_confluent(schema: Any, value: Any, decoded: Any) -> None:
    """Identical bytes and ``decoded`` read back, or (``decoded`` is REFUSED) both refuse."""
    theirs, ours, client = _differential(schema, value)
    if decoded is REFUSED:
        assert theirs[0] == "refused", theirs
        assert ours[0] == "refused" and isinstance(ours[1], ValidationError), ours
        return
    assert theirs[0] == "ok", theirs
    assert ours == theirs
    assert AvroDeserializer(client)(ours[1], _CTX) == decoded
    assert ConfluentAvroDeserializer(client)(ours[1], _CTX) == decoded


# (schema, value, what it reads back as -- or REFUSED by both)
STR_SUBCLASSES: List[Tuple[str, Any, Any, Any]] = [
    ("enum field StrEnum", _record(E), {"f": Color.BLUE}, {"f": "BLUE"}),
    ("enum field StrEnum named differently", _record(E), {"f": Renamed.FIRST}, {"f": "BLUE"}),
    ("enum field str subclass", _record(E), {"f": Sub("RED")}, {"f": "RED"}),
    ("enum top-level StrEnum", E, Color.RED, "RED"),
    ("enum array of StrEnum", _record({"type": "array", "items": E}), {"f": [Color.RED, Color.BLUE, "RED"]},
     {"f": ["RED", "BLUE", "RED"]}),
    ("enum map of StrEnum", _record({"type": "map", "values": E}), {"f": {"k": Color.BLUE}}, {"f": {"k": "BLUE"}}),
    ("enum [null, enum] StrEnum", _record(["null", E]), {"f": Color.BLUE}, {"f": "BLUE"}),
    ("enum [enum, null] StrEnum", _record([E, "null"]), {"f": Color.RED}, {"f": "RED"}),
    ("enum [enum, string] StrEnum", _record([E, "string"]), {"f": Color.BLUE}, {"f": "BLUE"}),
    ("enum [string, enum] str subclass", _record(["string", E]), {"f": Sub("RED")}, {"f": "RED"}),
    ("enum StrEnum not a symbol", _record(E), {"f": Renamed.SECOND}, REFUSED),
    ("enum str subclass not a symbol", _record(E), {"f": Sub("GREEN")}, REFUSED),
    ("enum Enum that is not a str", _record(E), {"f": Plain.RED}, REFUSED),
    ("map keys str subclass", _record({"type": "map", "values": "int"}), {"f": {Sub("a"): 1, "b": 2}},
     {"f": {"a": 1, "b": 2}}),
    ("map keys StrEnum", _record({"type": "map", "values": "long"}), {"f": {Color.RED: 1}}, {"f": {"RED": 1}}),
    ("map keys nested", _record({"type": "map", "values": {"type": "map", "values": "string"}}),
     {"f": {Sub("o"): {Color.BLUE: Sub("v")}}}, {"f": {"o": {"BLUE": "v"}}}),
    ("map keys in [null, map]", _record(["null", {"type": "map", "values": "int"}]), {"f": {Sub("a"): 1}},
     {"f": {"a": 1}}),
    ("map keys not str", _record({"type": "map", "values": "int"}), {"f": {1: 1}}, REFUSED),
    ("string str subclass", _record("string"), {"f": Sub("abc")}, {"f": "abc"}),
    ("string StrEnum", _record("string"), {"f": Color.RED}, {"f": "RED"}),
    ("string top-level str subclass", "string", Sub("top"), "top"),
    ("string [null, string]", _record(["null", "string"]), {"f": Sub("abc")}, {"f": "abc"}),
    ("string [string, null] StrEnum", _record(["string", "null"]), {"f": Color.BLUE}, {"f": "BLUE"}),
    ("string array", _record({"type": "array", "items": "string"}), {"f": [Sub("x"), "y", Color.RED]},
     {"f": ["x", "y", "RED"]}),
    ("string uuid logical str subclass", _record({"type": "string", "logicalType": "uuid"}),
     {"f": Sub("12345678-1234-5678-1234-567812345678")}, {"f": uuid.UUID("12345678-1234-5678-1234-567812345678")}),
]

MEMORYVIEWS: List[Tuple[str, Any, Any, Any]] = [
    ("bytes", _record("bytes"), {"f": memoryview(b"ab")}, {"f": b"ab"}),
    ("bytes top-level record of two", {"type": "record", "name": "T", "fields": [
        {"name": "a", "type": "bytes"}, {"name": "b", "type": "string"}]},
     {"a": memoryview(bytearray(b"\x00\xff")), "b": "x"}, {"a": b"\x00\xff", "b": "x"}),
    ("bytes contiguous slice", _record("bytes"), {"f": memoryview(b"abcd")[1:3]}, {"f": b"bc"}),
    ("bytes empty", _record("bytes"), {"f": memoryview(b"")}, {"f": b""}),
    ("bytes array", _record({"type": "array", "items": "bytes"}), {"f": [memoryview(b"x"), b"y"]},
     {"f": [b"x", b"y"]}),
    ("bytes map", _record({"type": "map", "values": "bytes"}), {"f": {"k": memoryview(b"v")}}, {"f": {"k": b"v"}}),
    ("fixed", _record(F2), {"f": memoryview(b"ab")}, {"f": b"ab"}),
    ("fixed map", _record({"type": "map", "values": F2}), {"f": {"k": memoryview(b"cd")}}, {"f": {"k": b"cd"}}),
    ("fixed wrong size", _record(F2), {"f": memoryview(b"abc")}, REFUSED),
    ("decimal bytes", _record({"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}),
     {"f": memoryview(b"\x30\x39")}, {"f": decimal.Decimal("123.45")}),
    ("decimal fixed", _record({"type": "fixed", "name": "D4", "size": 2, "logicalType": "decimal", "precision": 4,
                               "scale": 1}), {"f": memoryview(b"\x01\x00")}, {"f": decimal.Decimal("25.6")}),
    ("[null, bytes]", _record(["null", "bytes"]), {"f": memoryview(b"ab")}, REFUSED),
    ("[bytes, null]", _record(["bytes", "null"]), {"f": memoryview(b"ab")}, REFUSED),
    ("[null, fixed]", _record(["null", F2]), {"f": memoryview(b"ab")}, REFUSED),
    ("[string, bytes]", _record(["string", "bytes"]), {"f": memoryview(b"ab")}, REFUSED),
    ("inside a record inside [null, record]", _record(["null", _record("bytes", "Inner")]),
     {"f": {"f": memoryview(b"ab")}}, REFUSED),
    ("inside an array inside [null, array]", _record(["null", {"type": "array", "items": "bytes"}]),
     {"f": [memoryview(b"ab")]}, REFUSED),
    # schemas the pure encoder leaves to fastavro (validate, then schemaless_writer)
    ("general union schema, outside the union", {"type": "record", "name": "G", "fields": [
        {"name": "a", "type": "bytes"}, {"name": "b", "type": ["string", "int"]},
        {"name": "c", "type": {"type": "array", "items": F2}}]},
     {"a": memoryview(b"xy"), "b": 1, "c": [memoryview(b"zz")]}, {"a": b"xy", "b": 1, "c": [b"zz"]}),
    ("general union schema, in the union", {"type": "record", "name": "G", "fields": [
        {"name": "a", "type": "bytes"}, {"name": "b", "type": ["string", "bytes"]}]},
     {"a": memoryview(b"xy"), "b": memoryview(b"q")}, REFUSED),
    ("recursive schema, outside the union", {"type": "record", "name": "L", "fields": [
        {"name": "v", "type": "bytes"}, {"name": "next", "type": ["null", "L"]}]},
     {"v": memoryview(b"a"), "next": None}, {"v": b"a", "next": None}),
    ("recursive schema, in the union", {"type": "record", "name": "L", "fields": [
        {"name": "v", "type": "bytes"}, {"name": "next", "type": ["null", "L"]}]},
     {"v": memoryview(b"a"), "next": {"v": memoryview(b"b"), "next": None}}, REFUSED),
    ("with a tuple-notation union value", {"type": "record", "name": "T", "fields": [
        {"name": "a", "type": "bytes"}, {"name": "n", "type": ["null", "int"]}]},
     {"a": memoryview(b"a"), "n": ("int", 5)}, {"a": b"a", "n": 5}),
    ("[null, decimal bytes]", _record(["null", {"type": "bytes", "logicalType": "decimal", "precision": 5,
                                                "scale": 2}]), {"f": memoryview(b"\x30\x39")}, REFUSED),
]


@pytest.mark.parametrize("schema, value, decoded", [c[1:] for c in STR_SUBCLASSES], ids=[c[0] for c in STR_SUBCLASSES])
def test_str_subclasses_as_confluent_kafka(schema: Any, value: Any, decoded: Any) -> None:
    _same_as_confluent(schema, value, decoded)


@pytest.mark.parametrize("schema, value, decoded", [c[1:] for c in MEMORYVIEWS], ids=[c[0] for c in MEMORYVIEWS])
def test_memoryviews_as_confluent_kafka(schema: Any, value: Any, decoded: Any) -> None:
    _same_as_confluent(schema, value, decoded)


@pytest.mark.parametrize("schema, view", [
    (_record("bytes"), memoryview(b"abcd")[::2]),  # not contiguous: fastavro writes b"ab", not b"ac"
    (_record(F2), memoryview(array.array("B", b"ab")).cast("B", (1, 2))),  # two-dimensional
    (_record({"type": "fixed", "name": "F8", "size": 2}), memoryview(array.array("i", [1, 2]))),  # 8 bytes
])
def test_a_memoryview_that_is_not_flat_bytes_is_refused(schema: Any, view: memoryview) -> None:
    """A view whose ``len`` is not its byte count, or whose bytes are not contiguous: fastavro
    writes something else than the view's contents (or refuses it), serdes refuses it."""
    _, ours, _ = _differential(schema, {"f": view})
    assert ours[0] == "refused" and isinstance(ours[1], ValidationError), ours


def test_the_native_encoder_writes_str_subclasses_itself(implementation: Implementation,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """StrEnum symbols, str subclass strings and keys do not cost the native encoder a second,
    pure pass (the pure encoder it falls back to is never even compiled)."""
    if implementation.name != "native":
        pytest.skip("the native encoder's own path")
    builds: List[int] = []
    real = getattr(_native_encoder, "encoder_builder")  # noqa: B009 - the name the module imported

    def counting(*args: Any, **kwargs: Any) -> Callable[[], Any]:
        build = real(*args, **kwargs)

        def counted() -> Any:
            builds.append(1)
            return build()

        return counted

    monkeypatch.setattr(_native_encoder, "encoder_builder", counting)
    schema = {"type": "record", "name": "N", "fields": [
        {"name": "e", "type": E}, {"name": "s", "type": "string"},
        {"name": "m", "type": {"type": "map", "values": "E"}}, {"name": "n", "type": ["null", "E"]}]}
    encode = implementation.compile_encoder(schema)
    assert _native_encoder.is_native_encoder(encode)
    got = encode({"e": Renamed.FIRST, "s": Sub("x"), "m": {Color.RED: Color.BLUE, Sub("k"): "RED"}, "n": Color.RED}, None)
    assert got == encode({"e": "BLUE", "s": "x", "m": {"RED": "BLUE", "k": "RED"}, "n": "RED"}, None)
    assert builds == []
    # and a value it does not take is still the pure encoder's to decide
    with pytest.raises(ValidationError):
        encode({"e": Sub("GREEN"), "s": "x", "m": {}, "n": None}, None)
    assert builds == [1]


class Overriding(str):
    """A str subclass whose ``encode`` is its own: fastavro writes what it returns."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"own"


def test_a_str_subclass_encode_is_called_as_fastavro_calls_it() -> None:
    _same_as_confluent(_record("string"), {"f": Overriding("abc")}, {"f": "own"})
    _same_as_confluent(_record({"type": "map", "values": "int"}), {"f": {Overriding("k"): 1}}, {"f": {"own": 1}})


# -- unions of many branches ---------------------------------------------------------------------
N = 1024
RECORDS = [{"type": "record", "name": f"R{i}", "fields": [{"name": f"x{i}", "type": "int"}]} for i in range(N)]
FIXED = [{"type": "fixed", "name": f"F{i}", "size": i + 1} for i in range(N)]
# branch indexes around the chains of 64 tests the decoder generator splits a union into
PROBES = [0, 1, 62, 63, 64, 65, 127, 128, 511, 960, N - 2, N - 1]


def _wrap(shape: str, branches: List[Any]) -> Tuple[Any, Callable[[Any], Any]]:
    """A schema putting the union ``branches`` at ``shape``, and how a union value sits in its value."""
    if shape == "top":
        return branches, lambda v: v
    if shape == "field":
        return {"type": "record", "name": "W", "fields": [{"name": "u", "type": branches}]}, lambda v: {"u": v}
    if shape == "array":
        return {"type": "array", "items": branches}, lambda v: [v, v]
    if shape == "map":
        return {"type": "map", "values": branches}, lambda v: {"k": v}
    assert shape == "nullable"
    return {"type": "record", "name": "W", "fields": [{"name": "u", "type": ["null", *branches]}]}, lambda v: {"u": v}


@pytest.mark.parametrize("shape", ["top", "field", "array", "map", "nullable"])
@pytest.mark.parametrize("kind", ["records", "fixed"])
def test_a_union_of_1024_branches(kind: str, shape: str) -> None:
    schema, wrap = _wrap(shape, RECORDS if kind == "records" else FIXED)
    client = SchemaRegistryClient.new_client({"url": f"mock://many-{uuid.uuid4().hex}"})
    text = json.dumps(schema)
    ours, theirs = AvroSerializer(client, text), ConfluentAvroSerializer(client, text)
    de, their_de = AvroDeserializer(client), ConfluentAvroDeserializer(client)
    values: List[Any] = [{f"x{i}": i} if kind == "records" else bytes([i % 256]) * (i + 1) for i in PROBES]
    if shape == "nullable":
        values.append(None)
    for v in values:
        written = ours(wrap(v), _CTX)
        assert written == theirs(wrap(v), _CTX)
        assert de(written, _CTX) == wrap(v) == their_de(written, _CTX)


@pytest.mark.parametrize("n", [64, 65, N, 4100])
def test_many_branch_decoders_choose_every_branch_and_refuse_any_other(implementation: Implementation, n: int) -> None:
    """Every branch decodes as its own type; an index past the last, or negative, is a
    CorruptPayloadError (the decoder and the validator of a schema pair fastavro reads)."""
    from serdes._varint import write_zigzag

    schema = [{"type": "fixed", "name": f"G{i}", "size": i % 5} for i in range(n)]
    decode = implementation.compile_decoder(schema)
    validate = compile_validator(schema)
    for i in sorted({0, 1, 63, 64, 65, n // 2, n - 2, n - 1} & set(range(n))):
        data = bytearray()
        write_zigzag(data, i)
        data += bytes([i % 256]) * (i % 5)
        assert decode(bytes(data), 0, None) == bytes([i % 256]) * (i % 5)
        assert validate(bytes(data), 0) == len(data)
    for bad in (n, n + 1, -1, -n, 2**40):
        data = bytearray()
        write_zigzag(data, bad)
        with pytest.raises(CorruptPayloadError, match="union branch index"):
            decode(bytes(data), 0, None)
        with pytest.raises(CorruptPayloadError, match="union branch index"):
            validate(bytes(data), 0)


def test_a_1024_branch_writer_union_read_as_one_of_its_records(implementation: Implementation) -> None:
    """The branches the reader has no match for raise when met; the decoder's source does not grow
    with the square of the union (each such branch's message names the whole union)."""
    from serdes._varint import write_zigzag

    reader = {"type": "record", "name": "R700", "fields": [
        {"name": "x700", "type": "long"}, {"name": "y", "type": "int", "default": 7}]}
    decode = implementation.compile_decoder(RECORDS, reader, expect_native=False)
    data = bytearray()
    write_zigzag(data, 700)
    write_zigzag(data, 5)
    assert decode(bytes(data), 0, None) == {"x700": 5, "y": 7}
    other = bytearray()
    write_zigzag(other, 3)
    write_zigzag(other, 5)
    with pytest.raises(SchemaMismatchError, match="schema mismatch") as raised:
        decode(bytes(other), 0, None)
    # the message shows the schemas cut short, not fastavro's bookkeeping (every named type in
    # every named type: 1,024 records would take ~90 MB)
    assert "__named_schemas" not in str(raised.value) and len(str(raised.value)) < 10_000


class Hostile(Mapping[str, Any]):
    """A record whose field lookups raise: refused with a ValidationError, whatever path reads it."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")

    def __iter__(self) -> Iterator[str]:
        return iter(["a", "b"])

    def __len__(self) -> int:
        return 2


def test_a_mapping_whose_lookups_raise_is_still_a_validation_error() -> None:
    schema = {"type": "record", "name": "G", "fields": [
        {"name": "a", "type": "bytes"}, {"name": "b", "type": ["string", "int"]}]}
    _, ours, _ = _differential(schema, Hostile())
    assert ours[0] == "refused" and isinstance(ours[1], ValidationError), ours
