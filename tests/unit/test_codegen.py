"""serdes.codegen: generated modules compile, import and describe the schema (both styles, three
formats); hostile schemas give safe code or a CodegenError; bounds; the CLI; the registry path on
confluent-kafka's mock:// registry. The classes are inspected, not compared with stored source."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import decimal
import enum
import json
import subprocess
import sys
import typing
import uuid
from pathlib import Path
from typing import Any, Optional, Tuple, Union

import fastavro
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

from serdes.codegen import CodegenError, CodegenLimits, generate, generate_from_registry
from serdes.codegen.__main__ import main

STYLES = ("dataclass", "msgspec")


# -- helpers -----------------------------------------------------------------------------------------


def fields(cls: type) -> dict[str, Tuple[str, bool]]:
    """attribute -> (wire name, has a default), for both styles."""
    if dataclasses.is_dataclass(cls):
        return {
            f.name: (f.metadata.get("serdes_name", f.name),
                     f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        }
    assert issubclass(cls, msgspec.Struct)
    return {f.name: (f.encode_name, not f.required) for f in msgspec.structs.fields(cls)}


def hints(cls: type) -> dict[str, Any]:
    h = typing.get_type_hints(cls)
    h.pop("__serdes_name__")
    h.pop("__serdes_omit_none__", None)  # JSON Schema: optional properties that do not take null
    return h


_ALLOWED_IMPORTS = {"__future__", "dataclasses", "datetime", "decimal", "enum", "typing", "uuid", "msgspec"}
_ALLOWED_CALLS = {"dataclasses.dataclass", "dataclasses.field", "msgspec.field", "float", "frozenset", "decimal.Decimal",
                  "uuid.UUID", "datetime.date", "datetime.time", "datetime.datetime"}


def assert_safe(src: str) -> None:
    """The module is only imports of the expected modules, ``__all__``/``SCHEMA`` string constants and
    class definitions whose calls are field constructors, literal builders or generated classes."""
    tree = ast.parse(src)
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            assert node.module == "__future__"
        elif isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= _ALLOWED_IMPORTS and all(a.asname is None for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            assert isinstance(target, ast.Name) and target.id in ("__all__", "SCHEMA")
            assert node.value is not None
            ast.literal_eval(node.value)
        else:
            assert isinstance(node, ast.ClassDef), ast.dump(node)[:200]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            assert fn in _ALLOWED_CALLS or fn in classes, fn
        assert not isinstance(node, (ast.Import, ast.ImportFrom)) or node in tree.body
        if isinstance(node, ast.Attribute):
            assert not node.attr.startswith("__"), node.attr
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            assert node.id in _ALLOWED_IMPORTS | classes | {"float", "str", "int", "bool", "bytes", "list", "dict", "frozenset"}, node.id


# -- Avro --------------------------------------------------------------------------------------------
ORDER_AVSC = {
    "type": "record", "name": "Order", "namespace": "com.example", "fields": [
        {"name": "id", "type": "long"},
        {"name": "from", "type": "string", "default": "shop"},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["a", "b"]},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "DONE", "name"]},
         "default": "DONE"},
        {"name": "next", "type": ["null", "Order"], "default": None},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
         "default": "\u0001\u0000"},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}, "default": 2},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "key", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "attrs", "type": {"type": "map", "values": ["int", "string"]}, "default": {}},
        {"name": "ship", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string", "default": "main"}]}, "default": {}},
        {"name": "bill", "type": ["null", "Address"], "default": None},
        {"name": "ratio", "type": "double", "default": 1},
        {"name": "either", "type": ["int", "string", "Address"], "default": 3},
    ],
}


@pytest.mark.parametrize("style", STYLES)
def test_avro_classes_fields_and_annotations(style: str, load: Any) -> None:
    mod = load(generate(json.dumps(ORDER_AVSC), "avro", style))
    Order, Address, Status = mod.Order, mod.Address, mod.Status
    assert (Order.__serdes_name__, Address.__serdes_name__, Status.__serdes_name__) == (
        "com.example.Order", "com.example.Address", "com.example.Status")
    assert set(mod.__all__) == {"Order", "Address", "Status"}
    assert hints(Order) == {
        "id": int, "from_": str, "tags": list[str], "status": Status, "next": Optional[Order],
        "amount": decimal.Decimal, "day": datetime.date, "at": datetime.datetime, "local": datetime.datetime,
        "clock": datetime.time, "key": uuid.UUID, "hash": bytes, "attrs": dict[str, Union[int, str]],
        "ship": Address, "bill": Optional[Address], "ratio": float, "either": Union[int, str, Address],
    }
    f = fields(Order)
    assert f["from_"] == ("from", True)
    assert f["id"] == ("id", False) and f["at"] == ("at", False)
    assert issubclass(Status, str) and issubclass(Status, enum.Enum)
    assert [(m.name, m.value) for m in Status] == [("NEW", "NEW"), ("DONE", "DONE"), ("name_", "name")]


@pytest.mark.parametrize("style", STYLES)
def test_avro_defaults_become_python_values(style: str, load: Any) -> None:
    mod = load(generate(json.dumps(ORDER_AVSC), "avro", style))
    required = dict(id=1, at=datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
                    local=datetime.datetime(2024, 1, 1), clock=datetime.time(1), key=uuid.uuid4(), hash=b"abcd")
    a, b = mod.Order(**required), mod.Order(**required)
    assert a.from_ == "shop" and a.tags == ["a", "b"] and a.status is mod.Status.DONE and a.next is None
    assert a.amount == decimal.Decimal("2.56") and a.day == datetime.date(1970, 1, 3)
    assert a.attrs == {} and a.ship == mod.Address(street="main") and a.bill is None
    assert a.ratio == 1.0 and isinstance(a.ratio, float) and a.either == 3
    a.tags.append("c")
    assert b.tags == ["a", "b"]  # mutable defaults are per instance
    with pytest.raises(TypeError):
        mod.Order(id=1)  # the fields without defaults are required


def test_avro_schema_constant_is_a_usable_reader_schema(load: Any) -> None:
    mod = load(generate(json.dumps(ORDER_AVSC), "avro"))
    parsed = json.loads(mod.SCHEMA)
    assert [f["name"] for f in parsed["fields"]] == [f["name"] for f in ORDER_AVSC["fields"]]
    assert parsed["fields"][1]["default"] == "shop"
    fastavro.parse_schema(parsed)


def test_avro_named_types_reused_recursion_and_name_clashes(load: Any) -> None:
    odd = [{"name": n, "type": {"type": "record", "name": n, "fields": []}}
           for n in ("_class", "__init__", "_1abc", "_-x", "--x", "match", "_None")]
    classes = load(generate(json.dumps({"type": "record", "name": "R", "fields": odd}), "avro"))
    assert [hints(classes.R)[f].__serdes_name__ for f in fields(classes.R)] == [f["name"] for f in odd]
    schema = {"type": "record", "name": "a.Node", "fields": [
        {"name": "left", "type": ["null", "Node"], "default": None},
        {"name": "x", "type": {"type": "record", "name": "b.Node", "fields": [{"name": "v", "type": "int"}]}},
        {"name": "y", "type": "b.Node"},
        {"name": "z", "type": {"type": "record", "name": "int_", "fields": []}},
        {"name": "w", "type": {"type": "record", "name": "c.list", "fields": []}},
    ]}
    mod = load(generate(json.dumps(schema), "avro"))
    h = hints(mod.Node)
    assert h["left"] == Optional[mod.Node]
    assert h["x"] is h["y"] and h["x"].__serdes_name__ == "b.Node" and h["x"] is not mod.Node
    assert h["w"].__serdes_name__ == "c.list" and h["w"].__name__ not in ("list", "int")
    assert len(set(mod.__all__)) == len(mod.__all__) == 4
    node = mod.Node(x=h["x"](v=1), y=h["x"](v=2), z=h["z"](), w=h["w"]())
    assert mod.Node(left=node, x=node.x, y=node.y, z=node.z, w=node.w).left is node


def test_avro_references_are_inlined_into_schema(load: Any) -> None:
    address = {"type": "record", "name": "Address", "namespace": "com.shared",
               "fields": [{"name": "street", "type": "string"}]}
    root = {"type": "record", "name": "Order", "namespace": "com.example", "fields": [
        {"name": "ship", "type": "com.shared.Address"}, {"name": "bill", "type": "com.shared.Address"}]}
    mod = load(generate(json.dumps(root), "avro", references={"com.shared.Address": json.dumps(address)}))
    assert hints(mod.Order) == {"ship": mod.Address, "bill": mod.Address}
    parsed = json.loads(mod.SCHEMA)
    assert parsed["fields"][0]["type"]["name"] == "Address"  # defined at its first use ...
    assert parsed["fields"][1]["type"] == "com.shared.Address"  # ... and referred to after
    fastavro.parse_schema(parsed)  # self-contained: no named_schemas needed
    with pytest.raises(CodegenError, match="com.shared.Address"):
        generate(json.dumps(root), "avro")


def test_avro_reference_in_the_null_namespace_keeps_its_name(load: Any) -> None:
    money = {"type": "record", "name": "Money", "fields": [{"name": "units", "type": "long"}]}
    root = {"type": "record", "name": "Price", "namespace": "com.example", "fields": [{"name": "m", "type": "Money"}]}
    mod = load(generate(json.dumps(root), "avro", references={"Money": json.dumps(money)}))
    assert mod.Money.__serdes_name__ == "Money"
    parsed = fastavro.parse_schema(json.loads(mod.SCHEMA))
    assert "Money" in parsed["__named_schemas"] and "com.example.Money" not in parsed["__named_schemas"]


@pytest.mark.parametrize("schema, match", [
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}, "'Nope' is not defined"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}, "default of field 'a'"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]},
     "two fields named 'a'"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "record", "name": "R", "fields": []}}]},
     "defined twice"),
    ({"type": "enum", "name": "E", "symbols": ["A", "A"]}, "repeats"),
    ("string", "no record or enum"),
    ({"type": "record", "name": 5, "fields": []}, "non-empty string"),
])
def test_avro_bad_schemas_are_codegen_errors(schema: Any, match: str) -> None:
    with pytest.raises(CodegenError, match=match):
        generate(json.dumps(schema), "avro")


@pytest.mark.parametrize("style", STYLES)
def test_field_names_that_shadow_what_annotations_use(style: str, load: Any) -> None:
    schema = {"type": "record", "name": "Order", "fields": [
        {"name": "Address", "type": ["null", {"type": "record", "name": "Address", "fields": []}], "default": None},
        {"name": "Status", "type": {"type": "enum", "name": "Status", "symbols": ["A"]}, "default": "A"},
        {"name": "typing", "type": ["null", "string"], "default": None},
        {"name": "str", "type": "string", "default": "x"}, {"name": "int", "type": "int", "default": 3},
        {"name": "x", "type": "string", "default": "y"}, {"name": "n", "type": "int", "default": 1},
    ]}
    mod = load(generate(json.dumps(schema), "avro", style))
    assert hints(mod.Order) == {"Address": Optional[mod.Address], "Status": mod.Status, "typing": Optional[str],
                                "str_": str, "int_": int, "x": str, "n": int}
    assert fields(mod.Order)["str_"] == ("str", True)
    assert mod.Order().Status is mod.Status.A


# -- Protobuf ----------------------------------------------------------------------------------------
ORDER_PROTO = """
syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string from = 2;
  repeated string tags = 3;
  Status status = 4;
  optional int32 maybe = 5;
  oneof pay { string card = 6; bytes token = 7; }
  map<string, Item> items = 8;
  google.protobuf.Timestamp at = 9;
  message Item {
    enum Kind { KIND_UNSET = 0; KIND_BOX = 1; }
    string sku = 1; double price = 2; Kind kind = 3; Order parent = 4; bool gift = 5; bytes blob = 6;
    map<int32, Kind> kinds = 7; uint64 big = 8; sint32 s = 9; fixed64 f = 10; float r = 11;
  }
  Item first = 10;
}
enum Status { STATUS_UNKNOWN = 0; STATUS_NEW = 1; }
"""


@pytest.mark.parametrize("style", STYLES)
def test_protobuf_classes(style: str, load: Any) -> None:
    mod = load(generate(ORDER_PROTO, "protobuf", style))
    Order, Item, Kind, Status, Ts = mod.Order, mod.Order_Item, mod.Order_Item_Kind, mod.Status, mod.Timestamp
    assert Order.__serdes_name__ == "shop.v1.Order" and Item.__serdes_name__ == "shop.v1.Order.Item"
    assert Ts.__serdes_name__ == "google.protobuf.Timestamp" and hints(Ts) == {"seconds": int, "nanos": int}
    assert hints(Order) == {
        "id": int, "from_": str, "tags": list[str], "status": Status, "maybe": Optional[int],
        "card": Optional[str], "token": Optional[bytes], "items": dict[str, Item], "at": Optional[Ts],
        "first": Optional[Item],
    }
    assert hints(Item) == {
        "sku": str, "price": float, "kind": Kind, "parent": Optional[Order], "gift": bool, "blob": bytes,
        "kinds": dict[int, Kind], "big": int, "s": int, "f": int, "r": float,
    }
    assert fields(Order)["from_"] == ("from", True)
    assert [m.value for m in Status] == ["STATUS_UNKNOWN", "STATUS_NEW"]
    o, i = Order(), Item()  # every field has its proto3 default (or None / empty)
    assert (o.id, o.from_, o.tags, o.status, o.maybe, o.items, o.at) == (0, "", [], Status.STATUS_UNKNOWN, None, {}, None)
    assert (i.sku, i.price, i.kind, i.gift, i.blob, i.kinds) == ("", 0.0, Kind.KIND_UNSET, False, b"", {})


def test_protobuf_imports_from_references_and_errors(load: Any) -> None:
    common = 'syntax = "proto3"; package common; message Money { int64 units = 1; string currency = 2; }\n' \
             'message Unused { int32 x = 1; }'
    root = 'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\nmessage Price { common.Money amount = 1; }'
    mod = load(generate(root, "protobuf", references={"common/money.proto": common}))
    assert hints(mod.Price) == {"amount": Optional[mod.Money]}
    assert mod.Money.__serdes_name__ == "common.Money" and not hasattr(mod, "Unused")
    with pytest.raises(CodegenError, match="common/money.proto"):
        generate(root, "protobuf")
    with pytest.raises(CodegenError, match="refusing"):
        generate('syntax = "proto3";\nimport "../etc/passwd";\nmessage A {}', "protobuf")
    with pytest.raises(CodegenError, match="no message"):
        generate('syntax = "proto3"; enum E { A = 0; }', "protobuf")
    with pytest.raises(CodegenError, match="protoc"):
        generate('syntax = "proto3"; message {', "protobuf")


def test_protobuf_base64_descriptor(load: Any) -> None:
    from google.protobuf import timestamp_pb2

    import base64

    text = base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
    mod = load(generate(text, "protobuf", "msgspec"))
    assert hints(mod.Timestamp) == {"seconds": int, "nanos": int}


# -- JSON Schema -------------------------------------------------------------------------------------
ORDER_JSON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "from": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["x"]},
        "status": {"enum": ["new", "done"]},
        "ship": {"$ref": "#/$defs/Address"},
        "bill": {"$ref": "#/definitions/Address"},
        "parent": {"$ref": "#"},
        "n": {"type": ["number", "null"]},
        "lit": {"enum": [1, "a", None]},
        "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
        "free": {"type": "object"},
        "anything": {},
        "either": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/Address"}]},
        "inline": {"type": "object", "properties": {"flag": {"type": "boolean", "default": True}}},
        "count": {"type": "integer", "default": 5},
    },
    "required": ["id", "from", "ship"],
    "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}},
    "definitions": {"Address": {"$ref": "#/$defs/Address"}},
}


@pytest.mark.parametrize("style", STYLES)
def test_jsonschema_classes(style: str, load: Any) -> None:
    mod = load(generate(json.dumps(ORDER_JSON), "jsonschema", style))
    Order, Address, Status, Inline = mod.Order, mod.Address, mod.Status, mod.Inline
    assert Order.__serdes_name__ == "Order" and Address.__serdes_name__ == "#/$defs/Address"
    assert hints(Order) == {
        "id": int, "from_": str, "tags": Optional[list[str]], "status": Optional[Status], "ship": Address,
        "bill": Optional[Address], "parent": Optional[Order], "n": Optional[float],
        "lit": Optional[typing.Literal[1, "a", None]], "meta": Optional[dict[str, int]],
        "free": Optional[dict[str, Any]], "anything": Any, "either": Optional[Union[str, Address]],
        "inline": Optional[Inline], "count": Optional[int],
    }
    f = fields(Order)
    assert f["id"] == ("id", False) and f["from_"] == ("from", False) and f["ship"] == ("ship", False)
    assert f["tags"] == ("tags", True) and f["n"] == ("n", True)
    o = Order(id=1, from_="w", ship=Address(street="s"))
    assert (o.tags, o.count, o.n, o.inline) == (["x"], 5, None, None)
    assert Inline().flag is True
    assert [m.value for m in Status] == ["new", "done"]
    assert json.loads(mod.SCHEMA) == ORDER_JSON


def test_jsonschema_references_and_errors(load: Any) -> None:
    addr = {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"],
            "$defs": {"Zip": {"type": "object", "properties": {"code": {"type": "string"}}}}}
    root = {"type": "object", "properties": {"a": {"$ref": "address.json"}, "z": {"$ref": "address.json#/$defs/Zip"}}}
    mod = load(generate(json.dumps(root), "json", references={"address.json": json.dumps(addr)}))
    h = hints(mod.Root)
    assert hints(h["a"].__args__[0]) == {"street": str} and hints(h["z"].__args__[0]) == {"code": Optional[str]}
    with pytest.raises(CodegenError, match="fetches nothing"):
        generate(json.dumps({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/x.json"}}}), "json")
    with pytest.raises(CodegenError, match="top level is not an object"):
        generate(json.dumps({"type": "array", "items": {"type": "string"}}), "json")
    with pytest.raises(CodegenError, match="points at nothing"):
        generate(json.dumps({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}), "json")
    with pytest.raises(CodegenError, match="refers to itself"):
        generate(json.dumps({"type": "object", "properties": {"a": {"$ref": "#/$defs/L"}},
                             "$defs": {"L": {"$ref": "#/$defs/L"}}}), "json")
    with pytest.raises(CodegenError, match="not JSON"):
        generate("{", "json")


def test_jsonschema_literals(load: Any) -> None:
    schema = '{"title": "L", "type": "object", "properties": {"a": {"enum": [1, 2.5, true, null]}, ' \
             '"b": {"const": "x"}, "c": {"enum": [NaN, 1]}, "d": {"enum": [[1], {"a": 1}]}}}'
    mod = load(generate(schema, "json"))
    empty = load(generate(json.dumps({"title": "E", "properties": {"": {"enum": ["", "a"]}}}), "json"))
    assert fields(empty.E) == {"f": ("", True)} and [m.value for m in hints(empty.E)["f"].__args__[0]] == ["", "a"]
    assert hints(mod.L) == {"a": Optional[typing.Literal[1, 2.5, True, None]], "b": Optional[typing.Literal["x"]],
                            "c": Any, "d": Any}


def test_jsonschema_all_of_merges_objects(load: Any) -> None:
    schema = {"title": "Both", "allOf": [{"$ref": "#/$defs/A"}, {"properties": {"b": {"type": "integer"}}, "required": ["b"]}],
              "$defs": {"A": {"type": "object", "properties": {"a": {"type": "string"}}}}}
    mod = load(generate(json.dumps(schema), "json", "msgspec"))
    assert hints(mod.Both) == {"a": Optional[str], "b": int}


# -- hostile schemas ---------------------------------------------------------------------------------
EVIL = ['x"); import os; ("', "x'''\nimport os\n#", "__class__", "__init__", "from", "match", "_", "self",
        "dataclasses", "msgspec", "typing", "\u00e9t\u00e9", "a-b", "1x", "x" * 200, "\\", "name", "mro", "__serdes_name__"]


def _hostile_avro() -> str:
    fields = [{"name": n, "type": "int", "default": 1} for n in EVIL]
    fields.append({"name": "e", "type": {"type": "enum", "name": "E\"\n import os", "symbols": EVIL}})
    fields.append({"name": "s", "type": "string", "default": "'''\n__import__('os')"})
    return json.dumps({"type": "record", "name": "R'); import os; #", "namespace": "os.system(1)", "fields": fields})


def _hostile_json() -> str:
    return json.dumps({"title": "T\"\nimport os", "type": "object",
                       "properties": {n: {"type": "string", "default": n} for n in EVIL}
                       | {"e": {"enum": EVIL}, "o": {"title": "__import__('os')", "type": "object",
                                                     "properties": {"x": {"type": "integer"}}}}})


@pytest.mark.parametrize("kind, text", [("avro", _hostile_avro()), ("json", _hostile_json())])
def test_hostile_names_give_safe_code_that_keeps_the_names(kind: str, text: str, load: Any) -> None:
    src = generate(text, kind, "dataclass")
    assert_safe(src)
    mod = load(src)
    root = getattr(mod, mod.__all__[0])
    wire = {w for w, _ in fields(root).values()}
    assert set(EVIL) <= wire  # every name kept exactly, as the wire name
    assert all(a.isidentifier() and a.isascii() and not a.startswith("__") for a in fields(root))
    enum_cls = next(getattr(mod, n) for n in mod.__all__ if issubclass(getattr(mod, n), enum.Enum))
    assert [m.value for m in enum_cls] == EVIL
    assert "os" not in vars(mod)


def test_hostile_names_in_msgspec_style(load: Any) -> None:
    # msgspec itself refuses renamed fields with a quote, a backslash or a control character
    with pytest.raises(CodegenError, match="msgspec refuses"):
        generate(_hostile_avro(), "avro", "msgspec")
    tame = [n for n in EVIL if not any(c in n for c in '"\\\n')]
    schema = {"type": "record", "name": "R'); import os; #", "fields": [{"name": n, "type": "int"} for n in tame]}
    src = generate(json.dumps(schema), "avro", "msgspec")
    assert_safe(src)
    mod = load(src)
    assert {w for w, _ in fields(getattr(mod, mod.__all__[0])).values()} == set(tame)


def test_hostile_protobuf_descriptor_names(load: Any) -> None:
    import base64

    from google.protobuf import descriptor_pb2

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="x.proto", package="p", syntax="proto3")
    m = fdp.message_type.add(name="import")
    for i, n in enumerate(["from", "class", "__init__", "None", "dataclasses", "_"], 1):
        m.field.add(name=n, number=i, type=F.TYPE_INT32)
    bad = fdp.message_type.add(name='x"); import os; ("')
    bad.field.add(name="a", number=1, type=F.TYPE_INT32)
    text = base64.b64encode(fdp.SerializeToString()).decode()
    with pytest.raises(CodegenError):  # the descriptor pool refuses names that are not identifiers
        generate(text, "protobuf")
    del fdp.message_type[1]
    src = generate(base64.b64encode(fdp.SerializeToString()).decode(), "protobuf", "msgspec")
    assert_safe(src)
    mod = load(src)
    assert {w for w, _ in fields(mod.import_).values()} == {"from", "class", "__init__", "None", "dataclasses", "_"}


# -- bounds ------------------------------------------------------------------------------------------
def _nested_avro(depth: int) -> str:
    t: Any = "int"
    for _ in range(depth):
        t = {"type": "array", "items": t}
    return json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": t}]})


def test_bounds() -> None:
    generate(_nested_avro(90), "avro")
    with pytest.raises(CodegenError, match="deeper than 100"):
        generate(_nested_avro(150), "avro")
    with pytest.raises(CodegenError, match="nests deeper"):
        generate("[" * 100_000 + "]" * 100_000, "avro")
    deep_json: Any = {"type": "string"}
    for _ in range(150):
        deep_json = {"type": "object", "properties": {"a": deep_json}}
    with pytest.raises(CodegenError, match="deeper than 100"):
        generate(json.dumps(deep_json), "json")
    many = {"type": "record", "name": "R", "fields": [
        {"name": f"f{i}", "type": {"type": "record", "name": f"T{i}", "fields": []}} for i in range(20)]}
    generate(json.dumps(many), "avro")
    with pytest.raises(CodegenError, match="more than 10 named types"):
        generate(json.dumps(many), "avro", limits=CodegenLimits(max_types=10))
    with pytest.raises(CodegenError, match="more than 5 fields"):
        generate(json.dumps(many), "avro", limits=CodegenLimits(max_fields=5))
    with pytest.raises(CodegenError, match="over the limit of 1024"):
        generate(json.dumps({"type": "record", "name": "R" * 2000, "fields": []}), "avro")
    with pytest.raises(CodegenError, match="characters, over the limit"):
        generate(json.dumps(many), "avro", limits=CodegenLimits(max_schema_chars=100))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="style"):
        generate("{}", "avro", "pydantic")
    with pytest.raises(ValueError, match="schema_type"):
        generate("{}", "xml")


# -- CLI ---------------------------------------------------------------------------------------------
def test_cli_writes_stdout_and_output_file(tmp_path: Path, capsys: Any, load: Any) -> None:
    src = tmp_path / "order.avsc"
    src.write_text(json.dumps(ORDER_AVSC))
    assert main(["avro", str(src)]) == 0
    out = capsys.readouterr().out
    assert load(out).Order.__serdes_name__ == "com.example.Order"
    target = tmp_path / "order_model.py"
    assert main(["avro", str(src), "--style", "msgspec", "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert issubclass(load(target.read_text()).Order, msgspec.Struct)
    proto = tmp_path / "order.proto"
    proto.write_text(ORDER_PROTO)
    assert main(["protobuf", str(proto)]) == 0 and "class Order_Item" in capsys.readouterr().out
    js = tmp_path / "order.json"
    js.write_text(json.dumps(ORDER_JSON))
    assert main(["jsonschema", str(js)]) == 0 and "class Order" in capsys.readouterr().out


def test_cli_references_from_files(tmp_path: Path, capsys: Any, load: Any) -> None:
    (tmp_path / "money.proto").write_text('syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; }\n')
    (tmp_path / "price.proto").write_text(
        'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\nmessage Price { common.Money amount = 1; }\n')
    argv = ["protobuf", str(tmp_path / "price.proto")]
    assert main(argv + ["--ref", f"common/money.proto={tmp_path / 'money.proto'}"]) == 0
    mod = load(capsys.readouterr().out)
    assert hints(mod.Price) == {"amount": Optional[mod.Money]}
    assert main(argv) == 2 and "common/money.proto" in capsys.readouterr().err
    assert main(argv + ["--ref", "common/money.proto"]) == 2 and "NAME=FILE" in capsys.readouterr().err
    assert main(argv + ["--ref", f"x={tmp_path / 'nope'}"]) == 2 and "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("argv, content, message", [
    (["avro", "{file}"], "{", "not JSON"),
    (["avro", "{file}"], '"string"', "no record or enum"),
    (["jsonschema", "{file}"], '{"type": "string"}', "top level"),
    (["protobuf", "{file}"], 'syntax = "proto3"; message {', "protoc"),
    (["avro", "{missing}"], "", "cannot read"),
    (["avro", "{file}", "--style", "msgspec"], _hostile_avro(), "msgspec refuses"),
])
def test_cli_bad_input_exit_code_2(argv: list[str], content: str, message: str, tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "schema"
    f.write_text(content)
    args = [a.format(file=f, missing=tmp_path / "nope") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_help_is_plain_and_every_flag_has_its_default() -> None:
    from serdes.codegen.__main__ import build_parser

    from .test_cli_help import _check_help

    _check_help(build_parser())


def test_cli_as_a_process(tmp_path: Path) -> None:
    f = tmp_path / "bad.avsc"
    f.write_text('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]}')
    done = subprocess.run([sys.executable, "-m", "serdes.codegen", "avro", str(f)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "'Missing' is not defined" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "serdes.codegen", "avro"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "usage" in done.stderr


# -- registry ----------------------------------------------------------------------------------------
@pytest.fixture
def client() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": f"mock://codegen-{uuid.uuid4()}"})


def test_registry_avro_with_references(client: SchemaRegistryClient, capsys: Any, load: Any) -> None:
    address = {"type": "record", "name": "Address", "namespace": "com.shared",
               "fields": [{"name": "street", "type": "string"}]}
    client.register_schema("address", Schema(json.dumps(address), "AVRO"))
    root = {"type": "record", "name": "Order", "namespace": "com.example",
            "fields": [{"name": "ship", "type": "com.shared.Address"}]}
    client.register_schema("orders-value", Schema(json.dumps(root), "AVRO",
                                                  [SchemaReference("com.shared.Address", "address", 1)]))
    v2 = {**root, "fields": root["fields"] + [{"name": "note", "type": "string", "default": ""}]}
    client.register_schema("orders-value", Schema(json.dumps(v2), "AVRO",
                                                  [SchemaReference("com.shared.Address", "address", 1)]))
    assert main(["registry", "--url", "mock://x", "--subject", "orders-value"], client_factory=lambda url: client) == 0
    latest = load(capsys.readouterr().out)
    assert hints(latest.Order) == {"ship": latest.Address, "note": str}
    first = load(generate_from_registry(client, "orders-value", 1, "msgspec"))
    assert hints(first.Order) == {"ship": first.Address}
    assert main(["registry", "--url", "mock://x", "--subject", "nope"], client_factory=lambda url: client) == 2
    assert "no such schema" in capsys.readouterr().err
    assert main(["registry", "--url", "mock://x", "--subject", "s", "--version", "x"],
                client_factory=lambda url: client) == 2


def test_cli_registry_client_settings(capsys: Any) -> None:
    base = ["registry", "--url", "http://127.0.0.1:9", "--subject", "s"]  # the discard port: nothing listens
    assert main(base + ["--conf", "max.retries=x"]) == 2
    assert "max.retries must be a number" in capsys.readouterr().err
    assert main(base + ["--conf", "no-equals-sign"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(base + ["--conf", "max.retries=0", "--conf", "timeout=5"]) == 1
    err = capsys.readouterr().err
    assert "registry error" in err and "unreachable" in err and "Traceback" not in err


def test_registry_protobuf_and_json(client: SchemaRegistryClient, load: Any) -> None:
    client.register_schema("money", Schema('syntax = "proto3"; package common; message Money { int64 units = 1; }',
                                           "PROTOBUF"))
    client.register_schema("prices-value", Schema(
        'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\nmessage Price { common.Money amount = 1; }',
        "PROTOBUF", [SchemaReference("common/money.proto", "money", 1)]))
    mod = load(generate_from_registry(client, "prices-value"))
    assert hints(mod.Price) == {"amount": Optional[mod.Money]}
    client.register_schema("addr", Schema(json.dumps({"type": "object", "properties": {"s": {"type": "string"}}}), "JSON"))
    client.register_schema("people-value", Schema(json.dumps(
        {"title": "Person", "type": "object", "properties": {"home": {"$ref": "addr.json"}}}), "JSON",
        [SchemaReference("addr.json", "addr", 1)]))
    mod = load(generate_from_registry(client, "people-value", "latest", "msgspec"))
    assert hints(hints(mod.Person)["home"].__args__[0]) == {"s": Optional[str]}


def test_registry_reference_fetches_are_bounded(client: SchemaRegistryClient) -> None:
    prev: Optional[SchemaReference] = None
    for i in range(6):  # a chain: each type refers to the one before
        fields = [{"name": "prev", "type": f"T{i - 1}"}] if prev else []
        client.register_schema(f"t{i}", Schema(json.dumps({"type": "record", "name": f"T{i}", "fields": fields}),
                                               "AVRO", [prev] if prev else []))
        prev = SchemaReference(f"T{i}", f"t{i}", 1)
    calls: list[Any] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(client, name)

    assert "class T0" in generate_from_registry(Counting(), "t5")
    calls.clear()
    with pytest.raises(CodegenError, match="more than 3 references"):
        generate_from_registry(Counting(), "t5", limits=CodegenLimits(max_references=3))
    assert len(calls) <= 4
    with pytest.raises(CodegenError, match="deeper than 2"):
        generate_from_registry(Counting(), "t5", limits=CodegenLimits(max_depth=2))


# -- any names at all --------------------------------------------------------------------------------
_NAMES = st.text(min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=_NAMES, names=st.lists(_NAMES, min_size=1, max_size=6, unique=True),
       symbols=st.lists(_NAMES, min_size=1, max_size=4, unique=True), default=st.text(max_size=8))
def test_any_names_give_safe_code_that_keeps_them(record: str, names: list[str], symbols: list[str], default: str,
                                                   load: Any) -> None:
    fields_ = [{"name": n, "type": "string", "default": default} for n in names]
    fields_.append({"name": "__the_enum", "type": {"type": "enum", "name": "E" + record, "symbols": symbols}})
    schema = {"type": "record", "name": record, "fields": fields_}
    src = generate(json.dumps(schema), "avro", "dataclass")
    assert_safe(src)
    mod = load(src)
    cls = next(getattr(mod, n) for n in mod.__all__ if dataclasses.is_dataclass(getattr(mod, n)))
    assert cls.__serdes_name__ == record
    assert [w for w, _ in fields(cls).values()] == names + ["__the_enum"]
    assert all(getattr(cls(**{a: None for a in fields(cls) if not fields(cls)[a][1]}), a) == default
               for a, (w, _) in fields(cls).items() if w != "__the_enum")
    enum_cls = hints(cls)[list(fields(cls))[-1]]
    assert [m.value for m in enum_cls] == symbols


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=_NAMES, props=st.lists(st.text(max_size=12), min_size=1, max_size=6, unique=True),
       values=st.lists(st.text(max_size=8), min_size=1, max_size=4, unique=True), style=st.sampled_from(STYLES))
def test_any_json_names_give_safe_code(title: str, props: list[str], values: list[str], style: str,
                                       load: Any) -> None:
    schema = {"title": title, "type": "object", "required": props[:1],
              "properties": {p: {"title": title + p, "type": "object", "properties": {"v": {"enum": values}}}
                             for p in props}}
    try:
        src = generate(json.dumps(schema), "json", style)
    except CodegenError as e:  # msgspec refuses some names; it must say so, nothing else
        assert style == "msgspec" and "msgspec refuses" in str(e)
        return
    assert_safe(src)
    mod = load(src)
    root = next(getattr(mod, n) for n in mod.__all__ if getattr(mod, n).__serdes_name__ == title)
    assert [w for w, _ in fields(root).values()] == props
    for attr, t in hints(root).items():
        cls = t if attr == list(fields(root))[0] else t.__args__[0]
        assert [m.value for m in hints(cls)["v"].__args__[0]] == values
