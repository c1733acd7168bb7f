"""Hypothesis strategies: random Avro schemas, matching records, evolved reader schemas.

Bounded on purpose (depth, field counts, collection sizes) so a differential run stays fast.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import string
from typing import Any, Dict, List

from hypothesis import strategies as st

_UTC = datetime.timezone.utc

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 3},
    {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0},
    {"type": "long", "logicalType": "some-unknown-logical-type"},
]

_names = st.text(string.ascii_letters, min_size=1, max_size=6).map(lambda s: "N" + s)
_field_names = st.text(string.ascii_lowercase, min_size=1, max_size=5).map(lambda s: "f_" + s)


class _Ctx:
    def __init__(self) -> None:
        self.n = 0
        self.named: Dict[str, Any] = {}

    def name(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"


@st.composite
def _schema(draw: Any, ctx: _Ctx, depth: int) -> Any:
    choices = ["prim", "prim", "logical", "enum", "fixed"]
    if depth > 0:
        choices += ["record", "array", "map", "union", "union"]
    if ctx.named:
        choices.append("ref")
    kind = draw(st.sampled_from(choices))
    if kind == "prim":
        return draw(st.sampled_from(PRIMITIVES))
    if kind == "logical":
        return copy.deepcopy(draw(st.sampled_from(LOGICAL)))
    if kind == "enum":
        syms = draw(st.lists(st.sampled_from(["A", "B", "C", "D", "E"]), min_size=1, max_size=5, unique=True))
        s = {"type": "enum", "name": ctx.name("E"), "symbols": syms}
        ctx.named[s["name"]] = s
        return s
    if kind == "fixed":
        size = draw(st.integers(0, 6))
        s: Dict[str, Any] = {"type": "fixed", "name": ctx.name("F"), "size": size}
        if size >= 3 and draw(st.booleans()):
            s.update(logicalType="decimal", precision=6, scale=2)
        ctx.named[s["name"]] = s
        return s
    if kind == "ref":
        return draw(st.sampled_from(sorted(ctx.named)))
    if kind == "record":
        name = ctx.name("R")
        fnames = draw(st.lists(_field_names, min_size=0, max_size=4, unique=True))
        fields = [{"name": fn, "type": draw(_schema(ctx, depth - 1))} for fn in fnames]
        s = {"type": "record", "name": name, "fields": fields}
        ctx.named[name] = s
        return s
    if kind == "array":
        return {"type": "array", "items": draw(_schema(ctx, depth - 1))}
    if kind == "map":
        return {"type": "map", "values": draw(_schema(ctx, depth - 1))}
    # union: distinct primitive kinds plus at most one of each complex kind
    branches: List[Any] = []
    if draw(st.booleans()):
        branches.append("null")
    others = draw(st.lists(st.sampled_from(["boolean", "int", "long", "double", "string", "bytes", "rec", "arr", "map", "enum"]),
                           min_size=1, max_size=3, unique=True))
    for o in others:
        if o == "rec":
            name = ctx.name("U")
            s = {"type": "record", "name": name, "fields": [{"name": "x", "type": draw(st.sampled_from(PRIMITIVES))}]}
            ctx.named[name] = s
            branches.append(s)
        elif o == "arr":
            branches.append({"type": "array", "items": "int"})
        elif o == "map":
            branches.append({"type": "map", "values": "string"})
        elif o == "enum":
            name = ctx.name("UE")
            s = {"type": "enum", "name": name, "symbols": ["X", "Y"]}
            ctx.named[name] = s
            branches.append(s)
        else:
            branches.append(o)
    return branches


@st.composite
def schemas(draw: Any, max_depth: int = 3) -> Dict[str, Any]:
    """A random top-level record schema."""
    ctx = _Ctx()
    fnames = draw(st.lists(_field_names, min_size=1, max_size=6, unique=True))
    fields = [{"name": fn, "type": draw(_schema(ctx, max_depth))} for fn in fnames]
    return {"type": "record", "name": "Top", "namespace": "hyp", "fields": fields}


def _named_table(schema: Any, out: Dict[str, Any]) -> Dict[str, Any]:
    if isinstance(schema, list):
        for s in schema:
            _named_table(s, out)
    elif isinstance(schema, dict):
        t = schema["type"]
        if t in ("record", "enum", "fixed"):
            out[schema["name"]] = schema
        if t == "record":
            for f in schema["fields"]:
                _named_table(f["type"], out)
        elif t == "array":
            _named_table(schema["items"], out)
        elif t == "map":
            _named_table(schema["values"], out)
    return out


_text = st.text(max_size=8)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)


def values(schema: Any, named: Dict[str, Any], depth: int = 0) -> Any:
    """A strategy for values of ``schema`` (what fastavro's writer accepts)."""
    if isinstance(schema, str):
        if schema in named:
            return values(named[schema], named, depth)
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": _int32,
            "long": _int64,
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=8),
            "string": _text,
        }[schema]
    if isinstance(schema, list):
        return st.one_of(*[values(b, named, depth) for b in schema])
    t = schema["type"]
    lt = schema.get("logicalType")
    if lt == "timestamp-millis":
        return st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 1, 1),
                            timezones=st.just(_UTC)).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
    if lt == "timestamp-micros":
        return st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 1, 1),
                            timezones=st.just(_UTC))
    if lt == "local-timestamp-millis":
        return st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 1, 1)).map(
            lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
    if lt == "local-timestamp-micros":
        return st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 1, 1))
    if lt == "date":
        return st.dates()
    if lt == "time-millis":
        return st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
    if lt == "time-micros":
        return st.times()
    if lt == "uuid":
        return st.uuids()
    if lt == "decimal":
        prec, scale = schema["precision"], schema.get("scale", 0)
        digits = min(prec, 2 * schema["size"] - 1) if t == "fixed" else prec
        return st.integers(-(10**digits) + 1, 10**digits - 1).map(
            lambda i: decimal.Decimal(i).scaleb(-scale))
    if t in ("null", "boolean", "int", "long", "float", "double", "bytes", "string"):
        return values(t, named, depth)
    if t == "enum":
        return st.sampled_from(schema["symbols"])
    if t == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if t == "array":
        return st.lists(values(schema["items"], named, depth + 1), max_size=3 if depth < 2 else 1)
    if t == "map":
        return st.dictionaries(_text, values(schema["values"], named, depth + 1), max_size=3 if depth < 2 else 1)
    if t == "record":
        return st.fixed_dictionaries({f["name"]: values(f["type"], named, depth + 1) for f in schema["fields"]})
    raise AssertionError(schema)


@st.composite
def schema_and_record(draw: Any, max_depth: int = 3) -> Any:
    s = draw(schemas(max_depth))
    named = _named_table(s, {})
    return s, draw(values(s, named))


_PROMOTE = {"int": ["long", "float", "double"], "long": ["float", "double"], "float": ["double"],
            "string": ["bytes"], "bytes": ["string"]}


@st.composite
def evolve(draw: Any, writer: Dict[str, Any]) -> Dict[str, Any]:
    """A reader schema derived from ``writer``: fields dropped, added (with/without default),
    reordered, promoted, made nullable or non-nullable, enum symbols dropped/added with default."""
    reader = copy.deepcopy(writer)
    fields = reader["fields"]
    ops = draw(st.lists(st.sampled_from(["drop", "add", "add_nodefault", "reorder", "promote", "nullable",
                                         "unnull", "enum", "enum_default", "alias"]), max_size=3))
    for op in ops:
        if op == "drop" and fields:
            fields.pop(draw(st.integers(0, len(fields) - 1)))
        elif op == "add":
            t, d = draw(st.sampled_from([("int", 7), ("string", "dflt"), (["null", "long"], None),
                                         ({"type": "array", "items": "int"}, [1, 2])]))
            fields.append({"name": "added_" + str(len(fields)), "type": t, "default": d})
        elif op == "add_nodefault":
            fields.append({"name": "nodefault_" + str(len(fields)), "type": "int"})
        elif op == "reorder" and fields:
            i = draw(st.integers(0, len(fields) - 1))
            fields.append(fields.pop(i))
        elif op == "promote":
            for f in fields:
                if isinstance(f["type"], str) and f["type"] in _PROMOTE:
                    f["type"] = draw(st.sampled_from(_PROMOTE[f["type"]]))
                    break
        elif op == "nullable":
            for f in fields:
                if not isinstance(f["type"], list) and f["type"] != "null":
                    f["type"] = ["null", f["type"]]
                    break
        elif op == "unnull":
            for f in fields:
                if isinstance(f["type"], list) and "null" in f["type"] and len(f["type"]) == 2:
                    f["type"] = [b for b in f["type"] if b != "null"][0]
                    break
        elif op in ("enum", "enum_default"):
            for f in fields:
                if isinstance(f["type"], dict) and f["type"].get("type") == "enum" and len(f["type"]["symbols"]) > 1:
                    f["type"]["symbols"] = f["type"]["symbols"][1:] + ["Z"]
                    if op == "enum_default":
                        f["type"]["default"] = "Z"
                    break
        elif op == "alias" and fields:
            f = fields[0]
            f["aliases"] = [f["name"]]
            f["name"] = f["name"] + "_renamed"
    return reader
