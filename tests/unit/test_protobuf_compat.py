"""Tests for serdes.protobuf.compat (descriptor compatibility for Flink state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import (
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    message_factory,
    timestamp_pb2,
)

from serdes.protobuf.compat import (
    WIRE_COMPATIBLE_TYPE_CHANGES,
    CompatibilityResult,
    Incompatibility,
    Rule,
    check_compatibility,
    descriptor_set_for,
    load_descriptor_set,
    main,
)

FDP = descriptor_pb2.FieldDescriptorProto
REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "protos" / "compat"
TS_FILE = "google/protobuf/timestamp.proto"
DUR_FILE = "google/protobuf/duration.proto"

# --------------------------------------------------------------------------
# tiny descriptor-building DSL
# --------------------------------------------------------------------------

SCALARS = {n[len("TYPE_"):].lower(): v for n, v in FDP.Type.items() if n not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")}


def fld(
    name: str,
    number: int,
    type_: str,
    *,
    repeated: bool = False,
    required: bool = False,
    optional: bool = False,  # proto3 `optional` (synthetic oneof)
    json_name: str | None = None,
    default: str | None = None,
    packed: bool | None = None,
    deprecated: bool = False,
) -> FDP:
    """type_: scalar name ("int32"), "enum .pkg.E", "group .pkg.G" or a message name ".pkg.M"."""
    f = FDP(name=name, number=number)
    if type_ in SCALARS:
        f.type = SCALARS[type_]
    elif type_.startswith("enum "):
        f.type, f.type_name = FDP.TYPE_ENUM, type_[5:]
    elif type_.startswith("group "):
        f.type, f.type_name = FDP.TYPE_GROUP, type_[6:]
    else:
        f.type, f.type_name = FDP.TYPE_MESSAGE, type_
    f.label = FDP.LABEL_REPEATED if repeated else FDP.LABEL_REQUIRED if required else FDP.LABEL_OPTIONAL
    if json_name is not None:
        f.json_name = json_name
    if default is not None:
        f.default_value = default
    if packed is not None:
        f.options.packed = packed
    if deprecated:
        f.options.deprecated = True
    if optional:
        f.proto3_optional = True  # msg() adds the synthetic oneof
    return f


def msg(
    name: str,
    *fields: FDP,
    nested: tuple[descriptor_pb2.DescriptorProto, ...] = (),
    enums: tuple[descriptor_pb2.EnumDescriptorProto, ...] = (),
    reserved: tuple[int, ...] = (),
    reserved_names: tuple[str, ...] = (),
    maps: tuple[tuple[str, int, str, str], ...] = (),
    map_entry: bool = False,
) -> descriptor_pb2.DescriptorProto:
    """Message; real oneofs are built with oneof_msg()."""
    m = descriptor_pb2.DescriptorProto(name=name)
    for f in fields:
        m.field.add().CopyFrom(f)
    for nf in m.field:
        if nf.proto3_optional:
            m.oneof_decl.add(name=f"_{nf.name}")
            nf.oneof_index = len(m.oneof_decl) - 1
    for fname, number, key, value in maps:
        entry_name = "".join(p.capitalize() for p in fname.split("_")) + "Entry"
        entry = msg(entry_name, fld("key", 1, key), fld("value", 2, value), map_entry=True)
        m.nested_type.add().CopyFrom(entry)
        m.field.add().CopyFrom(fld(fname, number, f".{{parent}}.{entry_name}", repeated=True))
    for n in nested:
        m.nested_type.add().CopyFrom(n)
    for e in enums:
        m.enum_type.add().CopyFrom(e)
    for r in reserved:
        m.reserved_range.add(start=r, end=r + 1)
    m.reserved_name.extend(reserved_names)
    if map_entry:
        m.options.map_entry = True
    return m


def oneof_msg(name: str, groups: dict[str, list[FDP]], *plain: FDP) -> descriptor_pb2.DescriptorProto:
    """Message with real oneofs: groups maps oneof name -> member fields."""
    m = descriptor_pb2.DescriptorProto(name=name)
    for f in plain:
        m.field.add().CopyFrom(f)
    for i, (oname, members) in enumerate(groups.items()):
        m.oneof_decl.add(name=oname)
        for f in members:
            nf = m.field.add()
            nf.CopyFrom(f)
            nf.oneof_index = i
    return m


def enum(name: str, *values: str | tuple[str, int]) -> descriptor_pb2.EnumDescriptorProto:
    e = descriptor_pb2.EnumDescriptorProto(name=name)
    for i, v in enumerate(values):
        vname, vnum = v if isinstance(v, tuple) else (v, i)
        e.value.add(name=vname, number=vnum)
    return e


def pfile(
    *items: descriptor_pb2.DescriptorProto | descriptor_pb2.EnumDescriptorProto,
    package: str = "shop",
    name: str = "shop.proto",
    syntax: str = "proto3",
    deps: tuple[str, ...] = (),
) -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax=syntax)
    f.dependency.extend(deps)
    for it in items:
        if isinstance(it, descriptor_pb2.DescriptorProto):
            m = f.message_type.add()
            m.CopyFrom(it)
            _fix_map_refs(m, f"{package}.{m.name}" if package else m.name)
        else:
            f.enum_type.add().CopyFrom(it)
    return f


def _fix_map_refs(m: descriptor_pb2.DescriptorProto, full: str) -> None:
    for f in m.field:
        if "{parent}" in f.type_name:
            f.type_name = f.type_name.replace("{parent}", full)
    for n in m.nested_type:
        _fix_map_refs(n, f"{full}.{n.name}")


def fds(*files: descriptor_pb2.FileDescriptorProto, wkt: bool = True) -> descriptor_pb2.FileDescriptorSet:
    """Descriptor set with well-known imports (in dependency order) prepended."""
    out = descriptor_pb2.FileDescriptorSet()
    if wkt:
        needed = {d for f in files for d in f.dependency}
        for mod in (timestamp_pb2, duration_pb2):
            if mod.DESCRIPTOR.name in needed:
                out.file.add().ParseFromString(mod.DESCRIPTOR.serialized_pb)
    for f in files:
        out.file.add().CopyFrom(f)
    return out


def build_pool(s: descriptor_pb2.FileDescriptorSet) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for f in s.file:
        pool.AddSerializedFile(f.SerializeToString())
    return pool


# --------------------------------------------------------------------------
# base schema (v1) and helpers to derive variants
# --------------------------------------------------------------------------

ITEM = msg("Item", fld("sku", 1, "string"), fld("quantity", 2, "uint32"))
STATUS = enum("Status", "STATUS_UNSPECIFIED", "STATUS_OPEN", "STATUS_PAID")


def order(*extra: FDP, drop: tuple[str, ...] = (), replace: dict[str, FDP] | None = None, **kw) -> descriptor_pb2.DescriptorProto:
    base = [
        fld("id", 1, "string"),
        fld("amount", 2, "int32"),
        fld("status", 3, "enum .shop.Status"),
        fld("items", 4, ".shop.Item", repeated=True),
        fld("created", 5, ".google.protobuf.Timestamp"),
        fld("comment", 6, "string"),
    ]
    replace = replace or {}
    fields = [replace.get(f.name, f) for f in base if f.name not in drop] + list(extra)
    return msg("Order", *fields, **kw)


def shop(*items, deps: tuple[str, ...] = (TS_FILE,), **kw) -> descriptor_pb2.FileDescriptorSet:
    items = items or (order(), ITEM, STATUS)
    return fds(pfile(*items, deps=deps, **kw))


V1 = shop()


def repackage(s: descriptor_pb2.FileDescriptorSet, package: str) -> descriptor_pb2.FileDescriptorSet:
    """Move the last file of ``s`` from package shop to ``package`` (references included)."""
    f = s.file[-1]
    f.package = package

    def walk(m: descriptor_pb2.DescriptorProto) -> None:
        for fd in m.field:
            if fd.type_name.startswith(".shop."):
                fd.type_name = f".{package}." + fd.type_name[len(".shop."):]
        for n in m.nested_type:
            walk(n)

    for m in f.message_type:
        walk(m)
    return s


def proto2(*items) -> descriptor_pb2.FileDescriptorSet:
    return fds(pfile(*items, syntax="proto2"))


def single(type_: str, **kw) -> descriptor_pb2.FileDescriptorSet:
    return fds(pfile(msg("M", fld("v", 1, type_, **kw))))


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    old: descriptor_pb2.FileDescriptorSet
    new: descriptor_pb2.FileDescriptorSet
    root: str | None
    compatible: bool
    # reject cases: (path, rule); accept cases: substring of some note (or None = no notes)
    expect: tuple[str, str] | str | None
    valid: bool = True  # whether both sides are complete, loadable descriptor sets


ACCEPT = [
    Case("unchanged", V1, shop(), "shop.Order", True, None),
    Case("unchanged-all", V1, shop(), None, True, None),
    Case("field-added", V1, shop(order(fld("note", 7, "string")), ITEM, STATUS), "shop.Order", True,
         "field shop.Order.note (7) added"),
    Case("enum-value-added", V1, shop(order(), ITEM, enum("Status", "STATUS_UNSPECIFIED", "STATUS_OPEN", "STATUS_PAID", "STATUS_SHIPPED")),
         "shop.Order", True, "enum value shop.Status.STATUS_SHIPPED (3) added"),
    Case("message-added", V1, shop(order(), ITEM, STATUS, msg("Refund", fld("id", 1, "string"))), None, True,
         "message shop.Refund added"),
    Case("deprecated-option", V1, shop(order(replace={"comment": fld("comment", 6, "string", deprecated=True)}), ITEM, STATUS),
         "shop.Order", True, None),
    Case("json-name-option", V1, shop(order(replace={"comment": fld("comment", 6, "string", json_name="remark")}), ITEM, STATUS),
         "shop.Order", True, "JSON name changed 'comment' -> 'remark'"),
    Case("field-renamed", V1, shop(order(replace={"comment": fld("remark", 6, "string")}), ITEM, STATUS),
         "shop.Order", True, "field shop.Order.comment (6) renamed to 'remark'"),
    Case("field-removed-reserved", V1, shop(order(drop=("comment",), reserved=(6,), reserved_names=("comment",)), ITEM, STATUS),
         "shop.Order", True, "field shop.Order.comment (6) removed; number reserved"),
    Case("reserved-name-reused-new-number", shop(order(drop=("comment",), reserved=(6,), reserved_names=("comment",)), ITEM, STATUS),
         shop(order(fld("comment", 9, "string"), drop=("comment",), reserved=(6,)), ITEM, STATUS),
         "shop.Order", True, "reuses a reserved name"),
    Case("nested-widening-recursed", V1, shop(order(), msg("Item", fld("sku", 1, "string"), fld("quantity", 2, "uint64")), STATUS),
         "shop.Order", True, "field shop.Item.quantity (2) type changed uint32 -> uint64"),
    Case("enum-value-renamed", V1, shop(order(), ITEM, enum("Status", "STATUS_UNSPECIFIED", "STATUS_OPEN", "STATUS_SETTLED")),
         "shop.Order", True, "renamed to STATUS_SETTLED"),
    Case("proto3-optional-added", single("int32"), single("int32", optional=True), "shop.M", True,
         "presence changed implicit -> explicit"),
    Case("packed-changed", single("int32", repeated=True), single("int32", repeated=True, packed=False), "shop.M", True,
         "packed encoding changed True -> False"),
    Case("required-to-optional", proto2(msg("M", fld("v", 1, "int32", required=True))), proto2(msg("M", fld("v", 1, "int32"))),
         "shop.M", True, "no longer required"),
    Case("moved-into-new-oneof-alone", fds(pfile(msg("M", fld("a", 1, "int32"), fld("b", 2, "string")))),
         fds(pfile(oneof_msg("M", {"choice": [fld("a", 1, "int32")]}, fld("b", 2, "string")))), "shop.M", True,
         "moved into oneof 'choice'"),
    Case("left-oneof", fds(pfile(oneof_msg("M", {"choice": [fld("a", 1, "int32"), fld("b", 2, "string")]}))),
         fds(pfile(msg("M", fld("a", 1, "int32"), fld("b", 2, "string")))), "shop.M", True, "left oneof 'choice'"),
    Case("map-value-widened", fds(pfile(msg("M", maps=(("attrs", 1, "string", "int32"),)))),
         fds(pfile(msg("M", maps=(("attrs", 1, "string", "int64"),)))), "shop.M", True,
         "field shop.M.AttrsEntry.value (2) type changed int32 -> int64"),
    Case("wkt-by-name-without-definition", fds(pfile(msg("M", fld("t", 1, ".google.protobuf.Timestamp")), deps=(TS_FILE,)), wkt=False),
         fds(pfile(msg("M", fld("t", 1, ".google.protobuf.Timestamp")), deps=(TS_FILE,)), wkt=False), "shop.M", True,
         "google.protobuf.Timestamp is not defined in the old descriptor set; compared by name only", False),
    Case("root-scoping-ignores-unrelated", shop(order(), ITEM, STATUS, msg("Other", fld("x", 1, "int32"))),
         shop(order(), ITEM, STATUS, msg("Other", fld("x", 1, "string"))), "shop.Order", True, None),
] + [
    Case(f"widen-{a}-{b}", single(a), single(b), "shop.M", True, f"type changed {a} -> {b}")
    for a, b in [("int32", "int64"), ("uint32", "uint64"), ("uint32", "int64"), ("sint32", "sint64"),
                 ("string", "bytes"), ("bytes", "string")]
]

# source comments (SourceCodeInfo) never matter
_commented = shop()
_commented.file[-1].source_code_info.location.add(path=[4, 0, 2, 1], span=[1, 2, 3], leading_comments=" the amount\n")
ACCEPT.append(Case("comments-changed", V1, _commented, "shop.Order", True, None))

REJECT = [
    Case("number-changed", V1, shop(order(replace={"amount": fld("amount", 8, "int32")}), ITEM, STATUS),
         "shop.Order", False, ("shop.Order.amount", Rule.FIELD_NUMBER_CHANGED)),
    Case("number-swapped", fds(pfile(msg("M", fld("a", 1, "int32"), fld("b", 2, "int32")))),
         fds(pfile(msg("M", fld("a", 2, "int32"), fld("b", 1, "int32")))), "shop.M", False,
         ("shop.M.a", Rule.FIELD_NUMBER_CHANGED)),
    Case("type-changed", V1, shop(order(replace={"amount": fld("amount", 2, "string")}), ITEM, STATUS),
         "shop.Order", False, ("shop.Order.amount", Rule.FIELD_TYPE_CHANGED)),
    Case("singular-to-repeated", V1, shop(order(replace={"comment": fld("comment", 6, "string", repeated=True)}), ITEM, STATUS),
         "shop.Order", False, ("shop.Order.comment", Rule.FIELD_CARDINALITY_CHANGED)),
    Case("repeated-to-singular", V1, shop(order(replace={"items": fld("items", 4, ".shop.Item")}), ITEM, STATUS),
         "shop.Order", False, ("shop.Order.items", Rule.FIELD_CARDINALITY_CHANGED)),
    Case("repeated-to-map", fds(pfile(msg("M", fld("attrs", 1, ".shop.M.AttrsEntry", repeated=True),
                                          nested=(msg("AttrsEntry", fld("key", 1, "string"), fld("value", 2, "int32")),)))),
         fds(pfile(msg("M", maps=(("attrs", 1, "string", "int32"),)))), "shop.M", False,
         ("shop.M.attrs", Rule.FIELD_CARDINALITY_CHANGED)),
    Case("map-key-changed", fds(pfile(msg("M", maps=(("attrs", 1, "string", "int32"),)))),
         fds(pfile(msg("M", maps=(("attrs", 1, "int32", "int32"),)))), "shop.M", False,
         ("shop.M.AttrsEntry.key", Rule.FIELD_TYPE_CHANGED)),
    Case("message-type-changed", V1, shop(order(replace={"items": fld("items", 4, ".shop.Product", repeated=True)}), ITEM, STATUS,
                                          msg("Product", fld("sku", 1, "string"), fld("quantity", 2, "uint32"))),
         "shop.Order", False, ("shop.Order.items", Rule.FIELD_MESSAGE_TYPE_CHANGED)),
    Case("enum-type-changed", V1, shop(order(replace={"status": fld("status", 3, "enum .shop.State")}), ITEM,
                                       enum("State", "STATUS_UNSPECIFIED", "STATUS_OPEN", "STATUS_PAID")),
         "shop.Order", False, ("shop.Order.status", Rule.FIELD_MESSAGE_TYPE_CHANGED)),
    Case("wkt-type-changed", V1, fds(pfile(order(replace={"created": fld("created", 5, ".google.protobuf.Duration")}), ITEM, STATUS,
                                           deps=(DUR_FILE,))),
         "shop.Order", False, ("shop.Order.created", Rule.FIELD_MESSAGE_TYPE_CHANGED)),
    Case("message-renamed", V1, shop(order(replace={"items": fld("items", 4, ".shop.Product", repeated=True)}), STATUS,
                                     msg("Product", fld("sku", 1, "string"), fld("quantity", 2, "uint32"))),
         None, False, ("shop.Item", Rule.MESSAGE_REMOVED)),
    Case("nested-message-moved", fds(pfile(msg("Order", fld("line", 1, ".shop.Order.Line"), nested=(msg("Line", fld("x", 1, "int32")),)))),
         fds(pfile(msg("Order", fld("line", 1, ".shop.Line")), msg("Line", fld("x", 1, "int32")))), None, False,
         ("shop.Order.Line", Rule.MESSAGE_REMOVED)),
    Case("root-removed", V1, shop(ITEM, STATUS), "shop.Order", False, ("shop.Order", Rule.MESSAGE_REMOVED)),
    Case("package-changed", V1, repackage(shop(), "shop.v2"), "shop.Order", False,
         ("shop.Order", Rule.PACKAGE_CHANGED)),
    Case("field-removed-unreserved", V1, shop(order(drop=("comment",)), ITEM, STATUS), "shop.Order", False,
         ("shop.Order.comment", Rule.FIELD_REMOVED_UNRESERVED)),
    Case("reserved-number-reused", shop(order(drop=("comment",), reserved=(6,)), ITEM, STATUS),
         shop(order(fld("remark", 6, "int64"), drop=("comment",)), ITEM, STATUS), "shop.Order", False,
         ("shop.Order.remark", Rule.RESERVED_NUMBER_REUSED)),
    Case("reserved-number-reused-same-type", shop(order(drop=("comment",), reserved=(6,)), ITEM, STATUS),
         shop(order(fld("comment", 6, "string"), drop=("comment",)), ITEM, STATUS), "shop.Order", False,
         ("shop.Order.comment", Rule.RESERVED_NUMBER_REUSED)),
    Case("number-reused-other-name-and-type", V1, shop(order(replace={"comment": fld("priority", 6, "int64")}), ITEM, STATUS),
         "shop.Order", False, ("shop.Order.comment", Rule.FIELD_NUMBER_REUSED)),
    Case("enum-value-removed", V1, shop(order(), ITEM, enum("Status", "STATUS_UNSPECIFIED", "STATUS_OPEN")),
         "shop.Order", False, ("shop.Status.STATUS_PAID", Rule.ENUM_VALUE_REMOVED)),
    Case("enum-removed", fds(pfile(msg("M", fld("a", 1, "int32")), enum("Color", "RED"))),
         fds(pfile(msg("M", fld("a", 1, "int32")))), None, False, ("shop.Color", Rule.ENUM_REMOVED)),
    Case("nested-type-change-recursed", V1, shop(order(), msg("Item", fld("sku", 1, "string"), fld("quantity", 2, "sint32")), STATUS),
         "shop.Order", False, ("shop.Item.quantity", Rule.FIELD_TYPE_CHANGED)),
    Case("unrelated-change-all-messages", shop(order(), ITEM, STATUS, msg("Other", fld("x", 1, "int32"))),
         shop(order(), ITEM, STATUS, msg("Other", fld("x", 1, "string"))), None, False, ("shop.Other.x", Rule.FIELD_TYPE_CHANGED)),
    Case("required-field-added", proto2(msg("M", fld("a", 1, "int32"))),
         proto2(msg("M", fld("a", 1, "int32"), fld("b", 2, "int32", required=True))), "shop.M", False,
         ("shop.M.b", Rule.REQUIRED_FIELD_ADDED)),
    Case("became-required", proto2(msg("M", fld("a", 1, "int32"))), proto2(msg("M", fld("a", 1, "int32", required=True))),
         "shop.M", False, ("shop.M.a", Rule.FIELD_BECAME_REQUIRED)),
    Case("default-changed", proto2(msg("M", fld("a", 1, "int32", default="1"))), proto2(msg("M", fld("a", 1, "int32", default="2"))),
         "shop.M", False, ("shop.M.a", Rule.FIELD_DEFAULT_CHANGED)),
    Case("fields-merged-into-oneof", fds(pfile(msg("M", fld("a", 1, "int32"), fld("b", 2, "string")))),
         fds(pfile(oneof_msg("M", {"choice": [fld("a", 1, "int32"), fld("b", 2, "string")]}))), "shop.M", False,
         ("shop.M.a", Rule.ONEOF_CHANGED)),
    Case("group-to-message", proto2(msg("M", fld("g", 1, "group .shop.M.G"), nested=(msg("G", fld("x", 2, "int32")),))),
         proto2(msg("M", fld("g", 1, ".shop.M.G"), nested=(msg("G", fld("x", 2, "int32")),))), "shop.M", False,
         ("shop.M.g", Rule.FIELD_TYPE_CHANGED)),
] + [
    Case(f"type-{a}-{b}", single(a), single(b), "shop.M", False, ("shop.M.v", Rule.FIELD_TYPE_CHANGED))
    for a, b in [("int64", "int32"), ("uint64", "uint32"), ("int32", "uint32"), ("int32", "sint32"), ("int32", "sint64"),
                 ("fixed32", "fixed64"), ("fixed32", "uint32"), ("sfixed32", "sfixed64"), ("float", "double"),
                 ("bool", "int32"), ("int32", "bool"), ("int64", "uint64"), ("uint32", "int32"), ("bytes", ".shop.M"),
                 ("int32", "enum .shop.E"), ("enum .shop.E", "int32")]
]


def _with_e(s: descriptor_pb2.FileDescriptorSet) -> descriptor_pb2.FileDescriptorSet:
    if not any(e.name == "E" for e in s.file[-1].enum_type):
        s.file[-1].enum_type.add().CopyFrom(enum("E", "E0"))
    return s


for _c in REJECT:
    if _c.id.startswith("type-") and "enum" in _c.id:
        _with_e(_c.old), _with_e(_c.new)


@pytest.mark.parametrize("case", ACCEPT + REJECT, ids=lambda c: f"{'accept' if c.compatible else 'reject'}-{c.id}")
def test_policy_table(case: Case) -> None:
    result = check_compatibility(case.old, case.new, case.root)
    assert result.compatible is case.compatible, str(result)
    assert bool(result) is case.compatible
    if case.compatible:
        assert result.reasons == []
        if case.expect is None:
            assert result.notes == [], result.notes
        else:
            assert any(case.expect in n for n in result.notes), result.notes
    else:
        path, rule = case.expect  # type: ignore[misc]
        assert (path, rule) in [(r.path, r.rule) for r in result.reasons], str(result)
        # the reason names the field/type it is about
        assert all(r.detail for r in result.reasons)


@pytest.mark.parametrize("case", [c for c in ACCEPT + REJECT if c.valid], ids=lambda c: c.id)
def test_table_fixtures_are_valid_descriptor_sets(case: Case) -> None:
    """Guards the DSL: every fixture must load into a real DescriptorPool."""
    for s in (case.old, case.new):
        pool = build_pool(s)
        if case.root:
            name = case.root if s is case.old or case.compatible else None
            if name:
                pool.FindMessageTypeByName(name)


def test_reverse_of_widening_is_rejected() -> None:
    for a, b in WIRE_COMPATIBLE_TYPE_CHANGES:
        na, nb = FDP.Type.Name(a)[5:].lower(), FDP.Type.Name(b)[5:].lower()
        expected = (b, a) in WIRE_COMPATIBLE_TYPE_CHANGES
        assert bool(check_compatibility(single(nb), single(na), "shop.M")) is expected, (nb, na)


def test_wire_compatible_table_is_exactly_the_documented_pairs() -> None:
    names = {(FDP.Type.Name(a)[5:].lower(), FDP.Type.Name(b)[5:].lower()) for a, b in WIRE_COMPATIBLE_TYPE_CHANGES}
    assert names == {("int32", "int64"), ("uint32", "uint64"), ("uint32", "int64"), ("sint32", "sint64"),
                     ("string", "bytes"), ("bytes", "string")}
    doc = (REPO / "docs" / "protobuf-compat.md").read_text()
    for a, b in names:
        assert f"`{a}` → `{b}`" in doc


# --------------------------------------------------------------------------
# the accepted pairs really decode identically (real encode/decode round trip)
# --------------------------------------------------------------------------

_EDGE = {
    "int32": [0, 1, -1, 2**31 - 1, -(2**31), 300],
    "uint32": [0, 1, 2**32 - 1, 2**31],
    "sint32": [0, 1, -1, 2**31 - 1, -(2**31)],
    "string": ["", "abc", "äöü €", "\U0001F600"],
    "bytes": [b"", b"abc", "äöü".encode()],
}


def _cls(s: descriptor_pb2.FileDescriptorSet):
    return message_factory.GetMessageClass(build_pool(s).FindMessageTypeByName("shop.M"))


@pytest.mark.parametrize("pair", sorted(WIRE_COMPATIBLE_TYPE_CHANGES), ids=lambda p: f"{FDP.Type.Name(p[0])}->{FDP.Type.Name(p[1])}")
@pytest.mark.parametrize("repeated", [False, True])
def test_accepted_pairs_decode_identically(pair: tuple[int, int], repeated: bool) -> None:
    a, b = (FDP.Type.Name(t)[5:].lower() for t in pair)
    Old, New = _cls(single(a, repeated=repeated)), _cls(single(b, repeated=repeated))
    for v in _EDGE[a]:
        old = Old(v=[v, v] if repeated else v)
        new = New.FromString(old.SerializeToString())
        got = list(new.v) if repeated else new.v
        if a == "string" and b == "bytes":
            v = v.encode()
        elif a == "bytes" and b == "string":
            v = v.decode()
        assert got == ([v, v] if repeated else v), (a, b, v)


def test_a_rejected_pair_really_breaks_on_the_wire() -> None:
    Old, New = _cls(single("fixed32")), _cls(single("fixed64"))
    data = Old(v=7).SerializeToString()
    assert New.FromString(data).v != 7  # wire type 5 vs 1: value lands in unknown fields


# --------------------------------------------------------------------------
# result object / API surface
# --------------------------------------------------------------------------


def test_result_str_and_bool() -> None:
    bad = check_compatibility(V1, shop(order(replace={"amount": fld("amount", 2, "string")}), ITEM, STATUS), "shop.Order")
    assert not bad and isinstance(bad, CompatibilityResult)
    text = str(bad)
    assert text.startswith("INCOMPATIBLE (root shop.Order): 1 reason")
    assert "shop.Order.amount: [field-type-changed] type changed int32 -> string" in text
    assert bad.reasons == [Incompatibility("shop.Order.amount", Rule.FIELD_TYPE_CHANGED, "type changed int32 -> string")]
    good = check_compatibility(V1, shop(order(fld("note", 7, "string")), ITEM, STATUS))
    assert good and str(good).startswith("COMPATIBLE (all messages)")
    assert "notes:\n  - field shop.Order.note (7) added" in str(good)
    assert good.to_dict() == {"compatible": True, "message": None, "reasons": [],
                              "notes": ["field shop.Order.note (7) added"]}


def test_accepts_serialized_bytes_and_leading_dot() -> None:
    new = shop(order(replace={"amount": fld("amount", 2, "bool")}), ITEM, STATUS)
    result = check_compatibility(V1.SerializeToString(), new.SerializeToString(), ".shop.Order")
    assert not result and result.message == "shop.Order"


def test_unknown_root_and_bad_input_raise() -> None:
    with pytest.raises(ValueError, match="shop.Nope"):
        check_compatibility(V1, V1, "shop.Nope")
    with pytest.raises(ValueError):
        check_compatibility(b"\xff\xff\xff", V1)
    with pytest.raises(TypeError):
        check_compatibility("shop.proto", V1)  # type: ignore[arg-type]


def test_each_rejected_reason_reported_once_per_field() -> None:
    # Item is referenced twice (from Order and from Cart); its problem is reported once
    cart = msg("Cart", fld("items", 1, ".shop.Item", repeated=True))
    old = shop(order(), ITEM, STATUS, cart)
    new = shop(order(), msg("Item", fld("sku", 1, "int32"), fld("quantity", 2, "uint32")), STATUS, cart)
    result = check_compatibility(old, new)
    assert [r.path for r in result.reasons] == ["shop.Item.sku"]


def test_recursive_message_terminates() -> None:
    node = msg("Node", fld("children", 1, ".shop.Node", repeated=True), fld("v", 2, "int32"))
    node2 = msg("Node", fld("children", 1, ".shop.Node", repeated=True), fld("v", 2, "string"))
    result = check_compatibility(fds(pfile(node)), fds(pfile(node2)), "shop.Node")
    assert [(r.path, r.rule) for r in result.reasons] == [("shop.Node.v", Rule.FIELD_TYPE_CHANGED)]


def test_renamed_message_hint_names_candidate() -> None:
    new = shop(order(replace={"items": fld("items", 4, ".shop.Product", repeated=True)}), STATUS,
               msg("Product", fld("sku", 1, "string"), fld("quantity", 2, "uint32")))
    reason = next(r for r in check_compatibility(V1, new).reasons if r.path == "shop.Item")
    assert "shop.Product" in reason.detail


def test_load_descriptor_set(tmp_path: Path) -> None:
    p = tmp_path / "x.desc"
    p.write_bytes(V1.SerializeToString())
    assert load_descriptor_set(p) == V1
    assert load_descriptor_set(str(p)) == V1
    assert load_descriptor_set(V1.SerializeToString()) == V1
    with pytest.raises(ValueError, match="empty"):
        load_descriptor_set(b"")
    with pytest.raises(ValueError):
        load_descriptor_set(b"\x0a\x02\x08\x01")  # a file entry without a name
    with pytest.raises(OSError):
        load_descriptor_set(tmp_path / "missing.desc")


# --------------------------------------------------------------------------
# protoc-compiled fixtures (tests/unit/protos/compat)
# --------------------------------------------------------------------------


def test_protoc_fixtures() -> None:
    v1, ok, bad = (load_descriptor_set(FIXTURES / f"{n}.desc") for n in ("v1", "v2_ok", "v2_bad"))
    assert [f.name for f in v1.file] == [TS_FILE, "shop.proto"]
    good = check_compatibility(v1, ok, "shop.Order")
    assert good, str(good)
    assert "field shop.Item.quantity (2) renamed to 'qty' (wire-identical; only JSON/text encodings use field names)" in good.notes
    result = check_compatibility(v1, bad, "shop.Order")
    assert sorted((r.path, r.rule) for r in result.reasons) == [
        ("shop.Item.quantity", Rule.FIELD_CARDINALITY_CHANGED),
        ("shop.Order.amount", Rule.FIELD_TYPE_CHANGED),
        ("shop.Order.comment", Rule.FIELD_TYPE_CHANGED),
        ("shop.Status.STATUS_PAID", Rule.ENUM_VALUE_REMOVED),
    ]


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def run_cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "serdes.protobuf.compat", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)


def test_cli_compatible() -> None:
    r = run_cli(FIXTURES / "v1.desc", FIXTURES / "v2_ok.desc", "--message", "shop.Order")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("COMPATIBLE (root shop.Order)")


def test_cli_incompatible() -> None:
    r = run_cli(FIXTURES / "v1.desc", FIXTURES / "v2_bad.desc")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("INCOMPATIBLE (all messages): 4 reasons")
    for path in ("shop.Order.amount", "shop.Order.comment", "shop.Status.STATUS_PAID", "shop.Item.quantity"):
        assert f"  - {path}: [" in r.stdout


def test_cli_json(tmp_path: Path) -> None:
    old, new = tmp_path / "old.desc", tmp_path / "new.desc"
    old.write_bytes(V1.SerializeToString())
    new.write_bytes(shop(order(drop=("comment",)), ITEM, STATUS).SerializeToString())
    r = run_cli(old, new, "--json", "-m", "shop.Order")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["compatible"] is False
    assert data["reasons"][0]["path"] == "shop.Order.comment"
    assert data["reasons"][0]["rule"] == "field-removed-unreserved"


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("only-one.desc",),
        ("MISSING", "MISSING"),
        ("GARBAGE", "V1"),
        ("V1", "V1", "--message", "shop.Nope"),
        ("V1", "V1", "--bogus"),
    ],
    ids=["no-args", "one-arg", "missing-files", "garbage-file", "unknown-message", "unknown-option"],
)
def test_cli_usage_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    files = {"V1": FIXTURES / "v1.desc", "MISSING": tmp_path / "missing.desc", "GARBAGE": tmp_path / "garbage.desc"}
    files["GARBAGE"].write_bytes(b"\xff\x00 not a descriptor set")
    r = run_cli(*(files.get(a, a) for a in args))
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr


def test_cli_unqualified_message_suggests_the_full_name() -> None:
    """``--message Order`` when the file defines ``shop.Order``: a usage error that names ``shop.Order``."""
    r = run_cli(FIXTURES / "v1.desc", FIXTURES / "v2_ok.desc", "--message", "Order")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "'Order' is not defined" in r.stderr and "did you mean 'shop.Order'?" in r.stderr
    r = run_cli(FIXTURES / "v1.desc", FIXTURES / "v2_ok.desc", "--message", "other.Item")  # same last part
    assert r.returncode == 2 and "did you mean 'shop.Item'?" in r.stderr
    r = run_cli(FIXTURES / "v1.desc", FIXTURES / "v2_ok.desc", "--message", "Nope")  # nothing close: no hint
    assert r.returncode == 2 and "did you mean" not in r.stderr


def test_main_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURES / "v1.desc"), str(FIXTURES / "v1.desc")]) == 0
    assert capsys.readouterr().out.startswith("COMPATIBLE")
    assert main([str(FIXTURES / "v1.desc"), str(FIXTURES / "v2_bad.desc"), "-m", "shop.Item"]) == 1
    out = capsys.readouterr().out
    assert "shop.Item.quantity" in out and "shop.Order.amount" not in out


# --------------------------------------------------------------------------
# descriptor_set_for
# --------------------------------------------------------------------------


def _dynamic_order_class():
    pool = build_pool(V1)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def _assert_dependency_order(s: descriptor_pb2.FileDescriptorSet) -> None:
    names = [f.name for f in s.file]
    assert len(names) == len(set(names)), names
    for i, f in enumerate(s.file):
        for dep in f.dependency:
            assert dep in names[:i], (f.name, dep, names)


def test_descriptor_set_for_round_trip() -> None:
    Order = _dynamic_order_class()
    s = descriptor_set_for(Order)
    assert [f.name for f in s.file] == [TS_FILE, "shop.proto"]
    pool = build_pool(s)  # fresh pool, built only from the set
    d = pool.FindMessageTypeByName("shop.Order")
    assert [f.name for f in d.fields] == ["id", "amount", "status", "items", "created", "comment"]
    assert d.fields_by_name["created"].message_type.full_name == "google.protobuf.Timestamp"
    # values written with the original class decode with the round-tripped one
    data = Order(id="o1", amount=-5).SerializeToString()
    again = message_factory.GetMessageClass(d).FromString(data)
    assert (again.id, again.amount) == ("o1", -5)
    assert check_compatibility(s, V1, "shop.Order") and check_compatibility(V1, s)


def test_descriptor_set_for_accepts_instances_and_descriptors() -> None:
    Order = _dynamic_order_class()
    expected = descriptor_set_for(Order)
    assert descriptor_set_for(Order()) == expected
    assert descriptor_set_for(Order.DESCRIPTOR) == expected
    assert descriptor_set_for(Order.DESCRIPTOR.file) == expected
    assert descriptor_set_for(Order.DESCRIPTOR.fields_by_name["status"].enum_type) == expected
    with pytest.raises(TypeError):
        descriptor_set_for(42)


def test_descriptor_set_for_transitive_imports_in_order() -> None:
    # api.proto -> source_context.proto, type.proto; type.proto -> any.proto, source_context.proto
    s = descriptor_set_for(api_pb2.Api)
    names = [f.name for f in s.file]
    assert names[-1] == "google/protobuf/api.proto"
    assert set(names) == {"google/protobuf/api.proto", "google/protobuf/source_context.proto",
                          "google/protobuf/type.proto", "google/protobuf/any.proto"}
    _assert_dependency_order(s)
    build_pool(s).FindMessageTypeByName("google.protobuf.Api")


def test_descriptor_set_for_wkt() -> None:
    s = descriptor_set_for(timestamp_pb2.Timestamp)
    assert [f.name for f in s.file] == [TS_FILE]
    assert check_compatibility(s, s, "google.protobuf.Timestamp").notes == []


# --------------------------------------------------------------------------
# property: identical and purely additive changes are always accepted
# --------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

_SCALAR_NAMES = sorted(SCALARS)


@settings(max_examples=50, deadline=None)
@given(
    types=st.lists(st.sampled_from(_SCALAR_NAMES), min_size=1, max_size=8),
    repeated=st.lists(st.booleans(), min_size=8, max_size=8),
    added=st.lists(st.sampled_from(_SCALAR_NAMES), max_size=4),
)
def test_property_additive_changes_accepted(types: list[str], repeated: list[bool], added: list[str]) -> None:
    fields = [fld(f"f{i}", i + 1, t, repeated=repeated[i] and t not in ("group",)) for i, t in enumerate(types)]
    extra = [fld(f"n{i}", 100 + i, t) for i, t in enumerate(added)]
    old = fds(pfile(msg("M", *fields)))
    new = fds(pfile(msg("M", *fields, *extra)))
    result = check_compatibility(old, new, "shop.M")
    assert result.compatible, str(result)
    assert len(result.notes) == len(extra)
    # and removing them again without reserving is rejected
    if extra:
        back = check_compatibility(new, old, "shop.M")
        assert {r.rule for r in back.reasons} == {Rule.FIELD_REMOVED_UNRESERVED}
