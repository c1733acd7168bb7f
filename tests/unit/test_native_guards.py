"""The native extension's guards: no thread stack, no panic and no misbehaving Python object kills
the process or escapes untyped (docs/native.md, "Guards").

* Stacks: a child process runs an Avro deserializer and serializer (native, and pure inside
  ``forced_pure()``) on a thread with a 64 KiB, 128 KiB, 256 KiB or 1 MiB stack (``threading.stack_size``),
  at the largest ``serdes.max.depth`` the docs allow (any positive integer: ``sys.maxsize`` here),
  on recursive values from 50 to 100,000 levels deep. Every call gives the right value or a
  ``CorruptPayloadError`` (decode) / ``ValidationError`` (encode); the child exits cleanly.
  Avro's recursion is serdes' own native code (and fastavro's, on the pure path); JSON's is
  orjson's and jsonschema-rs' (tested here with the same raised limit); Protobuf's upb has a fixed
  limit of 100 levels (test_protobuf_security.py).
* Panics: ``_serdes_native._arm_panic(n)`` (a test hook, not public API) makes the n-th native
  entry call panic inside its guard; a real panic path of the dispatcher is reached too. Nothing
  raises ``PanicException``: the pure-Python path gives the value, or a serdes error is raised.
* Misbehaving Python code called while encoding (a dict subclass whose ``__getitem__`` deletes
  keys, ``__getattr__`` that raises, a prepare function that frees the values being encoded or
  mutates the list being walked): the right value or a typed error, native and pure alike.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import Any, Callable, Iterator, List, Tuple

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro.write import LOGICAL_WRITERS

from serdes import CorruptPayloadError, SchemaMismatchError, SerdesError
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.avro._native_decoder import compile_native_decoder
from serdes.avro._native_encoder import compile_native_encoder, is_native_encoder
from tests.support.implementations import Implementation, native_module
from tests.support.isolated import CHILD_PRELUDE, run_bounded

LINKED = {"type": "record", "name": "N", "fields": [{"name": "x", "type": "int"}, {"name": "n", "type": ["null", "N"]}]}
CTX = SerializationContext("guards", MessageField.VALUE)

# -- thread stacks ---------------------------------------------------------------------------------

_STACK_CHILD = '''
import contextlib, io, json, sys, threading, uuid
import fastavro
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes import _native
from serdes.avro import AvroDeserializer, AvroSerializer

IMPL, STACK = {impl!r}, {stack}
SCHEMA = {schema!r}
conf = {{"serdes.max.depth": sys.maxsize}}
registry = SchemaRegistryClient.new_client({{"url": "mock://guards-" + uuid.uuid4().hex}})
ctx = SerializationContext("guards", MessageField.VALUE)
with _native.forced_pure() if IMPL == "pure" else contextlib.nullcontext():
    ser = AvroSerializer(registry, json.dumps(SCHEMA), conf=conf)
    de = AvroDeserializer(registry, conf=conf)
    frame = ser({{"x": 0, "n": None}}, ctx)  # registers the schema; the serdes are cached from here on
    assert de(frame, ctx) == {{"x": 0, "n": None}}
assert _native.implementation() == "native" or IMPL == "pure"

def value(depth):
    v = {{"x": 0, "n": None}}
    for i in range(depth):
        v = {{"x": i + 1, "n": v}}
    return v

def payload(depth):
    # x = depth, ..., 1 with a "N" branch each, then x = 0 and the null branch
    body = bytearray()
    for i in range(depth, 0, -1):
        body += fastavro_long(i) + b"\\x02"
    return bytes(frame[:5]) + bytes(body) + b"\\x00\\x00"

def fastavro_long(n):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)

expected = {{}}
for d in {depths!r}:
    if d <= 300:  # the reference bytes, on the main thread (8 MiB): fastavro's own writer
        fo = io.BytesIO()
        fastavro.schemaless_writer(fo, fastavro.parse_schema(SCHEMA), value(d))
        expected[d] = fo.getvalue()

results = []
def run():
    for d in {depths!r}:
        for what in ("decode", "encode"):
            try:
                if what == "decode":
                    out = de(payload(d), ctx)
                    ok = out == value(d)
                else:
                    out = ser(value(d), ctx)
                    ok = out[5:] == expected[d] if d in expected else out[5:] == fastavro_bytes(d)
                results.append([what, d, "value", ok])
            except BaseException as e:
                results.append([what, d, type(e).__name__, [c.__name__ for c in type(e).__mro__]])

def fastavro_bytes(d):
    fo = io.BytesIO()
    fastavro.schemaless_writer(fo, fastavro.parse_schema(SCHEMA), value(d))
    return fo.getvalue()

threading.stack_size(STACK * 1024)
t = threading.Thread(target=run)
t.start()
t.join()
print(json.dumps({{"results": results, "impl": _native.implementation()}}))
'''

_DEPTHS = [50, 300, 1990, 100_000]


@pytest.mark.parametrize("stack", [64, 128, 256, 1024])
def test_recursive_records_on_small_thread_stacks(implementation: Implementation, stack: int) -> None:
    # the child rebuilds the implementation by name
    code = _STACK_CHILD.format(impl=implementation.name, stack=stack, schema=LINKED, depths=_DEPTHS)
    out = run_bounded(CHILD_PRELUDE + code, timeout=600)
    assert out["returncode"] == 0, out
    assert len(out["results"]) == 2 * len(_DEPTHS), out
    for what, depth, outcome, detail in out["results"]:
        if outcome == "value":
            assert detail is True, (what, depth, "a wrong value")
        else:
            typed = "CorruptPayloadError" if what == "decode" else "ValidationError"
            assert outcome == typed, (what, depth, outcome, detail)
            assert "SerdesError" in detail
        if depth <= 300:  # these fit Python's recursion limit: the pure path decodes them on any stack
            assert outcome == "value", (what, depth, outcome)
        if depth == 100_000:  # past Python's recursion limit and any native stack here
            assert outcome != "value", (what, depth)


_FASTAVRO_READER_CHILD = """
import io, sys, threading
from unittest import mock
import fastavro
from serdes._limits import Limits
from serdes.avro import _codegen, _native_decoder
from serdes.avro._deserializer import compile_avro_decoder
w = fastavro.parse_schema({schema!r})
with mock.patch.object(_native_decoder, "decoder_builder", side_effect=_codegen.Unsupported("test")):
    dec = compile_avro_decoder(w, None, False, None, limits=Limits(max_depth=sys.maxsize))
assert not hasattr(dec, "__serdes_source__")  # the fastavro reader, behind the validator
v = {{"x": 0, "n": None}}
for i in range(300):
    v = {{"x": i + 1, "n": v}}
fo = io.BytesIO()
fastavro.schemaless_writer(fo, w, v)
data = fo.getvalue()
threading.stack_size(128 * 1024)
t = threading.Thread(target=lambda: report(lambda: dec(data, 0, None) == v))
t.start()
t.join()
"""


def test_the_fastavro_reader_fallback_on_a_small_thread_stack() -> None:
    # fastavro's Cython reader (the path for reader schemas codegen declines) recurses on the C
    # stack: a deep value is read on serdes' sized-stack thread
    out = run_bounded(CHILD_PRELUDE + _FASTAVRO_READER_CHILD.format(schema=LINKED), timeout=600)
    assert out["returncode"] == 0 and out["error"] is None and out["value"] == "True", out


_JSON_CHILD = """
import json, sys, threading, uuid
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.json import JSONDeserializer, JSONSerializer
TREE = {{"$ref": "#/$defs/n", "$defs": {{"n": {{"type": "object", "properties": {{"c": {{"$ref": "#/$defs/n"}}}}}}}}}}
conf = {{"serdes.max.depth": sys.maxsize}}
reg = SchemaRegistryClient.new_client({{"url": "mock://guards-" + uuid.uuid4().hex}})
ctx = SerializationContext("t", MessageField.VALUE)
ser = JSONSerializer(json.dumps(TREE), reg, conf=conf)
de = JSONDeserializer(None, schema_registry_client=reg, conf=conf)
frame = ser({{}}, ctx)[:5]
def nested(d):
    v = {{}}
    for _ in range(d - 1):
        v = {{"c": v}}
    return v
def text(d):
    return ("{{\\"c\\":" * (d - 1) + "{{}}" + "}}" * (d - 1)).encode()
def is_nested(v, d):  # iteratively: == (and repr) on a deep value recurse on the C stack themselves
    for _ in range(d - 1):
        if not (isinstance(v, dict) and list(v) == ["c"]):
            return False
        v = v["c"]
    return v == {{}}
results = []
def run():
    for what, d in [("decode", 1000), ("decode", 30_000), ("encode", 250), ("encode", 1000)]:
        try:
            if what == "decode":
                ok = is_nested(de(frame + text(d), ctx), d)
            else:
                ok = is_nested(json.loads(ser(nested(d), ctx)[5:]), d)
            results.append([what, d, "value", ok])
        except BaseException as e:
            results.append([what, d, type(e).__name__, [c.__name__ for c in type(e).__mro__]])
threading.stack_size({stack} * 1024)
t = threading.Thread(target=run)
t.start()
t.join()
print(json.dumps({{"results": results}}))
"""


@pytest.mark.parametrize("stack", [128, 256, 1024])
def test_deep_json_values_on_small_thread_stacks(stack: int) -> None:
    # orjson parses up to 1024 levels and jsonschema-rs validates on the C stack: with
    # serdes.max.depth raised, a deep value is validated on serdes' sized-stack thread
    out = run_bounded(CHILD_PRELUDE + _JSON_CHILD.format(stack=stack), timeout=600)
    assert out["returncode"] == 0, out
    got = {(w, d): (o, detail) for w, d, o, detail in out["results"]}
    assert got[("decode", 1000)] == ("value", True), got
    assert got[("encode", 250)] == ("value", True), got
    assert got[("decode", 30_000)][0] == "CorruptPayloadError", got  # orjson refuses it, typed
    assert got[("encode", 1000)][0] in ("value", "ValidationError"), got


def test_the_sized_stack_thread_returns_and_raises_for_its_caller() -> None:
    from serdes import _bigstack

    assert _bigstack.call(lambda: 41 + 1) == 42
    with pytest.raises(ZeroDivisionError):
        _bigstack.call(lambda: 1 // 0)
    # a call from the worker itself runs inline (no deadlock)
    assert _bigstack.call(lambda: _bigstack.call(lambda: "inner")) == "inner"


def test_the_native_loops_stop_at_the_stack_not_at_a_count() -> None:
    # the guard reads the stack of the thread it runs on: a 128 KiB thread leaves far less than the
    # main thread. In a child: glibc hands a new thread a cached larger stack of an ended one.
    native = native_module()
    assert native.STACK_RESERVE >= 16 * 1024
    out = run_bounded(CHILD_PRELUDE + """
import threading
from serdes import _native
seen = []
threading.stack_size(128 * 1024)
t = threading.Thread(target=lambda: seen.append(_native.native._stack_left()))
t.start()
t.join()
report(lambda: (seen[0], _native.native._stack_left()))
""")
    small, main = eval(out["value"])  # noqa: S307 - a tuple of two ints printed by the child
    # (a debug build keeps a larger reserve: nothing of a 128 KiB stack is left for its loops)
    assert small <= max(0, 128 * 1024 - native.STACK_RESERVE) < main


# -- panics -----------------------------------------------------------------------------------------


@pytest.fixture
def native() -> Iterator[Any]:
    mod = native_module()
    yield mod
    mod._arm_panic(0)


def _frame_and_serdes() -> Tuple[AvroSerializer, AvroDeserializer, bytes]:
    registry = SchemaRegistryClient.new_client({"url": f"mock://guards-{uuid.uuid4().hex}"})
    ser = AvroSerializer(registry, json.dumps(LINKED))
    de = AvroDeserializer(registry)
    frame = ser({"x": 1, "n": {"x": 2, "n": None}}, CTX)
    assert de(frame, CTX) == {"x": 1, "n": {"x": 2, "n": None}}
    return ser, de, frame


def test_a_panic_in_the_decoder_decodes_in_pure_python(native: Any) -> None:
    dec = compile_native_decoder(LINKED)
    assert isinstance(dec, native.AvroDecoder)
    native._arm_panic(1)
    assert dec(b"\x02\x02\x04\x00") == {"x": 1, "n": {"x": 2, "n": None}}


def test_a_panic_in_a_decoder_without_fallback_is_a_corrupt_payload_error(native: Any) -> None:
    import datetime

    from serdes.avro._native_decoder import lower

    nodes, root = lower(LINKED, None, False)
    dec = native.AvroDecoder(nodes, root, 10, 10, None, CorruptPayloadError, SchemaMismatchError,
                             datetime.timezone.utc)
    native._arm_panic(1)
    with pytest.raises(CorruptPayloadError, match="a bug in serdes"):
        dec(b"\x02\x02\x04\x00")
    assert dec(b"\x02\x02\x04\x00") == {"x": 1, "n": {"x": 2, "n": None}}  # one panic, then normal


def test_a_panic_in_the_encoder_encodes_in_pure_python(native: Any) -> None:
    enc = compile_native_encoder(LINKED, b"P")
    assert is_native_encoder(enc)
    want = enc({"x": 1, "n": None}, None)
    native._arm_panic(1)
    assert enc({"x": 1, "n": None}, None) == want


def test_a_panic_while_compiling_builds_the_pure_implementation(native: Any) -> None:
    native._arm_panic(1)
    dec = compile_native_decoder(LINKED)
    assert not isinstance(dec, native.AvroDecoder)
    assert dec(b"\x02\x00", 0, None) == {"x": 1, "n": None}
    native._arm_panic(1)
    enc = compile_native_encoder(LINKED, b"")
    assert not is_native_encoder(enc)
    assert enc({"x": 1, "n": None}, None) == b"\x02\x00"
    # called directly, the native constructors raise a serdes error, not PanicException
    import datetime

    native._arm_panic(1)
    with pytest.raises(SchemaMismatchError, match="a bug in serdes"):
        native.AvroDecoder([(0, (0,))], 0, 10, 10, None, CorruptPayloadError, SchemaMismatchError,
                           datetime.timezone.utc)


@pytest.mark.parametrize("n", [1, 2])
def test_a_panic_in_the_dispatchers_takes_the_python_path(native: Any, n: int) -> None:
    # n=1: the dispatcher's own guard; n=2: the Avro loop's, reached from the dispatcher
    ser, de, frame = _frame_and_serdes()
    native._arm_panic(n)
    assert de(frame, CTX) == {"x": 1, "n": {"x": 2, "n": None}}
    native._arm_panic(n)
    assert ser({"x": 1, "n": {"x": 2, "n": None}}, CTX) == frame
    native._arm_panic(n)
    values, errors = de._dispatch.batch([frame, frame], CTX)
    assert values == [{"x": 1, "n": {"x": 2, "n": None}}] * 2 and errors == []


def test_a_real_panic_path_of_the_dispatcher_takes_the_python_path(native: Any) -> None:
    # a step type whose instances are not tuples reaches the dispatcher's unreachable!() (the real
    # ParseStep is a tuple): the panic is caught and the slow path decodes
    frame = b"\x00\x00\x00\x00\x07" + b"payload"
    calls: List[Any] = []

    def slow(data: Any, ctx: Any) -> str:
        calls.append(data)
        return "slow"

    d = native.Dispatcher({frame[:5]: {}}, {}, dict, b"", slow, lambda *a: None)
    assert d(frame, None) == "slow" and calls == [frame]


# -- misbehaving Python code during encoding ------------------------------------------------------


def _outcome(fn: Callable[[], Any]) -> Tuple[str, Any]:
    try:
        return "ok", fn()
    except SerdesError as e:
        return type(e).__name__, None


class _DeletingDict(dict):  # type: ignore[type-arg]
    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        self.clear()
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        value = dict.get(self, key, default)
        self.clear()
        return value


class _RaisingGetattr:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


def _serdes(impl: Implementation, schema: Any) -> Tuple[AvroSerializer, AvroDeserializer]:
    registry = SchemaRegistryClient.new_client({"url": f"mock://guards-{uuid.uuid4().hex}"})
    return AvroSerializer(registry, json.dumps(schema)), AvroDeserializer(registry)


def test_a_dict_subclass_whose_getitem_deletes_keys(implementation: Implementation) -> None:
    ser, de = _serdes(implementation, LINKED)
    got = _outcome(lambda: ser(_DeletingDict(x=1, n=_DeletingDict(x=2, n=None)), CTX))
    assert got[0] in ("ok", "ValidationError")
    if got[0] == "ok":
        assert de(got[1], CTX) in ({"x": 1, "n": {"x": 2, "n": None}}, {"x": 1, "n": None})


def test_a_value_whose_getattr_raises(implementation: Implementation) -> None:
    ser, _ = _serdes(implementation, LINKED)
    assert _outcome(lambda: ser({"x": _RaisingGetattr(), "n": None}, CTX))[0] == "ValidationError"
    assert _outcome(lambda: ser({"x": 1, "n": _RaisingGetattr()}, CTX))[0] == "ValidationError"
    assert _outcome(lambda: ser(_RaisingGetattr(), CTX))[0] == "ValidationError"


def test_a_context_whose_getattr_raises(implementation: Implementation) -> None:
    ser, de = _serdes(implementation, LINKED)
    frame = ser({"x": 1, "n": None}, CTX)
    with pytest.raises(RuntimeError, match="no "):  # the caller's own exception, on both paths
        ser({"x": 1, "n": None}, _RaisingGetattr())
    with pytest.raises(RuntimeError, match="no "):
        de(frame, _RaisingGetattr())


_HOSTILE = "serdes-guards-hostile"
_SCHEMA_WITH_HOOK = {
    "type": "record", "name": "H", "fields": [
        {"name": "items", "type": {"type": "array", "items": {"type": "string", "logicalType": _HOSTILE}}},
        {"name": "tags", "type": {"type": "map", "values": {"type": "string", "logicalType": _HOSTILE}}},
    ],
}


@pytest.fixture
def hostile_prepare() -> Iterator[List[Callable[[Any], None]]]:
    """A registered prepare function for the logical type ``_HOSTILE`` that runs the actions put
    in the returned list (once each) on the value it gets, then returns it as a str."""
    actions: List[Callable[[Any], None]] = []

    def prepare(value: Any, schema: Any) -> Any:
        while actions:
            actions.pop()(value)
        return str(value)

    key = f"string-{_HOSTILE}"
    LOGICAL_WRITERS[key] = prepare
    try:
        yield actions
    finally:
        del LOGICAL_WRITERS[key]


def _decodes(frame: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(frame[5:]), fastavro.parse_schema(_SCHEMA_WITH_HOOK))


@pytest.mark.parametrize("mutation", ["free-list-items", "grow-list", "free-map-values", "grow-map"])
def test_prepare_functions_that_free_or_mutate_what_is_being_encoded(
    implementation: Implementation, hostile_prepare: List[Callable[[Any], None]], mutation: str,
) -> None:
    ser, _ = _serdes(implementation, _SCHEMA_WITH_HOOK)
    if implementation.name == "native":  # the native loop calls the prepare function itself
        assert is_native_encoder(compile_native_encoder(_SCHEMA_WITH_HOOK))
    record: Any = {"items": [f"i{i}" * 50 for i in range(20)], "tags": {f"k{i}": f"v{i}" * 50 for i in range(20)}}
    items, tags = record["items"], record["tags"]
    act = {
        # the list and dict hold the only references to their items: clearing them frees the rest
        "free-list-items": lambda v: items.clear(),
        "grow-list": lambda v: items.append("late"),
        "free-map-values": lambda v: tags.clear(),
        "grow-map": lambda v: tags.update({f"new{i}": "x" for i in range(100)}),
    }[mutation]
    hostile_prepare.append(act)
    del record
    got = _outcome(lambda: ser({"items": items, "tags": tags}, CTX))
    assert got[0] in ("ok", "ValidationError"), got
    if got[0] == "ok":
        out = _decodes(got[1])  # well-formed Avro of the schema, whatever the mutation did
        assert set(out) == {"items", "tags"}


def test_misbehaving_decode_callbacks_are_typed_errors(implementation: Implementation) -> None:
    registry = SchemaRegistryClient.new_client({"url": f"mock://guards-{uuid.uuid4().hex}"})
    ser = AvroSerializer(registry, json.dumps(LINKED))
    frame = ser({"x": 1, "n": None}, CTX)

    def from_dict(value: Any, ctx: Any) -> Any:
        raise RuntimeError("from_dict refuses")

    de = AvroDeserializer(registry, from_dict=from_dict)
    with pytest.raises(SerdesError):
        de(frame, CTX)


_BIG_VALUE_CHILD = """
import contextlib
from serdes import _native
from serdes.avro._native_encoder import compile_native_encoder, is_native_encoder
with _native.forced_pure() if {impl!r} == "pure" else contextlib.nullcontext():
    enc = compile_native_encoder({{"type": "record", "name": "B", "fields": [{{"name": "b", "type": "bytes"}}]}}, b"")
assert is_native_encoder(enc) == ({impl!r} == "native")
big = bytes(700 << 20)  # fits the address space once, not twice
report(lambda: len(enc({{"b": big}}, None)))
"""


def test_a_value_too_large_to_encode_is_a_memory_error(implementation: Implementation) -> None:
    # the native buffer grows with try_reserve: a failed allocation is a MemoryError, as the pure
    # encoder's bytearray raises, never Rust's abort
    out = run_bounded(CHILD_PRELUDE + _BIG_VALUE_CHILD.format(impl=implementation.name), memory=1536 << 20)
    assert out["returncode"] == 0 and out["error"] == "MemoryError", out
