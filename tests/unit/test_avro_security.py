"""Avro schemas and payloads are untrusted input (issue 8, Avro half).

* no schema string reaches generated code except as a repr() literal or a namespace constant: hostile
  names are refused with a typed error, the generator run *without* that check still produces code
  of the same AST shape, and nothing executes (a marker file is never created);
* memory/CPU bombs (zero-size items, skipped fields, recursion, huge counts and lengths) each end in
  a typed error naming the limit, run in a subprocess under RLIMIT_AS and a timeout;
* deep schemas compile to the strict generated decoder (no silent fallback to fastavro).
"""

from __future__ import annotations

import ast
import io
import atexit
import json
import os
import subprocess
import sys
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional
from unittest import mock

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro.read import LOGICAL_READERS
from fastavro.write import LOGICAL_WRITERS
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serdes import CorruptPayloadError, SchemaMismatchError
from serdes._limits import Limits
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.avro import _codegen, _generator
from serdes.avro._codegen import compile_decoder, compile_encoder, compile_validator
from serdes.avro._deserializer import compile_avro_decoder
from serdes.avro._exec import compile_generated
from serdes.avro._schema_check import valid_name

from tests.support.implementations import Implementation, is_native

_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
# the AST and round-trip tests compile ~6 decoders/encoders per example
_HEAVY = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
_REPO = Path(__file__).resolve().parents[2]

# -- hostile strings ---------------------------------------------------------------------------------

MARKER = Path(tempfile.mkdtemp(prefix="serdes-avro-sec-")) / "executed"
atexit.register(shutil.rmtree, MARKER.parent, True)
_TOUCH = f"__import__('pathlib').Path({str(MARKER)!r}).touch()"
_INJECTIONS = [
    f"x{q}\n{_TOUCH}\n#{q}" for q in ("'", '"', "'''", '"""', ")", "]", "}", "\\")
] + [
    f"x{q}; {_TOUCH}; #" for q in ("'", '"', ")", "}")
] + [f"x'+{_TOUCH}+'", f'x"+{_TOUCH}+"', f"{{{_TOUCH}}}", f"x\\\n{_TOUCH}"]
_NASTY = [
    "O'Brien", 'a"b', "a\nb", "a\r\nb", "a\x00b", "a\\b", "{}", "{name}", "%s", "__class__",
    "__import__", "__builtins__", "import", "def", "lambda", "None", "True", "class", "é", "名前",
    "a\u2028b", "\t", " ", "'''", '"""', "#", "a b", "a-b", "1abc",
] + _INJECTIONS
hostile = st.one_of(
    st.sampled_from(_NASTY),
    st.text(min_size=1, max_size=12),
    st.text(alphabet="'\"\\\n\r\x00{}()[]#;:._ aé名", min_size=1, max_size=12),
)
# hostile strings usable as type names when the name check is bypassed: no dots (a dot makes a
# full name, which changes how references resolve, not the code), not a primitive/complex type name
hostile_type_name = hostile.filter(lambda s: "." not in s and s not in fastavro.const.AVRO_TYPES)


@pytest.fixture(autouse=True)
def _nothing_executed() -> Any:
    yield
    assert not MARKER.exists(), "schema text was executed"


def _zz(n: int) -> bytes:
    """Avro zigzag varint."""
    n = (n << 1) ^ (n >> 63) if n < 0 else n << 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _fa_enc(schema: Any, rec: Any) -> bytes:
    fo = io.BytesIO()
    fastavro.schemaless_writer(fo, fastavro.parse_schema(schema), rec)
    return fo.getvalue()


def _client() -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://avro-sec-{uuid.uuid4().hex}"})


def _ctx(topic: str = "t") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


# -- names are validated before anything is generated -----------------------------------------------

def _with_name_at(place: str, h: str) -> Dict[str, Any]:
    inner = {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}
    fields: List[Dict[str, Any]] = [{"name": "a", "type": "int"}]
    schema: Dict[str, Any] = {"type": "record", "name": "R", "fields": fields}
    if place == "record":
        schema["name"] = h
    elif place == "namespace":
        schema["namespace"] = h
    elif place == "enum":
        fields.append({"name": "e", "type": {"type": "enum", "name": h, "symbols": ["A"]}})
    elif place == "fixed":
        fields.append({"name": "f", "type": {"type": "fixed", "name": h, "size": 1}})
    elif place == "nested record":
        fields.append({"name": "n", "type": dict(inner, name=h)})
    elif place == "nested namespace":
        fields.append({"name": "n", "type": dict(inner, namespace=h)})
    return schema


_PLACES = ["record", "namespace", "enum", "fixed", "nested record", "nested namespace"]


def _is_valid_name(place: str, h: str) -> bool:
    if place.endswith("namespace"):
        return valid_name(h)
    return valid_name(h) and h.rsplit(".", 1)[-1] not in ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


@_SETTINGS
@given(hostile, st.sampled_from(_PLACES))
def test_invalid_names_are_a_typed_error_in_decoder_encoder_and_validator(h: str, place: str) -> None:
    assume(not _is_valid_name(place, h))
    schema = _with_name_at(place, h)
    for build in (lambda: compile_decoder(schema), lambda: compile_decoder(_with_name_at("record", "R"), schema),
                  lambda: compile_encoder(schema), lambda: compile_validator(schema)):
        with pytest.raises(SchemaMismatchError, match="invalid Avro (name|namespace)") as ei:
            build()
        assert "[A-Za-z_][A-Za-z0-9_]*" in str(ei.value)
    assert not MARKER.exists()


@pytest.mark.parametrize("name", ["int", "string", "ns.null"])
def test_primitive_type_names_cannot_be_defined(name: str) -> None:
    with pytest.raises(SchemaMismatchError, match="invalid Avro name"):
        compile_decoder({"type": "record", "name": name, "fields": []})


def test_valid_names_pass(implementation: Implementation) -> None:
    s = {"type": "record", "name": "_R1", "namespace": "com.example_2", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "x.y.E", "symbols": ["A"]}}]}
    assert implementation.compile_decoder(s, with_ctx=False)(b"\x00") == {"e": "A"}


# -- hostile strings where Avro allows any string: decoded and encoded as data -----------------------

def _template(n: List[str], f: List[str], doc: str, logical: str, default: str, ns: Optional[str] = None) -> Any:
    """A writer schema with a string from the test in every place one can reach generated code."""
    inner = {"type": "record", "name": n[3], "doc": doc, "fields": [{"name": f[3], "type": "int", "doc": doc}]}
    writer: Dict[str, Any] = {"type": "record", "name": n[0], "doc": doc, "fields": [
        {"name": f[0], "type": {"type": "enum", "name": n[1], "symbols": ["A", "B"], "doc": doc}, "doc": doc},
        {"name": f[1], "type": {"type": "fixed", "name": n[2], "size": 2}},
        {"name": f[2], "type": ["null", inner]},
        {"name": f[4], "type": {"type": "long", "logicalType": logical}},
        {"name": f[5], "type": {"type": "array", "items": n[3]}},
        {"name": f[6], "type": {"type": "map", "values": "string"}},
        {"name": f[7], "type": "string", "default": default},
    ]}
    if ns is not None:
        writer["namespace"] = ns
    reader = json.loads(json.dumps(writer))
    reader["fields"] = [fl for fl in reader["fields"] if fl["name"] != f[7]]          # skipped writer field
    reader["fields"][0]["type"]["symbols"] = ["A"]                                     # B -> reader default
    reader["fields"][0]["type"]["default"] = "A"
    reader["fields"].append({"name": f[8], "type": "string", "default": default, "aliases": [default]})
    return writer, reader


def _record(f: List[str], default: str) -> Dict[str, Any]:
    return {f[0]: "B", f[1]: b"\x01\x02", f[2]: {f[3]: -3}, f[4]: 2**40, f[5]: [{f[3]: 1}, {f[3]: 2}],
            f[6]: {default: default, "k": ""}, f[7]: default}


_logical = hostile.filter(lambda s: f"long-{s}" not in LOGICAL_READERS and f"long-{s}" not in LOGICAL_WRITERS)


@_HEAVY
@given(st.lists(hostile, min_size=9, max_size=9, unique=True), hostile, _logical, hostile)
def test_hostile_field_names_docs_defaults_and_logical_types_are_data(implementation: Implementation, f: List[str], doc: str, logical: str, default: str) -> None:
    # field names, docs, defaults, aliases, logical type names and map keys may be any string in
    # fastavro and confluent-kafka: serdes decodes and encodes them as data, exactly as fastavro
    writer, reader = _template(["R", "E", "F", "I"], f, doc, logical, default)
    rec = _record(f, default)
    data = _fa_enc(writer, rec)
    assert compile_encoder(writer)(rec, None) == data
    assert implementation.compile_decoder(writer, with_ctx=False)(data) == fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(writer))
    expected = fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(writer), fastavro.parse_schema(reader))
    got = implementation.compile_decoder(writer, reader, with_ctx=False)(data)
    assert got == expected and got[f[0]] == "A" and got[f[8]] == default


# -- the generator never pastes a name, even with the name check bypassed ----------------------------

class _Normalise(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> Any:
        return ast.Constant("S") if isinstance(node.value, str) else node


def _shape(src: str) -> str:
    return ast.dump(_Normalise().visit(ast.parse(src)))


_BENIGN_N = ["N0", "N1", "N2", "N3"]
_BENIGN_F = [f"f{i}" for i in range(9)]


@_HEAVY
@given(st.lists(hostile_type_name, min_size=4, max_size=4, unique=True),
       st.lists(hostile, min_size=9, max_size=9, unique=True), hostile, _logical, hostile,
       hostile_type_name, st.booleans())
def test_generated_code_has_the_same_ast_whatever_the_names(
    n: List[str], f: List[str], doc: str, logical: str, default: str, ns: str, rrn: bool
) -> None:
    # the reader's added field has the alias `default`: naming a writer field, it reads that field
    # instead of taking its default, a differently shaped (and correct) decoder than the benign one
    assume(default not in f)
    writer, reader = _template(n, f, doc, logical, default, ns)
    bw, br = _template(_BENIGN_N, _BENIGN_F, "doc", "no-such-logical", "dflt", "ns")
    try:
        fastavro.parse_schema(writer)
        fastavro.parse_schema(reader)
    except Exception:
        assume(False)  # fastavro's own parser refuses it: nothing to generate
    with mock.patch.object(_generator, "check_schema", lambda *a: None):
        for w, r in ((writer, None), (writer, reader)):
            bench = (bw, None if r is None else br)
            src = _codegen.generated_source(w, r, rrn)
            assert _shape(src) == _shape(_codegen.generated_source(bench[0], bench[1], rrn))
            dec = compile_decoder(w, r, rrn)
            assert _shape(dec.__serdes_source__) == _shape(src)
        enc = compile_encoder(writer)
        assert _shape(enc.__serdes_source__) == _shape(compile_encoder(bw).__serdes_source__)
        rec = _record(f, default)
        data = enc(rec, None)
        assert data == _fa_enc(writer, rec)
        assert compile_decoder(writer, with_ctx=False)(data) == \
            fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(writer))
    assert not MARKER.exists()


def test_no_schema_string_in_generated_source() -> None:
    # belt and braces for the AST test: a distinctive name occurs in the source only inside literals
    f = [f"zz_field_{i}" for i in range(9)]
    writer, reader = _template(["zz_rec", "zz_enum", "zz_fixed", "zz_inner"], f, "zz_doc", "zz-logical", "zz_default", "zz_ns")
    for src in (compile_decoder(writer, reader, True).__serdes_source__, compile_encoder(writer).__serdes_source__):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Name):
                assert "zz" not in node.id
            if isinstance(node, ast.Attribute):
                assert "zz" not in node.attr


# -- compile_generated: the second line of defence ----------------------------------------------------

@pytest.mark.parametrize("src,why", [
    ("import os\ndef decode(data, pos):\n    return 1\n", "top-level"),
    ("def decode(data, pos):\n    import os\n    return 1\n", "Import"),
    ("def decode(data, pos):\n    return __import__('os')\n", "unknown name"),
    ("def decode(data, pos):\n    return open('x')\n", "unknown name"),
    ("def decode(data, pos):\n    return data.__class__\n", "attribute"),
    ("def decode(data, pos):\n    v = 1\n", "return"),
    ("def decode(data, pos):\n    return None\n", "return"),
    ("def decode(data, pos):\n    def g():\n        pass\n    return 1\n", "FunctionDef"),
    ("def decode(data, pos):\n    return (lambda: 1)()\n", "Lambda"),
    ("def decode(data, pos):\n    return 1\ndef decode(data, pos):\n    return 2\n", "top-level"),
    ("def other(data, pos):\n    return 1\n", "no function decode"),
    ("def decode(data, pos):\n    return 'x\n", "SyntaxError"),
    ("def decode(data, pos):\n" + "".join("    " * (i + 1) + "for _ in data:\n" for i in range(25)) + "    " * 26 + "pass\n    return 1\n", "nested blocks"),
])
def test_compile_generated_refuses_what_no_generator_writes(src: str, why: str) -> None:
    with pytest.raises(SchemaMismatchError, match=why):
        compile_generated(src, "decoder", {}, "decode")


def test_compile_generated_accepts_generator_shapes() -> None:
    fn = compile_generated("def decode(data, pos):\n    v = _k1.get(data)\n    return v, len(data)\n", "decoder", {"_k1": {}}, "decode")
    assert fn(b"", 0) == (None, 0) and "return" in fn.__serdes_source__


# -- serializer / deserializer with hostile schemas ----------------------------------------------------

def test_own_schema_with_invalid_name_is_a_typed_error_before_registering() -> None:
    client = _client()
    schema = {"type": "record", "name": "O'Brien", "fields": [{"name": "a", "type": "int"}]}
    ser = AvroSerializer(client, json.dumps(schema))
    for _ in range(2):
        with pytest.raises(SchemaMismatchError, match="O'Brien") as ei:
            ser({"a": 1}, _ctx())
        assert ei.value.location.topic == "t"
    assert client.get_subjects() == []


@pytest.mark.parametrize("where", ["namespace", "record", "enum"])
def test_registry_schema_with_injected_name_never_runs_and_never_returns_none(where: str) -> None:
    client = _client()
    payload = _INJECTIONS[0]
    schema = _with_name_at(where, payload)
    if where == "enum":
        schema["fields"] = [{"name": "a", "type": "int"}]  # encoder reaches enum names only when present
        schema["fields"].append({"name": "e", "type": {"type": "enum", "name": payload, "symbols": ["A"]}})
    client.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
    value = {"a": 1, "e": "A"} if where == "enum" else {"a": 1}
    for conf in ({"auto.register.schemas": False, "use.latest.version": True},
                 {"auto.register.schemas": False, "use.schema.id": 1}):
        ser = AvroSerializer(client, None, conf=conf)
        for _ in range(3):  # first call (confluent-kafka's path) and every later one
            with pytest.raises(SchemaMismatchError, match="registry schema"):
                ser(value, _ctx())
    assert not MARKER.exists()


def test_writer_schema_with_injected_name_is_a_typed_error_per_record() -> None:
    client = _client()
    schema = _with_name_at("namespace", _INJECTIONS[1])
    sid = client.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
    frame = b"\x00" + sid.to_bytes(4, "big") + b"\x02"
    de = AvroDeserializer(client)
    for _ in range(3):
        with pytest.raises(SchemaMismatchError, match="invalid Avro name") as ei:
            de(frame, _ctx())
        assert ei.value.schema_id == sid
    # and as the reader schema
    good = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    gid = client.register_schema("u-value", Schema(json.dumps(good), "AVRO"))
    de2 = AvroDeserializer(client, json.dumps(schema))
    with pytest.raises(SchemaMismatchError, match="reader schema"):
        de2(b"\x00" + gid.to_bytes(4, "big") + b"\x02", _ctx("u"))


def test_unparsable_writer_schema_is_a_schema_mismatch() -> None:
    client = _client()
    sid = client.register_schema("t-value", Schema('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]}', "AVRO"))
    de = AvroDeserializer(client)
    for _ in range(2):
        with pytest.raises(SchemaMismatchError, match="does not parse"):
            de(b"\x00" + sid.to_bytes(4, "big") + b"\x02", _ctx())


# -- limits: configuration ----------------------------------------------------------------------------

def test_limit_keys_are_per_instance_and_not_seen_by_confluent_kafka() -> None:
    client = _client()
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "null"}},
        {"name": "skipped", "type": {"type": "array", "items": "null"}}]}
    reader = {"type": "record", "name": "R", "fields": schema["fields"][:2]}
    sid = client.register_schema("t-value", Schema(json.dumps(schema), "AVRO"))
    conf = {"serdes.max.items": 6}
    tight = AvroDeserializer(client, json.dumps(reader), conf=conf)
    loose = AvroDeserializer(client, json.dumps(reader))
    assert conf == {"serdes.max.items": 6}  # the caller's dict is left alone
    # 2 + 1 + 3 (skipped by the reader) = 6 items: at the limit
    ok = b"\x00" + sid.to_bytes(4, "big") + _zz(2) + b"\x02\x04" + _zz(0) + _zz(1) + b"\x02k" + _zz(0) + _zz(3) + _zz(0)
    assert tight(ok, _ctx()) == {"a": [1, 2], "m": {"k": None}}
    over = ok[:-2] + _zz(4) + _zz(0)
    with pytest.raises(CorruptPayloadError, match="serdes.max.items=6") as ei:
        tight(over, _ctx())
    assert ei.value.location.topic == "t"
    assert loose(over, _ctx()) == {"a": [1, 2], "m": {"k": None}}
    with pytest.raises(ValueError, match="serdes"):
        AvroDeserializer(client, None, None, False, {"serdes.max.itemz": 1})
    AvroDeserializer(client, None, None, False, {"serdes.max.items": 1})  # positional conf too


def test_schema_depth_limit_is_configurable() -> None:
    client = _client()
    schema: Any = "int"
    for _ in range(5):
        schema = {"type": "array", "items": schema}
    schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": schema}]}
    ser = AvroSerializer(client, json.dumps(schema), conf={"serdes.max.schema.depth": 4})
    with pytest.raises(SchemaMismatchError, match="serdes.max.schema.depth=4"):
        ser({"a": [[[[[1]]]]]}, _ctx())
    ser = AvroSerializer(client, json.dumps(schema), None, {"serdes.max.schema.depth": 6})
    data = ser({"a": [[[[[1]]]]]}, _ctx())
    assert AvroDeserializer(client, conf={"serdes.max.schema.depth": 6})(data, _ctx()) == {"a": [[[[[1]]]]]}
    with pytest.raises(SchemaMismatchError, match="serdes.max.schema.depth=5"):
        AvroDeserializer(client, conf={"serdes.max.schema.depth": 5})(data, _ctx())


def test_schema_far_deeper_than_the_limit_is_refused_without_recursion_error() -> None:
    schema: Any = "null"
    for _ in range(50_000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(SchemaMismatchError, match="serdes.max.schema.depth=256"):
        compile_decoder(schema)
    with pytest.raises(SchemaMismatchError, match="serdes.max.schema.depth=256"):
        compile_encoder(schema)


def test_recursion_depth_is_bounded_in_process(implementation: Implementation) -> None:
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    dec = implementation.compile_decoder(node, with_ctx=False, limits=Limits(max_depth=10))
    value: Any = None
    for _ in range(10):
        value = {"next": value}
    assert dec(b"\x02" * 10 + b"\x00") == {"next": value}
    with pytest.raises(CorruptPayloadError, match="serdes.max.depth=10"):
        dec(b"\x02" * 11 + b"\x00")


# -- deep schemas keep the strict generated decoder -----------------------------------------------------

def _nested(kind: str, depth: int, leaf: Any) -> Any:
    s = leaf
    for _ in range(depth):
        s = {"type": "array", "items": s} if kind == "array" else {"type": "map", "values": s}
    return {"type": "record", "name": "R", "fields": [{"name": "a", "type": s}]}


def _strict(impl: Implementation, dec: Any) -> bool:
    """The decoder is the strict one of ``impl``: generated code (pure) or the native AvroDecoder."""
    return is_native(dec) if impl.name == "native" else hasattr(dec, "__serdes_source__")


def _one_each(kind: str, depth: int, leaf: bytes) -> bytes:
    head = (_zz(1) + (b"\x02k" if kind == "map" else b"")) * depth
    return head + leaf + _zz(0) * depth


@pytest.mark.parametrize("kind,depth", [("array", 11), ("map", 10), ("array", 40), ("map", 120)])
def test_deep_schemas_compile_to_the_strict_decoder(implementation: Implementation, kind: str, depth: int) -> None:
    enum = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    schema = _nested(kind, depth, enum)
    dec = compile_avro_decoder(fastavro.parse_schema(schema), None, False, None)
    assert _strict(implementation, dec)  # generated (or native), not the fastavro fallback
    value: Any = "B"
    for _ in range(depth):
        value = [value] if kind == "array" else {"k": value}
    good = _one_each(kind, depth, _zz(1))
    assert good == _fa_enc(schema, {"a": value})
    assert dec(good, 0, None) == {"a": value}
    with pytest.raises(CorruptPayloadError, match="enum index -1"):
        dec(_one_each(kind, depth, _zz(-1)), 0, None)
    long_schema = _nested(kind, depth, "long")
    ldec = compile_avro_decoder(fastavro.parse_schema(long_schema), None, False, None)
    assert _strict(implementation, ldec)
    with pytest.raises(CorruptPayloadError, match="varint longer than 10 bytes"):
        ldec(_one_each(kind, depth, b"\xff" * 10 + b"\x01"), 0, None)
    # encoder compiles too (no SyntaxError) and writes fastavro's bytes
    assert compile_encoder(schema)({"a": value}, None) == good


def test_unsupported_reader_paths_are_ones_fastavro_cannot_read_either() -> None:
    # why the fallback is rare: the reader schemas codegen declines make fastavro fail too
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "e1", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}}, {"name": "e2", "type": ["null", "E"]}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "e2", "type": ["null", {"type": "enum", "name": "E", "symbols": ["X", "Y"]}]}]}
    w, r = fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    with pytest.raises(_codegen.Unsupported):
        compile_decoder(w, r, True)
    data = _fa_enc(writer, {"e1": "X", "e2": "Y"})
    with pytest.raises(TypeError):
        fastavro.schemaless_reader(io.BytesIO(data), w, r, True)
    dec = compile_avro_decoder(w, r, True, None)
    with pytest.raises(TypeError):  # fastavro's own error (the core wraps it in CorruptPayloadError)
        dec(data, 0, None)


def test_fastavro_fallback_runs_behind_the_strict_validator() -> None:
    from serdes.avro import _native_decoder

    writer = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
        {"name": "n", "type": {"type": "array", "items": "null"}}]}
    w = fastavro.parse_schema(writer)
    with mock.patch.object(_native_decoder, "decoder_builder", side_effect=_codegen.Unsupported("test")):
        dec = compile_avro_decoder(w, None, False, None, limits=Limits(max_items=5))
    assert not hasattr(dec, "__serdes_source__")  # the fastavro path ...
    data = _fa_enc(writer, {"a": 1, "e": "X", "n": [None] * 5})
    assert dec(data, 0, None) == {"a": 1, "e": "X", "n": [None] * 5}
    with pytest.raises(CorruptPayloadError, match="enum index -1"):  # ... behind the validator
        dec(b"\x02" + _zz(-1) + _zz(0), 0, None)
    with pytest.raises(CorruptPayloadError, match="serdes.max.items=5"):
        dec(b"\x02\x00" + _zz(3) * 2 + _zz(0), 0, None)
    with pytest.raises(CorruptPayloadError, match="serdes.max.items=5"):
        dec(b"\x02\x00" + _zz(2**62), 0, None)  # fastavro alone would spin
    with pytest.raises(CorruptPayloadError, match="varint longer than 10 bytes"):
        dec(b"\xff" * 10 + b"\x01", 0, None)
    with pytest.raises(CorruptPayloadError, match="trailing"):
        dec(data + b"\x00", 0, None)


# -- bombs, each in a subprocess under RLIMIT_AS and a timeout ----------------------------------------

_RLIMIT = 2 << 30  # 2 GiB of address space for the whole interpreter
_RUNNER = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.avro import AvroDeserializer
case = json.loads(sys.stdin.read())
client = SchemaRegistryClient.new_client({{"url": "mock://bomb"}})
sid = client.register_schema("t-value", Schema(json.dumps(case["writer"]), "AVRO"))
reader = json.dumps(case["reader"]) if case["reader"] else None
de = AvroDeserializer(client, reader, conf=case["conf"])
frame = b"\x00" + sid.to_bytes(4, "big") + bytes.fromhex(case["payload"])
try:
    value = de(frame, SerializationContext("t", MessageField.VALUE))
    out = {{"ok": True, "summary": repr(value)[:200]}}
except Exception as e:
    out = {{"ok": False, "type": type(e).__name__, "message": str(e)}}
import serdes._native
out["impl"] = serdes._native.implementation()
print(json.dumps(out))
"""

_ARRAY_NULL = {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}
_EMPTY = {"type": "record", "name": "Empty", "fields": []}
_NODE = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}

_BOMBS = {
    # 81 bytes: 20 blocks of 9,999,999 nulls (each block passed the old per-block guard)
    "repeated-null-blocks": (_ARRAY_NULL, None, _zz(9_999_999) * 20 + _zz(0), "serdes.max.items=10000000"),
    # 26 bytes: five blocks of 10M nulls (used to return a 50M-element list)
    "five-blocks-of-10M": (_ARRAY_NULL, None, _zz(10_000_000) * 5 + _zz(0), "serdes.max.items=10000000"),
    "empty-records": ({"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": _EMPTY}}]},
                      None, _zz(9_999_999) * 20 + _zz(0), "serdes.max.items=10000000"),
    "nested-null-arrays": ({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": {"type": "array", "items": "null"}}}]},
        None, _zz(3) + (_zz(9_999_999) + _zz(0)) * 3 + _zz(0), "serdes.max.items=10000000"),
    # the reader drops the field: skipped items count too (used to burn ~14 s of CPU)
    "skipped-field": ({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "null"}}, {"name": "b", "type": "int"}]},
        {"type": "record", "name": "R", "fields": [{"name": "b", "type": "int"}]},
        _zz(9_999_999) * 20 + _zz(0) + _zz(1), "serdes.max.items=10000000"),
    "skipped-negative-blocks": ({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": "null"}}, {"name": "b", "type": "int"}]},
        {"type": "record", "name": "R", "fields": [{"name": "b", "type": "int"}]},
        (_zz(-9_999_999) + _zz(0)) * 20 + _zz(0) + _zz(1), "serdes.max.items=10000000"),
    "count-2**62": (_ARRAY_NULL, None, _zz(2**62), "serdes.max.items=10000000"),
    "map-count-past-the-end": ({"type": "record", "name": "R", "fields": [{"name": "m", "type": {"type": "map", "values": "null"}}]},
                        None, _zz(1000), "block of 1000 items but only 0 bytes left"),
    "string-length-2**62": ({"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]},
                            None, _zz(2**62) + b"abc", "length 4611686018427387904 but only 3 bytes left"),
    "eleven-byte-varint": ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]},
                           None, b"\xff" * 10 + b"\x01", "varint longer than 10 bytes"),
    "negative-enum": ({"type": "record", "name": "R", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}]}, None, _zz(-1), "enum index -1"),
    "negative-union": ({"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "int"]}]},
                       None, _zz(-1) + b"\x02", "union branch index -1"),
    "recursion": (_NODE, None, b"\x02" * 200_000 + b"\x00", "serdes.max.depth=100"),
    "deep-schema-count-2**62": (_nested("array", 11, "null"), None, _zz(1) * 10 + _zz(2**62), "serdes.max.items=10000000"),
    "configured-limit": (_ARRAY_NULL, None, _zz(1001) + _zz(0), "serdes.max.items=1000"),
}


@pytest.mark.parametrize("name", sorted(_BOMBS))
def test_bomb_is_a_typed_error_within_memory_and_time_bounds(implementation: Implementation, name: str) -> None:
    writer, reader, payload, message = _BOMBS[name]
    conf = {"serdes.max.items": 1000} if name == "configured-limit" else {}
    case = {"writer": writer, "reader": reader, "payload": payload.hex(), "conf": conf}
    env = dict(os.environ, PYTHONPATH=str(_REPO), SERDES_PURE_PYTHON="1" if implementation.name == "pure" else "0")
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER.format(limit=_RLIMIT)], input=json.dumps(case),
        capture_output=True, text=True, timeout=300, env=env, cwd=str(_REPO),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"ok": False, "type": "CorruptPayloadError", "message": out.get("message"), "impl": implementation.name}, out
    assert message in out["message"], out
    assert "topic='t'" in out["message"]


def test_schema_depth_limit_set_far_above_the_default_is_still_a_typed_error() -> None:
    schema: Any = "int"
    for _ in range(20_000):
        schema = {"type": "array", "items": schema}
    limits = Limits(max_schema_depth=1_000_000)
    for build in (lambda: compile_decoder(schema, limits=limits), lambda: compile_validator(schema, limits),
                  lambda: compile_encoder(schema, limits=limits)):
        with pytest.raises(SchemaMismatchError, match="too deep"):
            build()
