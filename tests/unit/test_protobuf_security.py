"""Protobuf registry schemas and payloads as hostile input (docs/security.md, issue 8).

Reference names never become file paths, protoc's crashes stay in its child process, nesting and
the reference graph are bounded. Bombs run in a child under RLIMIT_AS and a timeout
(tests/support/isolated.py); the tests assert the error class and the limit, never a duration.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serdes import SchemaMismatchError
from serdes.protobuf import ProtobufDeserializer
from serdes.protobuf._names import check_import_name
from serdes.protobuf._schemas import build_pool

from tests.support.isolated import CHILD_PRELUDE, run_bounded

CTX = SerializationContext("t", MessageField.VALUE)
LEAF = 'syntax = "proto3";\npackage leaf;\nmessage Leaf { string s = 1; }\n'


@pytest.fixture
def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://pbsec-{uuid.uuid4().hex}"})


def _root_importing(name: str) -> str:
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'syntax = "proto3";\npackage root;\nimport "{quoted}";\nmessage Root {{ leaf.Leaf l = 1; }}\n'


def _frame(sid: int) -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + b"\x00"


def _files_under(path: Path) -> set:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# -- reference names ------------------------------------------------------------------------------

SAFE_NAMES = ["leaf.proto", "a/b/leaf.proto", "com.example/v1/leaf-types_2.proto", "ünïcode/leaf.proto"]


@pytest.mark.parametrize("name", SAFE_NAMES)
def test_plain_relative_names_are_accepted(name):
    assert check_import_name(name) == name


def hostile_names(target: Path):
    """Names that, used as a path under any temporary directory, would land in ``target``."""
    rel = str(target).lstrip("/")
    return [
        str(target / "abs.pth"),                       # absolute
        "../" * 40 + rel + "/dotdot.pth",              # traversal out of any tmpdir
        "a/../../" + "../" * 40 + rel + "/mid.pth",    # traversal in the middle
        "..\\..\\" + rel.replace("/", "\\") + "\\bs.pth",  # backslashes
        "ok.proto\x00" + str(target / "nul.pth"),      # NUL
        "C:/windows/evil.pth",                         # drive
        "a//b.proto", "./a.proto", "a/./b.proto", "", "a/", "x\n.proto", "x" * 2000,
    ]


def _register_with_ref(client, ref_name: str) -> int:
    client.register_schema("leaf", Schema(LEAF, "PROTOBUF"))
    return client.register_schema("root-value", Schema(_root_importing(ref_name), "PROTOBUF", [SchemaReference(ref_name, "leaf", 1)]))


def test_hostile_reference_names_are_typed_errors_and_write_nothing(client, tmp_path):
    pytest.importorskip("grpc_tools")
    target = tmp_path / "target"
    target.mkdir()
    for name in hostile_names(target):
        c = SchemaRegistryClient.new_client({"url": f"mock://pbsec-{uuid.uuid4().hex}"})
        sid = _register_with_ref(c, name)
        with pytest.raises(SchemaMismatchError) as info:
            ProtobufDeserializer(None, None, c)(_frame(sid), CTX)
        assert "refusing it" in str(info.value) and repr(name)[:30] in str(info.value), (name, info.value)
    assert _files_under(target) == set()  # the marker check: nothing was written there


def test_a_safe_reference_name_still_resolves_from_proto_text(client):
    pytest.importorskip("grpc_tools")
    sid = _register_with_ref(client, "deep/dir/leaf.proto")
    msg = ProtobufDeserializer(None, None, client)(_frame(sid) + b"\x0a\x03\x0a\x01x", CTX)
    assert msg.DESCRIPTOR.full_name == "root.Root" and msg.l.s == "x"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.builds(lambda a, b: f"{a}/../{b}", st.text(min_size=0, max_size=8), st.text(min_size=0, max_size=8)),
        st.builds(lambda a: "/" + a, st.text(max_size=20)),
        st.builds(lambda a, b: a + "\\" + b, st.text(max_size=8), st.text(max_size=8)),
        st.builds(lambda a, b: a + "\x00" + b, st.text(max_size=8), st.text(max_size=8)),
        st.builds(lambda a, c: a + c, st.text(max_size=8), st.characters(max_codepoint=0x1F)),
    )
)
def test_hypothesis_hostile_names_are_refused_by_name(name):
    with pytest.raises(SchemaMismatchError, match="refusing it"):
        check_import_name(name)


def test_hostile_name_is_refused_before_the_registry_is_asked(client):
    calls = []

    class Spy:
        def get_version(self, *a, **k):  # pragma: no cover - must not be called
            calls.append(a)
            raise AssertionError("fetched")

    schema = Schema(_root_importing("../x.proto"), "PROTOBUF", [SchemaReference("../x.proto", "leaf", 1)])
    with pytest.raises(SchemaMismatchError, match=r"'\.\./x\.proto'"):
        build_pool(Spy(), schema)
    assert calls == []


def test_import_paths_in_proto_text_are_checked(client, tmp_path):
    pytest.importorskip("grpc_tools")
    sid = client.register_schema("r-value", Schema(_root_importing(str(tmp_path / "x.proto")), "PROTOBUF"))
    with pytest.raises(SchemaMismatchError, match="absolute path"):
        ProtobufDeserializer(None, None, client)(_frame(sid), CTX)


# -- reference graph --------------------------------------------------------------------------------


def _chain(client, n: int) -> int:
    """leaf0 <- leaf1 <- ... <- root: a reference chain n deep (each file imports the previous)."""
    client.register_schema("c0", Schema('syntax = "proto3";\npackage c0;\nmessage M { int32 x = 1; }\n', "PROTOBUF"))
    for i in range(1, n):
        text = f'syntax = "proto3";\npackage c{i};\nimport "c{i - 1}.proto";\nmessage M {{ c{i - 1}.M m = 1; }}\n'
        client.register_schema(f"c{i}", Schema(text, "PROTOBUF", [SchemaReference(f"c{i - 1}.proto", f"c{i - 1}", 1)]))
    root = f'syntax = "proto3";\npackage r;\nimport "c{n - 1}.proto";\nmessage R {{ c{n - 1}.M m = 1; }}\n'
    return client.register_schema("r-value", Schema(root, "PROTOBUF", [SchemaReference(f"c{n - 1}.proto", f"c{n - 1}", 1)]))


def test_reference_chain_deeper_than_the_limit_is_refused(client):
    pytest.importorskip("grpc_tools")
    sid = _chain(client, 4)
    ok = ProtobufDeserializer(None, {"serdes.max.schema.depth": 4}, client)(_frame(sid), CTX)
    assert ok.DESCRIPTOR.full_name == "r.R"
    with pytest.raises(SchemaMismatchError, match=r"serdes\.max\.schema\.depth=3"):
        ProtobufDeserializer(None, {"serdes.max.schema.depth": 3}, client)(_frame(sid), CTX)


def test_reference_count_is_bounded(client):
    leafs = []
    for i in range(5):
        fdp = descriptor_pb2.FileDescriptorProto(name=f"f{i}.proto", package=f"f{i}", syntax="proto3")
        fdp.message_type.add(name="M")
        import base64

        client.register_schema(f"f{i}", Schema(base64.b64encode(fdp.SerializeToString()).decode(), "PROTOBUF"))
        leafs.append(SchemaReference(f"f{i}.proto", f"f{i}", 1))
    root = descriptor_pb2.FileDescriptorProto(name="root.proto", package="r", syntax="proto3", dependency=[r.name for r in leafs])
    root.message_type.add(name="R")
    import base64

    sid = client.register_schema("r-value", Schema(base64.b64encode(root.SerializeToString()).decode(), "PROTOBUF", leafs))
    assert ProtobufDeserializer(None, {"serdes.max.references": 5}, client)(_frame(sid), CTX).DESCRIPTOR.full_name == "r.R"
    with pytest.raises(SchemaMismatchError, match=r"serdes\.max\.references=4"):
        ProtobufDeserializer(None, {"serdes.max.references": 4}, client)(_frame(sid), CTX)


def test_a_reference_cycle_is_followed_once():
    a = Schema("", "PROTOBUF", [SchemaReference("a.proto", "a", 1)])
    fetched = []

    class Cycle:
        def get_version(self, subject, version, *rest):
            fetched.append(subject)
            other = "a" if subject == "b" else "b"
            from confluent_kafka.schema_registry import RegisteredSchema

            return RegisteredSchema(subject, 1, 1, None, Schema("", "PROTOBUF", [SchemaReference(f"{other}.proto", other, 1)]))

    pool, fd, _ = build_pool(Cycle(), a)  # empty files; the point is that the walk ends
    assert fetched == ["a", "b"] and fd.name == "default.proto"


# -- bombs in a child -----------------------------------------------------------------------------

_RECURSIVE_SETUP = CHILD_PRELUDE + '''
import base64, uuid
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from serdes.protobuf import ProtobufDeserializer
fdp = descriptor_pb2.FileDescriptorProto(name="r.proto", package="p", syntax="proto3")
fdp.message_type.add(name="N").field.add(name="c", number=1, type=11, type_name=".p.N", label=1)
client = SchemaRegistryClient.new_client({"url": "mock://deep-" + uuid.uuid4().hex})
sid = client.register_schema("t-value", Schema(base64.b64encode(fdp.SerializeToString()).decode(), "PROTOBUF"))
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        if n: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def nested(depth):
    b = b""
    for _ in range(depth):
        b = b"\\x0a" + varint(len(b)) + b
    return b
frame = b"\\x00" + sid.to_bytes(4, "big") + b"\\x00"
ctx = SerializationContext("t", MessageField.VALUE)
'''


@pytest.mark.parametrize("output", ["message", "dict"])
@pytest.mark.parametrize("depth", [101, 30_000])
def test_deep_recursive_message_is_a_corrupt_payload(depth, output):
    out = run_bounded(_RECURSIVE_SETUP + f'''
de = ProtobufDeserializer(None, None, client, output={output!r})
de(frame + nested(100), ctx)  # the runtime's limit itself decodes
report(lambda: de(frame + nested({depth}), ctx))
''')
    assert out["returncode"] == 0
    assert out["error"] == "CorruptPayloadError", out
    assert "recursion limit of 100" in out["message"]


def test_protoc_crash_on_hostile_proto_text_is_a_schema_error():
    pytest.importorskip("grpc_tools")
    # protoc overflows its stack on deeply nested option aggregates (a segfault in-process)
    out = run_bounded(CHILD_PRELUDE + '''
import uuid
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from serdes.protobuf import ProtobufDeserializer
text = ('syntax = "proto2";\\nimport "google/protobuf/descriptor.proto";\\npackage b;\\n'
        'message O { optional O o = 1; }\\n'
        'extend google.protobuf.MessageOptions { optional O oo = 50000; }\\n'
        'message M { option (oo) = ' + '{o:' * 50000 + '}' * 50000 + '; }\\n')
client = SchemaRegistryClient.new_client({"url": "mock://protoc-" + uuid.uuid4().hex})
sid = client.register_schema("b-value", Schema(text, "PROTOBUF"))
de = ProtobufDeserializer(None, None, client)
report(lambda: de(b"\\x00" + sid.to_bytes(4, "big") + b"\\x00", SerializationContext("b", MessageField.VALUE)))
''')
    assert out["returncode"] == 0  # the consumer process survived
    assert out["error"] == "SchemaMismatchError", out
    assert "protoc could not compile" in out["message"]
