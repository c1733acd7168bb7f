"""serdes.avro.generated_source and the linecache registration of generated code (issue 11)."""

from __future__ import annotations

import json
import linecache
import traceback
import types
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import CorruptPayloadError, SchemaMismatchError, ValidationError
from serdes.avro import AvroDeserializer, AvroSerializer, generated_source
from serdes.avro import _exec
from serdes._native import forced_pure
from serdes.avro._codegen import compile_decoder
from serdes.avro._codegen import compile_encoder
from tests.support.confluent_releases import at_least

USER = {"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"},
    {"name": "age", "type": "long"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
]}
USER_V2 = {"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"},
    {"name": "age", "type": "long"},
    {"name": "email", "type": ["null", "string"], "default": None},
]}


def _ctx() -> SerializationContext:
    return SerializationContext("users", MessageField.VALUE)


def test_decoder_source_is_the_code_the_decoder_runs() -> None:
    src = generated_source(json.dumps(USER))
    assert src is not None and "def decode(data, pos, ctx=None):" in src
    assert "'name'" in src and "'tags'" in src
    decode = compile_decoder(USER)
    assert decode.__serdes_source__ == src
    assert decode.__code__.co_filename == _exec.generated_filename(src, "decoder")
    # the same from a dict and from a confluent-kafka Schema
    assert generated_source(USER) == src
    assert generated_source(Schema(json.dumps(USER), "AVRO")) == src


def test_decoder_source_with_a_reader_schema_resolves() -> None:
    plain = generated_source(USER)
    resolved = generated_source(USER, USER_V2)
    assert resolved is not None and resolved != plain
    assert "'email'" in resolved and "'tags'" not in resolved.split("v = {", 1)[-1]


def test_decoder_source_refuses_an_unreadable_pair() -> None:
    reader = {"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "name", "type": "long"}]}
    with pytest.raises(SchemaMismatchError):
        generated_source(USER, reader)


def test_encoder_source_is_the_code_the_encoder_runs() -> None:
    src = generated_source(json.dumps(USER), kind="encoder")
    assert src is not None and "def encode(obj, ctx=None):" in src
    encode = compile_encoder(USER)
    assert encode.__serdes_source__ == src
    assert encode.__code__.co_filename == _exec.generated_filename(src, "encoder")


def test_encoder_without_generated_code_is_none() -> None:
    # a raw "bytes" schema (confluent-kafka 2.13+) is written as the value itself: no code; on 2.12
    # it is Avro bytes, an encoder like any other schema's
    if at_least("2.13"):
        assert generated_source('"bytes"', kind="encoder") is None
    else:
        assert "def encode(" in str(generated_source('"bytes"', kind="encoder"))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="kind"):
        generated_source(USER, kind="validator")
    with pytest.raises(ValueError, match="reader"):
        generated_source(USER, USER_V2, kind="encoder")
    with pytest.raises(SchemaMismatchError, match="not JSON"):
        generated_source("{not json")
    with pytest.raises(SchemaMismatchError):
        generated_source({"type": "record", "name": "bad name!", "fields": []})


def test_traceback_through_a_decoder_shows_the_generated_line() -> None:
    client = SchemaRegistryClient.new_client({"url": f"mock://gensrc-{uuid.uuid4().hex}"})
    data = AvroSerializer(client, json.dumps(USER))({"name": "ann", "age": 3, "tags": ["a"]}, _ctx())
    deser = AvroDeserializer(client)
    with forced_pure():  # generated code is the pure implementation's (the native one has no source lines)
        assert deser(data, _ctx())["name"] == "ann"
    src = generated_source(USER)
    assert src is not None
    with pytest.raises(CorruptPayloadError) as info:
        deser(data[:-3], _ctx())  # cut inside the tags array
    text = "".join(traceback.format_exception(info.value))
    assert _exec.generated_filename(src, "decoder") in text
    assert _shows_a_generated_raise(text, src), text


def _shows_a_generated_raise(text: str, src: str) -> bool:
    # traceback prints a frame's source line indented by four spaces under its "File ..." line
    frame_lines = [ln.strip() for ln in text.splitlines() if ln.startswith("    ")]
    generated = {ln.strip() for ln in src.splitlines() if ln.strip()}
    return any(ln in generated and ln.startswith("raise ") for ln in frame_lines)


def test_traceback_through_an_encoder_shows_the_generated_line() -> None:
    encode = compile_encoder(USER)
    with pytest.raises(ValidationError) as info:
        encode({"name": 5, "age": 1, "tags": []}, None)
    text = "".join(traceback.format_exception(info.value))
    assert encode.__code__.co_filename in text
    assert _shows_a_generated_raise(text, encode.__serdes_source__), text


def test_linecache_keeps_a_bounded_number_of_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_exec, "LINECACHE_ENTRIES", 3)
    names = []
    for i in range(6):
        schema = {"type": "record", "name": "R", "fields": [{"name": f"f{i}", "type": "int"}]}
        names.append(compile_decoder(schema).__code__.co_filename)
    assert len(set(names)) == 6
    assert [n in linecache.cache for n in names] == [False, False, False, True, True, True]
    assert sum(1 for k in linecache.cache if k.startswith("<serdes.avro ")) <= 3
    # linecache.checkcache (run by traceback formatting) keeps the entries without a file
    linecache.checkcache()
    assert linecache.getline(names[-1], 2).strip() != ""


def test_each_generated_function_is_compiled_at_its_own_lines_of_the_source() -> None:
    # (each function is parsed on its own, then moved to its place in the whole source: a
    # traceback's line is the line the function's code runs)
    wide = {"type": "record", "name": "Wide", "fields": [
        {"name": f"f{i}", "type": ["null", "string", {"type": "array", "items": "long"}]} for i in range(400)]}
    fn = compile_decoder(wide)
    lines = fn.__serdes_source__.splitlines()
    generated = [f for f in fn.__globals__.values()
                 if isinstance(f, types.FunctionType) and f.__code__.co_filename == fn.__code__.co_filename]
    assert len(generated) > 1, "the wide schema's source is not split into functions"
    for f in generated:
        assert lines[f.__code__.co_firstlineno - 1].startswith(f"def {f.__name__}("), f.__name__
        last = max(line for _, _, line in f.__code__.co_lines() if line is not None)
        enclosing = next(ln for ln in reversed(lines[:last]) if ln.startswith("def "))
        assert enclosing.startswith(f"def {f.__name__}("), (f.__name__, last)
