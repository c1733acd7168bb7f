"""Which ``format`` serdes asks a registry for when it fetches a Protobuf writer schema.

Confluent Schema Registry serves ``format=serialized`` for every schema. Apicurio answers it with
HTTP 500 for a schema registered as base64 (what Python serializers register), and confluent-kafka's
client retries a 500 with back-off: seconds on every worker's first record. These tests run the
real ``SchemaRegistryClient`` against a small HTTP registry on 127.0.0.1 that answers each way,
and check the requests serdes makes.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from serdes_test import order_pb2

from serdes.protobuf import ProtobufDeserializer
from serdes.protobuf import _schemas

CTX = SerializationContext("t", MessageField.VALUE)

_FLAT_SOURCE = 'syntax = "proto3";\npackage p;\nmessage Flat { int64 id = 1; string name = 2; double price = 3; }\n'


def _flat_file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto.FromString(order_pb2.DESCRIPTOR.serialized_pb)
    solo = descriptor_pb2.FileDescriptorProto(name="solo.proto", package="p", syntax="proto3")
    solo.message_type.add().CopyFrom(next(m for m in fdp.message_type if m.name == "Flat"))
    del solo.message_type[0].field[3:]
    return solo


class FormatRegistry:
    """Schemas by id, served as Confluent or as Apicurio serves them.

    ``stored[id]`` is ``"base64"`` (registered as base64, as Python serializers do) or ``"text"``
    (``.proto`` source, as Java clients register). ``kind="apicurio"``: without a format the schema
    as stored; ``format=serialized`` of a base64 one is a 500, of a text one the raw bytes in a JSON
    string. ``kind="confluent"``: ``format=serialized`` is base64, no format is the text.
    """

    def __init__(self, kind: str, stored: Dict[int, str], prefix: str = "") -> None:
        self.kind, self.stored, self.prefix = kind, stored, prefix
        self.requests: List[Tuple[str, Optional[str]]] = []  # (path, format)
        raw = _flat_file().SerializeToString()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                fmt = parse_qs(url.query).get("format", [None])[0]
                path = url.path[len(owner.prefix):]
                owner.requests.append((path, fmt))
                sid = int(path.rsplit("/", 1)[1])
                status, body = 200, None
                shape = owner.stored[sid]
                if owner.kind == "apicurio":
                    if fmt == "serialized":
                        if shape == "base64":
                            status, body = 500, {"error_code": 500, "message": "Syntax error in Flat.proto:1:1"}
                        else:
                            body = {"schema": raw.decode("latin-1"), "schemaType": "PROTOBUF"}
                    else:
                        text = base64.b64encode(raw).decode() if shape == "base64" else _FLAT_SOURCE
                        body = {"schema": text, "schemaType": "PROTOBUF"}
                else:
                    text = base64.b64encode(raw).decode() if fmt == "serialized" else _FLAT_SOURCE
                    body = {"schema": text, "schemaType": "PROTOBUF"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def client(self) -> SchemaRegistryClient:
        host, port = self._server.server_address[:2]
        # no retries: a refused format=serialized costs one request, not seconds of back-off
        return SchemaRegistryClient({"url": f"http://{host}:{port}{self.prefix}", "max.retries": 0})

    def __enter__(self) -> "FormatRegistry":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    """Each test starts with no registry remembered as refusing ``format=serialized``."""
    monkeypatch.setattr(_schemas, "_SERIALIZED_REFUSED", set())


def _frame(sid: int) -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + b"\x00" + order_pb2.Flat(id=7, name="n", price=2.5).SerializeToString()


def _decode(client: SchemaRegistryClient, sid: int) -> Any:
    got = ProtobufDeserializer(None, None, client)(_frame(sid), CTX)
    assert got.DESCRIPTOR.full_name == "p.Flat" and (got.id, got.name, got.price) == (7, "n", 2.5)
    return got


def test_apicurio_base64_schema_is_fetched_without_asking_serialized():
    with FormatRegistry("apicurio", {1: "base64"}, prefix="/apis/ccompat/v7") as reg:
        _decode(reg.client(), 1)
    assert ("/schemas/ids/1", "serialized") not in reg.requests
    assert reg.requests and all(fmt is None for _, fmt in reg.requests)


def test_apicurio_text_schema_is_asked_again_serialized_and_needs_no_protoc(monkeypatch):
    from serdes.protobuf import _proto_text

    def no_protoc(*a: Any, **k: Any) -> Any:
        raise AssertionError("the text was compiled although format=serialized was served")

    monkeypatch.setattr(_proto_text, "parse_proto", no_protoc)
    with FormatRegistry("apicurio", {1: "text"}, prefix="/apis/ccompat/v7") as reg:
        _decode(reg.client(), 1)
    assert reg.requests[:2] == [("/schemas/ids/1", None), ("/schemas/ids/1", "serialized")]


def test_confluent_is_asked_serialized_once():
    with FormatRegistry("confluent", {1: "text"}) as reg:
        _decode(reg.client(), 1)
    assert reg.requests == [("/schemas/ids/1", "serialized")]


def test_a_registry_that_refused_serialized_is_asked_plainly_first_afterwards():
    """No URL hint: the first schema pays one refused request, later ones (any client of the same
    registry in this process) none."""
    with FormatRegistry("apicurio", {1: "base64", 2: "base64"}) as reg:
        _decode(reg.client(), 1)
        assert reg.requests[0] == ("/schemas/ids/1", "serialized")
        first = len(reg.requests)
        _decode(reg.client(), 2)
    assert [fmt for _, fmt in reg.requests[first:]] == [None] * (len(reg.requests) - first)


def test_mock_clients_keep_the_serialized_first_path():
    client = SchemaRegistryClient.new_client({"url": "mock://format-test"})
    assert _schemas.rest_client(client) is None


def test_proto_source_on_one_line_with_imports_and_commented_imports():
    from serdes.protobuf._proto_text import parse_proto

    one_line = ('syntax = "proto3"; import "google/protobuf/timestamp.proto"; '
                'message A { google.protobuf.Timestamp t = 1; }')
    assert list(parse_proto(one_line, "a.proto").dependency) == ["google/protobuf/timestamp.proto"]
    # an import in a comment is not one: nothing is looked up for it (protoc sees the source as given)
    commented = ('syntax = "proto3";\n// import "../../etc/passwd";\n/* import "x/../../y.proto"; */\n'
                 'message B { int32 x = 1; }')
    assert list(parse_proto(commented, "b.proto").dependency) == []
