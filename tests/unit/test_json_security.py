"""JSON Schema registry schemas and payloads as hostile input (docs/security.md, issue 8), and the
validation verdicts where serdes deliberately differs from confluent-kafka (issue 9 item 7).

``$ref`` never leaves the schema and its registry references (a loopback server that must see no
request, a FIFO that must not be opened), values are depth-bounded before validation, the Python
fallback's regexes run within a time budget. Bombs run in a child under RLIMIT_AS and a timeout
(tests/support/isolated.py); the tests assert the error class and the limit, never a duration.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import uuid

import orjson
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import serdes
from serdes import ConfluentVersionError, SchemaMismatchError, ValidationError
from serdes.json import JSONDeserializer, JSONSerializer, compile_validator
from serdes.json._depth import exceeds_depth, schema_needs_depth_check
from serdes._serde import EncodeStep
from serdes.json._pyfallback import is_multiple_of
from serdes._limits import Limits

from tests.support.confluent_releases import at_least, confluent_version, needs
from tests.support.isolated import CHILD_PRELUDE, run_bounded
from tests.support.json_samples import COMPLEX_DOC, COMPLEX_SCHEMA

CTX = SerializationContext("t", MessageField.VALUE)
RECURSIVE = {"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}}}


def new_registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://jsonsec-{uuid.uuid4().hex}"})


def nested(depth: int) -> dict:
    v: dict = {}
    for _ in range(depth - 1):
        v = {"c": v}
    return v


# -- $ref: no requests, no files ----------------------------------------------------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list = []

    def do_GET(self):  # pragma: no cover - must never run
        type(self).requests.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def loopback():
    _Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _ref_schemas(url: str):
    return [
        {"$ref": f"{url}/root.json"},
        {"type": "object", "properties": {"a": {"$ref": f"{url}/a.json#/x"}}},
        {"$id": f"{url}/base/root.json", "properties": {"a": {"$ref": "rel.json"}}},  # relative to $id
        # jsonschema-rs cannot compile this pattern: the Python fallback must not fetch either
        {"type": "object", "properties": {"a": {"$ref": f"{url}/py.json"}, "s": {"pattern": "^ab\\Z"}}},
    ]


@pytest.mark.parametrize("conf", [None, pytest.param({"serdes.allow.remote.refs": True}, marks=needs("2.16", "serdes.allow.remote.refs"))],
                         ids=["default", "opted-in"])
def test_http_refs_make_no_request(loopback, conf):
    registry = new_registry()
    for i, schema in enumerate(_ref_schemas(loopback)):
        with pytest.raises(SchemaMismatchError, match=r"\$ref|127\.0\.0\.1|non-public"):
            JSONSerializer(json.dumps(schema), registry, conf=conf)({"a": "x", "s": "ab"}, CTX)
        sid = registry.register_schema(f"r{i}-value", Schema(json.dumps(schema), "JSON"))
        with pytest.raises(SchemaMismatchError):
            JSONDeserializer(None, schema_registry_client=registry, conf=conf)(
                b"\x00" + sid.to_bytes(4, "big") + b'{"a": "x"}', CTX
            )
    # opted in, serdes fetches like confluent-kafka: public addresses only, so loopback is refused too
    assert _Recorder.requests == []


@pytest.mark.skipif(at_least("2.16"), reason="the refusal of releases before 2.16; the oldest leg of scripts/test-matrix.sh runs it")
def test_remote_refs_opt_in_needs_confluent_kafka_2_16():
    # the opt-in fetches through confluent-kafka's public-address guard (2.16): on an older release
    # the serde is not built, rather than failing at the first remote $ref
    conf = {"serdes.allow.remote.refs": True}
    registry = new_registry()
    for make in (lambda: JSONSerializer('{"type": "object"}', registry, conf=conf),
                 lambda: JSONDeserializer(None, schema_registry_client=registry, conf=conf)):
        with pytest.raises(ConfluentVersionError) as info:
            make()
        assert (info.value.feature, info.value.required) == ("serdes.allow.remote.refs", "2.16")
        assert confluent_version() in str(info.value)


def test_default_refusal_names_the_target_and_the_opt_in(loopback):
    with pytest.raises(SchemaMismatchError, match=r"serdes\.allow\.remote\.refs") as info:
        compile_validator({"$ref": f"{loopback}/x.json"})
    assert f"{loopback}/x.json" in str(info.value)
    assert _Recorder.requests == []


def test_file_refs_are_never_opened(tmp_path):
    # A FIFO: opening it for reading blocks until a writer comes, so a validator that tried to read
    # it would hang the child (and the test fail on its timeout) instead of returning an error.
    fifo = tmp_path / "schema.json"
    os.mkfifo(fifo)
    # the opt-in needs confluent-kafka 2.16 (test_remote_refs_opt_in_needs_confluent_kafka_2_16)
    confs = [None] + ([{"serdes.allow.remote.refs": True}] if at_least("2.16") else [])
    out = run_bounded(CHILD_PRELUDE + f'''
import json
from serdes.json import JSONSerializer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
reg = SchemaRegistryClient.new_client({{"url": "mock://fifo"}})
results = []
for conf in {confs!r}:
    for ref in ({str(fifo.as_uri())!r}, {str(fifo.as_uri())!r} + "#/x"):
        try:
            JSONSerializer(json.dumps({{"$ref": ref}}), reg, conf=conf)("x", SerializationContext("t", MessageField.VALUE))
            results.append("accepted")
        except Exception as e:
            results.append(type(e).__name__ + ": " + str(e)[:200])
print(json.dumps({{"error": None, "results": results}}))
''', timeout=120)
    assert out["returncode"] == 0
    assert len(out["results"]) == 2 * len(confs)
    assert all(r.startswith("RemoteRefRefused") and "file://" in r for r in out["results"]), out["results"]


@pytest.mark.parametrize("ref_name", ["addr.json", "{url}/addr.json"], ids=["relative", "url-named"])
def test_registry_references_still_resolve(loopback, ref_name):
    # a reference named like a URL (confluent-kafka's docs use such names) resolves from the registry
    ref_name = ref_name.format(url=loopback)
    registry = new_registry()
    registry.register_schema("addr", Schema(json.dumps({"type": "object", "required": ["city"]}), "JSON"))
    root = Schema(json.dumps({"type": "object", "properties": {"a": {"$ref": ref_name}}}), "JSON",
                  [SchemaReference(ref_name, "addr", 1)])
    sid = registry.register_schema("root-value", root)
    de = JSONDeserializer(None, schema_registry_client=registry)
    frame = b"\x00" + sid.to_bytes(4, "big")
    assert de(frame + b'{"a": {"city": "Paris"}}', CTX) == {"a": {"city": "Paris"}}
    with pytest.raises(ValidationError):
        de(frame + b'{"a": {}}', CTX)
    assert _Recorder.requests == []


_SCHEMES = st.sampled_from(["http://127.0.0.1:{port}/", "https://127.0.0.1:{port}/", "file:///", "ftp://127.0.0.1/",
                            "urn:x:", "jar:file:///", "//127.0.0.1:{port}/", "data:application/json,", "gopher://h/"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=_SCHEMES, path=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#%\\\"<>^`{|}"), max_size=20),
       opt_in=st.booleans(), nested=st.booleans())
def test_hypothesis_external_ref_targets_are_refused(loopback, scheme, path, opt_in, nested):
    port = loopback.rsplit(":", 1)[1]
    target = scheme.format(port=port) + path
    schema = {"properties": {"a": {"$ref": target}}} if nested else {"$ref": target}
    if nested and opt_in:
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    with pytest.raises(SchemaMismatchError):  # at compile time, or (Python fallback) when reached
        compile_validator(schema, limits=Limits(allow_remote_refs=opt_in)).validate({"a": 1})
    assert _Recorder.requests == []


def test_unknown_meta_schema_is_not_fetched(loopback):
    v = compile_validator({"$schema": f"{loopback}/meta", "type": "string"})
    assert v.backend == "jsonschema-rs" and v.is_valid("x") and not v.is_valid(1)
    assert _Recorder.requests == []


# -- depth -----------------------------------------------------------------------------------------


def test_exceeds_depth_counts_containers():
    assert not exceeds_depth(1, 0) and not exceeds_depth({}, 1) and exceeds_depth({}, 0)
    assert not exceeds_depth(nested(5), 5) and exceeds_depth(nested(6), 5)
    assert exceeds_depth([[[[]]]], 3) and not exceeds_depth([[[]], {"a": [1]}], 3)
    cyclic: list = []
    cyclic.append(cyclic)
    assert exceeds_depth(cyclic, 100)


@pytest.mark.parametrize(
    "schema, refs, expected",
    [
        (RECURSIVE, {}, True),
        (COMPLEX_SCHEMA, {}, False),  # $ref to definitions, no cycle: no per-value walk
        ({"$ref": "a.json"}, {"a.json": {"properties": {"x": {"$ref": "a.json"}}}}, True),
        ({"$ref": "a.json#/$defs/q"}, {"a.json": {"$defs": {"q": {}}}}, False),
        ({"$ref": "#anchor"}, {}, True),  # not followed: assumed recursive
        ({"$dynamicRef": "#meta"}, {}, True),
        ({"type": "string"}, {}, False),
    ],
)
def test_which_schemas_need_the_depth_check(schema, refs, expected):
    assert schema_needs_depth_check(schema, refs, 100) is expected


def test_benchmark_schema_keeps_the_inline_fast_path():
    registry = new_registry()
    ser = JSONSerializer(json.dumps(COMPLEX_SCHEMA), registry)
    data = ser(COMPLEX_DOC, CTX)
    de = JSONDeserializer(None, schema_registry_client=registry)
    de(data, CTX)
    assert isinstance(ser._value_encoders[CTX.topic], EncodeStep) and de._steps
    assert [v.max_depth for v in ser._validators.values()] == [None]


@pytest.mark.parametrize("conf", [None, {"serdes.max.depth": 5}])
def test_depth_limit_is_configurable_on_both_paths(conf):
    limit = 5 if conf else 100
    registry = new_registry()
    ser = JSONSerializer(json.dumps(RECURSIVE), registry, conf=conf)
    de = JSONDeserializer(None, schema_registry_client=registry, conf=conf)
    ok = ser(nested(limit), CTX)
    assert de(ok, CTX) == nested(limit)
    for _ in range(2):  # first call (confluent-kafka's path) and later calls
        with pytest.raises(ValidationError, match=rf"serdes\.max\.depth={limit}"):
            ser(nested(limit + 1), CTX)
    too_deep = ok[:5] + orjson.dumps(nested(limit + 1))
    for _ in range(2):
        with pytest.raises(ValidationError, match=rf"serdes\.max\.depth={limit}") as info:
            de(too_deep, CTX)
        assert info.value.location.topic == "t"


_DEEP_CHILD = '''
import json, threading, uuid
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.json import JSONDeserializer, JSONSerializer
RECURSIVE = {recursive!r}
reg = SchemaRegistryClient.new_client({{"url": "mock://deep-" + uuid.uuid4().hex}})
ctx = SerializationContext("t", MessageField.VALUE)
ser = JSONSerializer(json.dumps(RECURSIVE), reg)
de = JSONDeserializer(None, schema_registry_client=reg)
frame = ser({{}}, ctx)[:5]
def nested(d):
    v = {{}}
    for _ in range(d - 1):
        v = {{"c": v}}
    return v
def text(d):  # built as text: orjson refuses to encode more than 255 levels
    return ("{{\\"c\\":" * (d - 1) + "{{}}" + "}}" * (d - 1)).encode()
'''


@pytest.mark.parametrize("path", ["serializer", "serializer-later", "deserializer", "deserializer-1000-small-stack"])
def test_deep_value_under_recursive_schema_is_typed_not_a_crash(path):
    calls = {
        # ~30,000 levels: jsonschema-rs overflowed the native stack here (a segfault)
        "serializer": "report(lambda: ser(nested(30_000), ctx))",
        "serializer-later": "ser(nested(3), ctx)\nreport(lambda: ser(nested(30_000), ctx))",
        # orjson refuses more than 1024 levels: a CorruptPayloadError
        "deserializer": "report(lambda: de(frame + text(30_000), ctx))",
        # 1000 levels parse, and overflowed a 256 KiB thread stack inside jsonschema-rs
        "deserializer-1000-small-stack": (
            "threading.stack_size(256 * 1024)\n"
            "t = threading.Thread(target=lambda: report(lambda: de(frame + text(1000), ctx)))\n"
            "t.start(); t.join()"
        ),
    }
    out = run_bounded(CHILD_PRELUDE + _DEEP_CHILD.format(recursive=RECURSIVE) + calls[path])
    assert out["returncode"] == 0, out
    if path == "deserializer":
        assert out["error"] == "CorruptPayloadError", out
    else:
        assert out["error"] == "ValidationError", out
        assert "serdes.max.depth=100" in out["message"]


@pytest.mark.parametrize("depth", [150, 1000])
def test_deeply_nested_schema_is_typed_not_a_crash(depth):
    # jsonschema-rs refuses deep schemas itself ("Recursion limit reached"); the Python fallback's
    # meta-schema check then overflows Python's stack: a SchemaMismatchError, not a RecursionError
    out = run_bounded(CHILD_PRELUDE + f'''
import orjson
from serdes.json import compile_validator
schema = orjson.loads('{{"not":' * {depth} + '{{}}' + '}}' * {depth})
report(lambda: compile_validator(schema).validate("x"))
''')
    assert out["returncode"] == 0
    if depth == 150:  # even depth: "not not ... {}" accepts everything
        assert out["error"] is None, out
    else:
        assert out["error"] == "SchemaMismatchError", out


# -- regular expressions -----------------------------------------------------------------------------

_REDOS_CHILD = '''
import json, uuid
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.json import JSONDeserializer, JSONSerializer
reg = SchemaRegistryClient.new_client({{"url": "mock://redos-" + uuid.uuid4().hex}})
ctx = SerializationContext("t", MessageField.VALUE)
schema = json.dumps({schema!r})
conf = {conf!r}
ser = JSONSerializer(schema, reg, conf=conf)
de = JSONDeserializer(None, schema_registry_client=reg, conf=conf)
frame = ser({good!r}, ctx)[:5]
assert [v.backend for v in ser._validators.values()] == ["jsonschema"]
report(lambda: {call})
'''

# jsonschema-rs rejects \\Z (not ECMA-262): these schemas use the Python fallback, whose regexes
# ran with Python's backtracking `re` (over a minute for 41 characters); now within serdes.regex.timeout
REDOS_CASES = [
    ({"type": "string", "pattern": "^(a|aa)+\\Z"}, "a", "a" * 40 + "!"),
    ({"type": "object", "patternProperties": {"^(a|aa)+\\Z": {"type": "string"}}}, {}, {"a" * 40 + "!": 1}),
    ({"type": "object", "properties": {"k": {"type": "string"}}, "patternProperties": {"^(a|aa)+\\Z": {}},
      "additionalProperties": False}, {}, {"a" * 40 + "!": 1}),
]


@pytest.mark.parametrize("side", ["deserializer", "serializer"])
@pytest.mark.parametrize("schema, good, bad", REDOS_CASES, ids=["pattern", "patternProperties", "additionalProperties"])
@pytest.mark.parametrize("conf", [None, {"serdes.regex.timeout": 0.05}])
def test_catastrophic_pattern_in_the_python_fallback_is_bounded(schema, good, bad, side, conf):
    call = "ser(%r, ctx)" % (bad,) if side == "serializer" else "de(frame + json.dumps(%r).encode(), ctx)" % (bad,)
    out = run_bounded(CHILD_PRELUDE + _REDOS_CHILD.format(schema=schema, conf=conf, good=good, call=call))
    assert out["returncode"] == 0
    assert out["error"] == "ValidationError", out
    timeout = conf["serdes.regex.timeout"] if conf else 0.1
    assert f"serdes.regex.timeout={timeout:g} s" in out["message"]


def test_issue_pattern_gives_a_verdict():
    # the issue's ^(a+)+\\Z with a 34-byte record: the regex module answers (no match) within budget
    schema = {"type": "string", "pattern": "^(a+)+\\Z"}
    out = run_bounded(CHILD_PRELUDE + _REDOS_CHILD.format(schema=schema, conf=None, good="aaa", call="de(frame + b'\"' + b'a' * 32 + b'!\"', ctx)"))
    assert out["error"] == "ValidationError" and ("does not match" in out["message"] or "serdes.regex.timeout" in out["message"])


def test_pattern_too_large_for_the_regex_module_is_a_schema_error():
    # regex unrolls counted repeats: compiling this took gigabytes (MemoryError under 2 GiB)
    out = run_bounded(CHILD_PRELUDE + '''
from serdes.json import compile_validator
report(lambda: compile_validator({"properties": {"a": {"pattern": "(?:(?:a{1000}){1000}){1000}"}}}))
''')
    assert out["error"] == "SchemaMismatchError" and "too large to compile" in out["message"], out


def test_python_fallback_refuses_unevaluated_properties_with_patterns():
    with pytest.raises(SchemaMismatchError, match="unevaluatedProperties"):
        compile_validator({"patternProperties": {"^a\\Z": {}}, "unevaluatedProperties": False})


# -- verdicts: JSON Schema (ECMA-262 regex, decimal numbers) vs confluent-kafka ------------------------

# (schema, value, the specification's verdict). confluent-kafka's jsonschema decides multipleOf by
# float division and runs patterns with Python's re (\\d and \\w match non-ASCII digits/letters, $
# matches before a trailing newline); ECMA-262 \\d is [0-9], \\w is [A-Za-z0-9_], $ is the end of
# input. serdes follows the specification; each row is a documented difference (docs/json.md).
VERDICTS = [
    pytest.param({"type": "number", "multipleOf": 0.01}, 0.07, True, id="multipleOf-0.07/0.01"),
    pytest.param({"type": "number", "multipleOf": 0.01}, 19.99, True, id="multipleOf-19.99/0.01"),
    pytest.param({"type": "number", "multipleOf": 0.1}, 0.3, True, id="multipleOf-0.3/0.1"),
    pytest.param({"type": "string", "pattern": "^\\d+$"}, "\u0661\u0662\u0663", False, id="d-arabic-indic-digits"),
    pytest.param({"type": "string", "pattern": "^\\w+$"}, "caf\u00e9", False, id="w-non-ascii-letter"),
    pytest.param({"type": "string", "pattern": "^\\D$"}, "\u0661", True, id="D-non-ascii-digit"),
    pytest.param({"type": "string", "pattern": "^abc$"}, "abc\n", False, id="dollar-trailing-newline"),
]


@pytest.mark.parametrize("schema, value, spec", VERDICTS)
def test_verdicts_follow_the_specification_not_confluent_kafka(schema, value, spec):
    registry = new_registry()
    ours = JSONSerializer(json.dumps(schema), registry)
    theirs = CJSONSerializer(json.dumps(schema), registry)

    def accepts(ser) -> bool:
        try:
            ser(value, CTX)
            return True
        except serdes.ValidationError:
            return False
        except Exception as e:  # confluent-kafka's error
            assert "jsonschema" in type(e).__module__ or "SerializationError" in type(e).__name__, e
            return False

    for _ in range(2):  # first and later calls agree
        assert accepts(ours) is spec
    assert accepts(theirs) is (not spec)  # the documented difference
    # the deserializer agrees with the serializer
    data = b"\x00" + registry.register_schema("v-value", Schema(json.dumps(schema), "JSON")).to_bytes(4, "big") + json.dumps(value).encode()
    de = JSONDeserializer(None, schema_registry_client=registry)
    if spec:
        assert de(data, CTX) == value
    else:
        with pytest.raises(ValidationError):
            de(data, CTX)


@pytest.mark.parametrize(
    "instance, divisor, expected",
    [(0.07, 0.01, True), (19.99, 0.01, True), (0.3, 0.1, True), (7, 2, False), (10, 5, True), (0.5, 0, False),
     (1e308, 0.01, True), (0.075, 0.01, False), (True, 1, False), (float("inf"), 1, False)],
)
def test_python_fallback_multiple_of_uses_decimal_values(instance, divisor, expected):
    assert is_multiple_of(instance, divisor) is expected
    v = compile_validator({"multipleOf": divisor} if divisor else {"multipleOf": 1}, backend="jsonschema")
    if divisor and not isinstance(instance, bool) and instance != float("inf"):
        assert v.check(instance) is expected
