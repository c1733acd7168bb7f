"""serdes.arrow's native columnar JSON Schema decoder (rust/src/columnar/json/): every case runs on
both paths -- the native decoder, and the per-record path (orjson, jsonschema-rs, pyarrow; the
reference, ``_native.forced_pure``) -- and the batches (schema and values), ``batch.rows`` and the
typed errors must be the same. Each case also says whether the native decoder took the list: it
takes every list of valid records of a schema in its subset, and leaves everything else to the
per-record path, which decides."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any, Dict, List, Optional, Tuple

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from serdes import BatchError, _native  # noqa: E402
from serdes._limits import DEFAULT_LIMITS  # noqa: E402
from serdes.arrow._json_program import Refused, compile_program  # noqa: E402
from serdes.json import JSONDeserializer  # noqa: E402
from tests.support.implementations import native_module, require_native  # noqa: E402
from tests.support.arrow_rows import panic_armed  # noqa: E402
from tests.support.small_stack import on_small_stack  # noqa: E402

TOPIC = "t"
CTX = SerializationContext(TOPIC, MessageField.VALUE)


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def _client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://arrow-native-json-{uuid.uuid4().hex}"})


def _register(client: Any, schema: Dict[str, Any]) -> int:
    return int(client.register_schema(f"{TOPIC}-value", Schema(json.dumps(schema), "JSON")))


def _frame(sid: int, body: Any) -> Optional[bytes]:
    """A Confluent frame of ``body`` (bytes as they are; anything else as JSON text; None: None)."""
    if body is None:
        return None
    raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return b"\x00" + sid.to_bytes(4, "big") + raw


def _native_of(deser: Any) -> Any:
    found = list(deser.__dict__.get("_arrow_native_json", {}).values())
    assert len(found) == 1, found
    return found[0]


def _both(client: Any, schema: Optional[Dict[str, Any]], frames: List[Any], conf: Optional[Dict[str, Any]] = None,
          **kw: Any) -> Tuple[Any, Any, Any]:
    """(native-path batch, per-record-path batch, the native decoder), errors collected; the two
    batches, their rows and the types of their errors are the same."""
    text = json.dumps(schema) if schema is not None else None
    deser = JSONDeserializer(text, schema_registry_client=client, conf=conf)
    got = deser.deserialize_arrow(frames, CTX, errors="collect", **kw)
    with _native.forced_pure():
        ref = JSONDeserializer(text, schema_registry_client=client, conf=conf).deserialize_arrow(
            frames, CTX, errors="collect", **kw)
    assert pa.record_batch(got).schema.equals(pa.record_batch(ref).schema)
    assert pa.record_batch(got).equals(pa.record_batch(ref)), (pa.record_batch(got).to_pylist()[:5],
                                                               pa.record_batch(ref).to_pylist()[:5])
    assert got.rows == ref.rows
    assert [(i, type(e)) for i, e in got.errors] == [(i, type(e)) for i, e in ref.errors]
    return got, ref, _native_of(deser)


def _run(schema: Dict[str, Any], bodies: List[Any], conf: Optional[Dict[str, Any]] = None, own: bool = True,
         **kw: Any) -> Tuple[Any, Any, Any]:
    client = _client()
    sid = _register(client, schema)
    return _both(client, schema if own else None, [_frame(sid, b) for b in bodies], conf, **kw)


def _rows(batch: Any) -> List[Dict[str, Any]]:
    return list(pa.record_batch(batch).to_pylist())


# -- the columns ----------------------------------------------------------------------------------

STANDARD = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Standard", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "user": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
        "score": {"type": "number"}, "active": {"type": "boolean"}, "country": {"type": "string", "maxLength": 2},
        "tag": {"type": ["string", "null"]},
    },
    "required": ["id", "user", "age", "score", "active", "country"],
    "additionalProperties": False,
}


def _standard(n: int) -> Dict[str, Any]:
    return {"id": n * 1_000_003, "user": f"u{n}", "age": n % 90, "score": n / 7, "active": n % 2 == 0,
            "country": "DE", "tag": None if n % 3 else f"t{n}"}


def test_the_standard_record_is_decoded_natively() -> None:
    got, _, native = _run(STANDARD, [_standard(n) for n in range(50)])
    assert native.taken == 1 and native.declined == 0 and got.num_rows == 50
    assert _rows(got)[7] == _standard(7)


EVERY_TYPE = {
    "type": "object",
    "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                              "required": ["x", "y"]}},
    "$defs": {"Name": {"type": "string", "minLength": 1}},
    "properties": {
        "i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"}, "b": {"type": "boolean"},
        "oi": {"type": ["integer", "null"]}, "on": {"type": ["null", "number"]}, "os": {"type": ["string", "null"]},
        "ob": {"type": ["boolean", "null"]},
        "one": {"oneOf": [{"type": "null"}, {"type": "integer"}]},
        "any": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "sym": {"enum": ["A", "B", None]},
        "where": {"$ref": "#/definitions/Point"}, "name": {"$ref": "#/$defs/Name"},
        "nested": {"type": ["object", "null"], "properties": {
            "p": {"$ref": "#/definitions/Point"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["tags"]},
        "xs": {"type": "array", "items": {"type": "integer"}},
        "oxs": {"type": ["array", "null"], "items": {"type": ["number", "null"]}},
        "pts": {"type": "array", "items": {"$ref": "#/definitions/Point"}},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        "mo": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Point"}},
        "mn": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "null"]}},
    },
    "required": ["i", "n", "s", "b"],
}


def _every(n: int) -> Dict[str, Any]:
    rec: Dict[str, Any] = {"i": -n, "n": n * 0.25, "s": f"s{n}é", "b": n % 2 == 1}
    if n % 2:
        rec.update({
            "oi": None if n % 3 else n, "on": n, "os": "x" * n, "ob": None, "one": n, "any": None, "sym": "B",
            "where": {"x": 1.5, "y": -n}, "name": "ü",
            "nested": None if n % 5 == 1 else {"p": {"x": 0, "y": 0.5}, "tags": ["a", "b"][: n % 3]},
            "xs": list(range(n % 4)), "oxs": None if n % 7 == 1 else [1.5, None, n],
            "pts": [{"x": k, "y": k} for k in range(n % 3)], "grid": [[True], [], [False, True]],
            "m": {f"k{k}": k for k in range(n % 4)}, "mo": {"a": {"x": 1, "y": 2}}, "mn": {"a": None, "b": "c"},
        })
    return rec


def test_every_mapped_type_and_nullability_is_decoded_natively() -> None:
    got, _, native = _run(EVERY_TYPE, [_every(n) for n in range(30)])
    assert native.taken == 1 and got.num_rows == 30
    row = _rows(got)[3]
    assert row["m"] == [("k0", 0), ("k1", 1), ("k2", 2)] and row["where"] == {"x": 1.5, "y": -3.0}
    assert _rows(got)[0]["xs"] is None and _rows(got)[0]["nested"] is None


def test_tombstones_are_rows_of_nulls() -> None:
    bodies: List[Any] = [_every(n) for n in range(6)]
    bodies[2:2] = [None]
    bodies.append(None)
    got, _, native = _run(EVERY_TYPE, bodies)
    assert native.taken == 1 and got.num_rows == 8
    assert all(v is None for v in _rows(got)[2].values()) and all(v is None for v in _rows(got)[7].values())


def test_only_tombstones_go_to_the_per_record_path() -> None:
    got, _, native = _run(STANDARD, [None, None])
    assert native.taken == 0 and got.num_rows == 2


def test_consumer_messages_with_metadata() -> None:
    client = _client()
    sid = _register(client, STANDARD)

    class Msg:
        def __init__(self, n: int) -> None:
            self.n = n

        def value(self) -> Any:
            return _frame(sid, _standard(self.n))

        def topic(self) -> str:
            return TOPIC

        def partition(self) -> int:
            return 0

        def offset(self) -> int:
            return self.n

        def timestamp(self) -> Tuple[int, int]:
            return (1, 1_700_000_000_000 + self.n)

        def headers(self) -> Any:
            return None

        def key(self) -> Any:
            return None

    got, _, native = _both(client, STANDARD, [Msg(n) for n in range(5)], metadata=("offset",))
    assert native.taken == 1 and pa.record_batch(got).column("offset").to_pylist() == list(range(5))


# -- JSON text: what decodes natively, and what is left to the per-record path ---------------------

SCALARS = {
    "type": "object",
    "properties": {"i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"},
                   "b": {"type": "boolean"}, "m": {"type": "object", "additionalProperties": {"type": "integer"}}},
}


def _text_case(body: bytes, taken: bool) -> None:
    good = b'{"i": 1, "n": 2.5, "s": "x", "b": true}'
    got, ref, native = _run(SCALARS, [good, body, good])
    assert native.taken == int(taken), (body, native.refused)
    return None


@pytest.mark.parametrize("body", [
    b'{"i": -0, "n": -0}', b'{"n": -0.0}', b'{"n": 1e2}', b'{"n": 1E-2}', b'{"n": 1e-400}', b'{"n": -1e-400}',
    b'{"n": 0.1000000000000000055511151231257827021181583404541015625}', b'{"n": 123456789012345678901234e-10}',
    b'{"n": 9007199254740992}', b'{"n": -9007199254740992}', b'{"n": 1.7976931348623157e308}',
    b'{"n": 5e-324}', b'{"n": 2.2250738585072011e-308}', b'{"i": 9223372036854775807}',
    b'{"i": -9223372036854775808}', b'{"s": "\\u00e9\\ud83d\\ude00\\u0000\\/\\"\\\\\\b\\f\\n\\r\\t"}',
    '{"s": "é😀\x7f"}'.encode(), b' \t\r\n{"s" : "a" , "i":1 } \n', b'{"\\u0069": 3}', b'{}',
    b'{"m": {"a": 1, "b": 2, "\\u00e9": 3}}', b'{"m": {}}',
    b'{"m": {' + b", ".join(b'"k%d": %d' % (k, k) for k in range(40)) + b"}}",
    b'{"s": "' + "é".encode() * 1000 + b'"}',
], ids=repr)
def test_json_text_decoded_natively(body: bytes) -> None:
    _text_case(body, taken=True)


@pytest.mark.parametrize("body", [
    # numbers the per-record path reads otherwise (a float, an int pyarrow refuses) or refuses
    b'{"i": 1.0}', b'{"i": 1.5}', b'{"i": 1e2}', b'{"i": 9223372036854775808}', b'{"i": -9223372036854775809}',
    b'{"i": 18446744073709551616}', b'{"n": 9007199254740993}', b'{"n": 18446744073709551616}',
    b'{"n": 1e400}', b'{"n": -1e400}', b'{"n": NaN}', b'{"n": Infinity}', b'{"n": 01}', b'{"n": 1.}',
    b'{"n": .5}', b'{"n": +1}', b'{"n": "1"}', b'{"i": true}', b'{"b": 1}', b'{"s": 1}',
    # text orjson refuses
    b'\xef\xbb\xbf{"i": 1}', b'{"s": "\\ud800"}', b'{"s": "\\udc00\\ud800"}', b'{"s": "\\ud800x"}',
    b'{"s": "\xff"}', b'{"s": "\xed\xa0\x80"}', b'{"s": "\xc0\x80"}', b'{"s": "\x01"}', b'{"s": "\\x"}',
    b'{"i": 1,}', b'{"i": 1}x', b'{"i": 1', b'', b'null', b'[]', b'"s"', b'{"i": 1}{"i": 2}', b'{"s": "a}',
    # keys: duplicated (orjson keeps the last), undeclared
    b'{"i": 1, "i": 2}', b'{"m": {"a": 1, "a": 2}}', b'{"m": {"a": 1, "b": 2, "a": 3}}',
    b'{"m": {' + b", ".join(b'"k%d": %d' % (k % 30, k) for k in range(40)) + b"}}",
    b'{"extra": 1}', b'{"i": {"nested": [[[[[[1]]]]]]}}', b'{"s": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    b'{"m": {"a": "x"}}', b'{"m": []}', b'{"m": null}',
], ids=repr)
def test_json_text_left_to_the_per_record_path(body: bytes) -> None:
    _text_case(body, taken=False)


# -- the keywords of the subset, at and across their boundaries -----------------------------------

KEYWORD_CASES: List[Tuple[Dict[str, Any], List[Any]]] = [
    ({"type": "integer", "minimum": 0}, [-1, 0, 1]),
    ({"type": "integer", "minimum": 0.5}, [0, 1]),
    ({"type": "integer", "maximum": -0.5}, [-1, 0]),
    ({"type": "integer", "exclusiveMinimum": 3}, [3, 4]),
    ({"type": "integer", "exclusiveMaximum": 3}, [2, 3]),
    ({"type": "integer", "maximum": 9007199254740992}, [9007199254740992, 9007199254740993]),
    ({"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807},
     [-9223372036854775808, 9223372036854775807]),
    ({"type": "integer", "multipleOf": 3}, [0, 3, -3, 4, 9007199254740991]),
    ({"type": "integer", "multipleOf": 9007199254740992}, [0, 9007199254740992, 9007199254740993]),
    ({"type": "number", "minimum": 0}, [-0.0, 0, -1e-300, 1e-300]),
    ({"type": "number", "maximum": 1.5}, [1.5, 1.5000000000000002, 1, 2]),
    ({"type": "number", "exclusiveMinimum": 0.1}, [0.1, 0.10000000000000002]),
    ({"type": "number", "exclusiveMaximum": 10}, [9.999999999999998, 10, 10.0]),
    ({"type": "number", "enum": [1, 2]}, [1, 2, 3]),
    ({"type": "string", "minLength": 2}, ["a", "ab", "é", "éé", "😀", "😀😀"]),
    ({"type": "string", "maxLength": 1}, ["", "a", "ab", "é", "😀", "😀a"]),
    ({"type": "string", "minLength": 1, "maxLength": 1, "description": "one"}, ["", "\u0000", "ab"]),
    ({"type": "string", "enum": ["a", "é", "😀"]}, ["a", "é", "😀", "b", "A"]),
    ({"type": "string", "const": "x"}, ["x", "y"]),
    ({"type": ["string", "null"], "enum": ["x", None]}, ["x", None, "y"]),
    ({"type": ["string", "null"], "enum": ["x"]}, ["x", None]),
    ({"type": ["integer", "null"], "const": None}, [None, 1]),
    ({"type": "integer", "enum": [1, True, "1"]}, [1, 2]),
    ({"type": "integer", "enum": [1, 2], "const": 2}, [1, 2]),
    ({"type": "boolean", "const": True}, [True, False]),
    ({"type": "boolean", "enum": [False]}, [True, False]),
    ({"enum": ["A", "B"]}, ["A", "C"]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}, [[], [1], [1, 2], [1, 2, 3]]),
    ({"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": False}, [["a", "a"], ["ab"]]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, [{"a": 1}, {}, {"a": None}]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
     [{"a": 1}, {}, {"b": 1}]),
    ({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}, [{"a": 1}, {"a": -1}, {}]),
    ({"oneOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}, ["ab", "abc", None]),
    ({"anyOf": [{"type": "null"}, {"$ref": "#/definitions/Small"}]}, [1, 11, None]),
    ({"type": "string", "format": "date-time"}, ["not a date", "2024-01-01T00:00:00Z"]),
    ({"type": "integer", "connect.index": 1, "x-anything": {"pattern": "^a"}}, [1]),
]


@pytest.mark.parametrize("sub, values", KEYWORD_CASES, ids=lambda x: json.dumps(x)[:60])
def test_keywords_of_the_subset(sub: Dict[str, Any], values: List[Any]) -> None:
    schema = {"type": "object", "properties": {"v": sub, "k": {"type": "integer"}}, "required": ["k"],
              "definitions": {"Small": {"type": "integer", "maximum": 10}}}
    for v in values:
        got, ref, native = _run(schema, [{"k": 0}, {"k": 1, "v": v}])
        # a valid list is taken natively; an invalid one is the per-record path's
        assert native.taken == int(not ref.errors), (v, native.refused, ref.errors)


@pytest.mark.parametrize("draft", [
    None, "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema",
])
def test_every_draft_but_4(draft: Optional[str]) -> None:
    schema = dict(STANDARD, **({"$schema": draft} if draft else {}))
    if draft is None:
        del schema["$schema"]
    got, _, native = _run(schema, [_standard(n) for n in range(5)] + [dict(_standard(1), age=-1)])
    assert native.taken == 0 and [i for i, _ in got.errors] == [5]
    got, _, native = _run(schema, [_standard(n) for n in range(5)])
    assert native.taken == 1


# -- schemas left to the per-record path ----------------------------------------------------------

REFUSED: List[Tuple[Dict[str, Any], Any, str]] = [
    ({"type": "string", "pattern": "^a"}, "ab", "pattern"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {}}}, {"a": 1},
     "patternProperties"),
    ({"type": "integer", "if": {"minimum": 5}, "then": {"multipleOf": 5}}, 10, "'if'"),
    ({"allOf": [{"type": "integer"}], "type": "integer"}, 1, "allOf"),
    ({"type": "integer", "not": {"const": 3}}, 1, "not"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "dependencies": {"a": ["b"]}}, {"a": 1},
     "dependencies"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "propertyNames": {"maxLength": 3}}, {"a": 1},
     "propertyNames"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 1}, {"a": 1}, "minProperties"),
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [1, 2], "uniqueItems"),
    ({"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}}, [1, 2], "contains"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}, {"a": 1},
     "unevaluatedProperties"),
    ({"type": "number", "multipleOf": 0.5}, 1.5, "multipleOf"),
    ({"type": "number", "multipleOf": 2}, 4, "multipleOf"),
    ({"type": "number", "enum": [1.5, 2]}, 1.5, "enum value 1.5"),
    ({"type": "string", "contentEncoding": "base64"}, "YQ==", "contentEncoding"),
    ({"$ref": "#/definitions/Small", "maximum": 3}, 1, "beside it"),
    ({"type": "integer", "$id": "http://example.com/x"}, 1, "$id"),
    ({"type": "array", "items": {"type": "integer"}, "enum": [[1]]}, [1], "enum value"),
    ({"type": "integer", "minimum": 2 ** 63}, 1, "beyond int64"),
    ({"oneOf": [{"type": ["integer", "null"]}, {"type": "null"}]}, 1, "both admit null"),
]


@pytest.mark.parametrize("sub, value, why", REFUSED, ids=lambda x: json.dumps(x)[:50])
def test_schemas_left_to_the_per_record_path(sub: Dict[str, Any], value: Any, why: str) -> None:
    schema = {"type": "object", "properties": {"v": sub}, "definitions": {"Small": {"type": "integer"}}}
    got, _, native = _run(schema, [{"v": value}, {}])
    assert native.taken == 0 and got.num_rows == 2 - len(got.errors)
    assert any(why in (w or "") for w in native._ids.values()), native._ids


def test_draft_4_is_left_to_the_per_record_path() -> None:
    schema = dict(STANDARD, **{"$schema": "http://json-schema.org/draft-04/schema#"})
    got, _, native = _run(schema, [_standard(n) for n in range(3)])
    assert native.taken == 0 and got.num_rows == 3 and "draft 4" in str(native._ids)


def test_without_validation_only_the_columns_matter() -> None:
    # a pattern (left to the per-record path when validating) and values the schema rejects
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a", "maxLength": 1},
                                               "i": {"type": "integer", "minimum": 5}}, "required": ["i"]}
    got, _, native = _run(schema, [{"s": "bcd", "i": 1}, {"s": "a", "i": 7}], conf={"validate": False})
    assert native.taken == 1 and _rows(got) == [{"s": "bcd", "i": 1}, {"s": "a", "i": 7}]
    # ... but still a value the columns cannot hold
    got, _, native = _run(schema, [{"i": 1.5}, {"s": "a"}, {"i": True}], conf={"validate": False})
    assert native.taken == 0


def test_records_validated_against_their_writer_schema() -> None:
    # no schema_str: each id's records are validated against its writer schema (the reader: the
    # latest registered, the same columns)
    client = _client()
    v1 = dict(STANDARD, properties=dict(STANDARD["properties"], age={"type": "integer", "minimum": 0}))
    v2 = dict(STANDARD, properties=dict(STANDARD["properties"], age={"type": "integer", "minimum": 18}))
    s1, s2 = _register(client, v1), _register(client, v2)
    frames = [_frame(s1, dict(_standard(n), age=5)) for n in range(3)] + [_frame(s2, _standard(20))]
    got, _, native = _both(client, None, frames)
    assert native.taken == 1 and got.num_rows == 4
    frames.append(_frame(s2, dict(_standard(20), age=5)))  # below v2's minimum, fine for v1
    got, _, native = _both(client, None, frames)
    assert native.taken == 0 and [i for i, _ in got.errors] == [4]


def test_a_writer_with_other_columns_is_left_to_the_per_record_path() -> None:
    client = _client()
    v1 = dict(STANDARD, properties={k: v for k, v in STANDARD["properties"].items() if k != "tag"})
    s1, s2 = _register(client, v1), _register(client, STANDARD)
    frames = [_frame(s1, {k: v for k, v in _standard(1).items() if k != "tag"}), _frame(s2, _standard(2))]
    got, _, native = _both(client, None, frames)
    assert native.taken == 0 and got.num_rows == 2 and "not the reader's" in str(native._ids)


def test_errors_raise_is_the_per_record_batch_error() -> None:
    client = _client()
    sid = _register(client, STANDARD)
    frames = [_frame(sid, _standard(1)), _frame(sid, dict(_standard(2), age=-1))]
    for build in (lambda: JSONDeserializer(json.dumps(STANDARD), schema_registry_client=client),):
        with pytest.raises(BatchError) as native_err:
            build().deserialize_arrow(frames, CTX)
        with _native.forced_pure(), pytest.raises(BatchError) as ref_err:
            build().deserialize_arrow(frames, CTX)
        assert [(i, type(e)) for i, e in native_err.value.errors] == [(i, type(e)) for i, e in ref_err.value.errors]


# -- limits ---------------------------------------------------------------------------------------

def test_a_frame_over_max_items_bytes_is_left_to_the_per_record_path() -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}
    got, _, native = _run(schema, [{"xs": [1]}, {"xs": list(range(30))}], conf={"serdes.max.items": 40})
    assert native.taken == 0 and got.num_rows == 2


def _nested(depth: int) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"c": schema}}
    return schema


def test_a_schema_deeper_than_max_depth_is_left_to_the_per_record_path() -> None:
    value: Any = 1
    for _ in range(6):
        value = {"c": value}
    got, _, native = _run(_nested(6), [value], conf={"serdes.max.depth": 4})
    # (the per-record validator checks the depth of these values: not the plain step)
    assert native.taken == 0 and "not orjson + a plain validator" in native.refused[1]
    got, _, native = _run(_nested(6), [value], conf={"serdes.max.depth": 20})
    assert native.taken == 1


def test_a_thread_without_stack_for_the_schema_gets_the_per_record_path() -> None:
    # 31 levels of objects need (31 + 16) * 4 KiB of stack here, more than a 160 KiB thread has
    value: Any = 1
    for _ in range(30):
        value = {"c": value}
    client = _client()
    sid = _register(client, _nested(30))
    frames = [_frame(sid, value)] * 2
    deser = JSONDeserializer(json.dumps(_nested(30)), schema_registry_client=client)
    out = [on_small_stack(lambda: deser.deserialize_arrow(frames, CTX), kib=160)]
    native = _native_of(deser)
    assert native.declined == 1 and native.refused is not None and "stack" in native.refused[1]
    assert pa.record_batch(deser.deserialize_arrow(frames, CTX)).equals(pa.record_batch(out[0]))
    assert native.taken == 1


def test_property_names_that_json_escapes() -> None:
    schema = {"type": "object", "properties": {'q"uote': {"type": "integer"}, "back\\slash": {"type": "string"},
                                               "tab\t": {"type": "boolean"}, "é": {"type": "integer"}},
              "required": ['q"uote']}
    got, _, native = _run(schema, [{'q"uote': 1, "back\\slash": "x", "tab\t": True, "é": 2}, {'q"uote': 2},
                                   b'{"q\\"uote": 3, "\\u00e9": 4}'])
    assert native.taken == 1 and _rows(got)[2] == {'q"uote': 3, "back\\slash": None, "tab\t": None, "é": 4}


def test_shared_references_are_bounded_by_max_fields() -> None:
    # every level refers to the next twice: 2^14 columns from a schema of 15 definitions
    defs = {f"L{k}": {"type": "object", "properties": {"a": {"$ref": f"#/definitions/L{k + 1}"},
                                                       "b": {"$ref": f"#/definitions/L{k + 1}"}}}
            for k in range(14)}
    defs["L14"] = {"type": "integer"}
    with pytest.raises(Refused, match="max_fields"):
        compile_program({"$ref": "#/definitions/L0", "definitions": defs}, True, DEFAULT_LIMITS)


def test_a_panic_in_the_native_decoder_gives_the_per_record_result() -> None:
    mod = native_module()
    client = _client()
    sid = _register(client, STANDARD)
    frames = [_frame(sid, _standard(n)) for n in range(5)]
    deser = JSONDeserializer(json.dumps(STANDARD), schema_registry_client=client)
    deser.deserialize_arrow(frames, CTX)
    with panic_armed(mod):
        batch = deser.deserialize_arrow(frames, CTX)
    native = _native_of(deser)
    assert native.declined == 1 and "panicked" in native.refused[1]
    assert pa.record_batch(batch).equals(pa.record_batch(deser.deserialize_arrow(frames, CTX)))
    assert native.taken == 2


# -- random schemas of the subset, random instances (valid and not) --------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "é", "d e"])


def _scalar_schema() -> Any:
    small_int = st.integers(-5, 5)
    bound = st.one_of(small_int, st.floats(-5, 5, allow_nan=False).map(lambda f: round(f, 1)))
    integer = st.fixed_dictionaries({"type": st.just("integer")}, optional={
        "minimum": bound, "maximum": bound, "exclusiveMinimum": bound, "exclusiveMaximum": bound,
        "multipleOf": st.integers(1, 4), "enum": st.lists(small_int, min_size=1, max_size=4)})
    number = st.fixed_dictionaries({"type": st.just("number")}, optional={
        "minimum": bound, "maximum": bound, "exclusiveMaximum": bound})
    string = st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "enum": st.lists(st.sampled_from(["", "a", "é", "😀", "ab"]), min_size=1, max_size=3)})
    boolean = st.fixed_dictionaries({"type": st.just("boolean")}, optional={"const": st.booleans()})
    return st.one_of(integer, number, string, boolean)


def _nullable(s: Dict[str, Any], how: int) -> Dict[str, Any]:
    if how == 1:
        return dict(s, type=[s["type"], "null"])
    if how == 2:
        return {"oneOf": [s, {"type": "null"}]}
    if how == 3:
        return {"anyOf": [{"type": "null"}, s]}
    return s


def _schema_nodes() -> Any:
    def extend(inner: Any) -> Any:
        children = st.builds(_nullable, inner, st.integers(0, 6))
        array = st.builds(lambda items, lo: dict({"type": "array", "items": items}, **lo), children,
                          st.fixed_dictionaries({}, optional={"minItems": st.integers(0, 2),
                                                              "maxItems": st.integers(1, 3)}))
        obj = st.builds(
            lambda props, req, closed: dict(
                {"type": "object", "properties": props, "required": sorted(set(req) & set(props))},
                **({"additionalProperties": False} if closed else {})),
            st.dictionaries(_NAMES, children, min_size=1, max_size=3), st.lists(_NAMES, max_size=3), st.booleans())
        mapping = st.builds(lambda v: {"type": "object", "additionalProperties": v}, children)
        return st.one_of(array, obj, mapping)

    node = st.recursive(_scalar_schema(), extend, max_leaves=6)
    return st.builds(_nullable, node, st.integers(0, 5))


def _instance(schema: Dict[str, Any]) -> Any:
    """Values for ``schema``: mostly of its type (valid or not), sometimes of another."""
    if "oneOf" in schema or "anyOf" in schema:
        inner = [s for s in schema.get("oneOf", schema.get("anyOf")) if s.get("type") != "null"][0]
        return st.one_of(st.none(), _instance(inner))
    t = schema["type"]
    t = [x for x in t if x != "null"][0] if isinstance(t, list) else t
    other = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=2),
                      st.sampled_from([1.0, 2 ** 63, 2 ** 53 + 1, -0.0]))
    own: Any
    if t == "integer":
        own = st.one_of(st.integers(-6, 6), st.sampled_from([2 ** 53, -2 ** 63, 2 ** 63 - 1]))
    elif t == "number":
        own = st.one_of(st.integers(-6, 6), st.floats(-6, 6, allow_nan=False), st.floats(allow_nan=False,
                                                                                        allow_infinity=False))
    elif t == "string":
        own = st.one_of(st.sampled_from(["", "a", "é", "😀", "ab", "abcd"]), st.text(max_size=4))
    elif t == "boolean":
        own = st.booleans()
    elif t == "array":
        own = st.lists(_instance(schema["items"]), max_size=4)
    elif "properties" in schema:
        props = schema["properties"]
        own = st.fixed_dictionaries({}, optional={k: _instance(v) for k, v in props.items()}).flatmap(
            lambda d: st.one_of(st.just(d), st.just(dict(d, zz=1))) if d else st.just(d))
    else:
        own = st.dictionaries(_NAMES, _instance(schema["additionalProperties"]), max_size=3)
    return st.one_of(own, own, own, other)


@st.composite
def _schema_and_records(draw: Any) -> Tuple[Dict[str, Any], List[Any]]:
    props = draw(st.dictionaries(_NAMES, _schema_nodes(), min_size=1, max_size=4))
    required = sorted(draw(st.lists(st.sampled_from(sorted(props)), max_size=2)))
    schema = {"type": "object", "properties": props, "required": required}
    top = {"type": "object", "properties": props}
    records = draw(st.lists(_instance(top), min_size=1, max_size=6))
    return schema, records


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_schema_and_records())
def test_random_schemas_and_records_give_the_per_record_batch(case: Tuple[Dict[str, Any], List[Any]]) -> None:
    schema, records = case
    for group in ([r] for r in records):  # one record per call: every verdict is compared
        got, ref, native = _run(schema, group)
        compiled = all(w is None for w in native._ids.values())
        if compiled and not ref.errors and group != [None]:  # (tombstones only: per-record path)
            assert native.taken == 1, (schema, group, native.refused)
    got, ref, native = _run(schema, records)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-2 ** 64, 2 ** 64),
                 st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)))
def test_number_literals_read_as_the_per_record_path_reads_them(n: Any) -> None:
    text = n if isinstance(n, str) else json.dumps(n)
    for column in ("i", "n"):
        got, ref, native = _run(SCALARS, [b'{"%s": %s}' % (column.encode(), text.encode())])
        if native.taken:
            value = _rows(got)[0][column]
            assert value == _rows(ref)[0][column] and math.copysign(1, value) == math.copysign(1, _rows(ref)[0][column])
