"""Avro schema (JSON) -> the model of a module: records -> classes, enums -> ``str`` enums.

Named types are resolved as the Avro specification says (full names from ``namespace`` or the
enclosing one; a short name looks in the enclosing namespace, then in the null namespace).
Named types of the schema's references (registry references, already fetched) are defined where the
schema first uses them, in the module and in ``SCHEMA`` -- so ``SCHEMA`` is one self-contained
schema, usable as a reader schema without the references.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence, Set, Tuple

from ._emit import (
    NONE, PRIMS, Budget, ClassSpec, CodegenError, EnumSpec, ListOf, MapOf, Module, Names, Prim, Type, union,
)

__all__ = ["avro_module"]

_PRIMITIVES: Dict[str, Type] = {
    "null": NONE, "boolean": PRIMS["bool"], "int": PRIMS["int"], "long": PRIMS["int"],
    "float": PRIMS["float"], "double": PRIMS["float"], "string": PRIMS["str"], "bytes": PRIMS["bytes"],
}
# logicalType -> (the underlying types it applies to, the Python type); on others it is ignored,
# as the specification says
_LOGICAL: Dict[str, Tuple[Tuple[str, ...], Prim]] = {
    "date": (("int",), Prim("datetime.date", "date")),
    "time-millis": (("int",), Prim("datetime.time", "time-millis")),
    "time-micros": (("long",), Prim("datetime.time", "time-micros")),
    "timestamp-millis": (("long",), Prim("datetime.datetime", "timestamp-millis")),
    "timestamp-micros": (("long",), Prim("datetime.datetime", "timestamp-micros")),
    "local-timestamp-millis": (("long",), Prim("datetime.datetime", "local-timestamp-millis")),
    "local-timestamp-micros": (("long",), Prim("datetime.datetime", "local-timestamp-micros")),
    "uuid": (("string",), Prim("uuid.UUID", "uuid")),
}
_NAMED = ("record", "error", "enum", "fixed")


def parse_json(text: str, what: str, budget: Budget) -> Any:
    budget.text(text, what)
    try:
        return json.loads(text)
    except RecursionError:
        raise CodegenError(f"{what} nests deeper than {budget.limits.max_depth} levels") from None
    except ValueError as e:
        raise CodegenError(f"{what} is not JSON: {e}") from None


class _Builder:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.names = Names()
        self.classes: List[Any] = []
        self.built: Dict[str, Type] = {}
        self.defs: Dict[str, Tuple[Any, str]] = {}  # named types of the references: (definition, namespace)
        self.from_refs: Set[str] = set()

    # -- references: their named types, defined on first use ----------------------------------------
    def collect(self, s: Any, ns: str, depth: int) -> None:
        self.budget.depth(depth, "a schema reference")
        if isinstance(s, list):
            for m in s:
                self.collect(m, ns, depth + 1)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in _NAMED:
                full, space = self.full_name(s, ns)
                self.defs.setdefault(full, (s, ns))
                if t in ("record", "error"):
                    for f in s.get("fields") or []:
                        if isinstance(f, dict):
                            self.collect(f.get("type"), space, depth + 1)
            elif t == "array":
                self.collect(s.get("items"), ns, depth + 1)
            elif t == "map":
                self.collect(s.get("values"), ns, depth + 1)
            elif isinstance(t, (dict, list)):
                self.collect(t, ns, depth + 1)

    # -- names ----------------------------------------------------------------------------------------
    def full_name(self, s: Dict[str, Any], ns: str) -> Tuple[str, str]:
        name = self.budget.name(s.get("name"), f"the name of an Avro {s.get('type')}")
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        space = s.get("namespace", ns)
        if space is None:
            space = ""
        if not isinstance(space, str):
            raise CodegenError(f"the namespace of Avro type {name!r} must be a string")
        self.budget.name(space or "x", f"the namespace of Avro type {name!r}")
        return (f"{space}.{name}" if space else name), space

    def lookup(self, name: str, ns: str, depth: int) -> Tuple[Type, Any]:
        self.budget.name(name, "an Avro type name")
        candidates = [name] if "." in name or not ns else [f"{ns}.{name}", name]
        for full in candidates:
            if full in self.built:
                return self.built[full], full
        for full in candidates:
            if full in self.defs:
                s, dns = self.defs[full]
                return self.named(s, dns, depth)
        raise CodegenError(f"Avro type {name!r} is not defined (before its use) in the schema or its references")

    # -- types ----------------------------------------------------------------------------------------
    def type(self, s: Any, ns: str, depth: int, where: str) -> Tuple[Type, Any]:
        """The model type of schema ``s`` and ``s`` as it goes into SCHEMA."""
        self.budget.depth(depth, where)
        if isinstance(s, str):
            if s in _PRIMITIVES:
                return _PRIMITIVES[s], s
            return self.lookup(s, ns, depth)
        if isinstance(s, list):
            parts = [self.type(m, ns, depth + 1, where) for m in s]
            if not parts:
                raise CodegenError(f"{where}: an Avro union needs at least one type")
            return union([t for t, _ in parts]), [j for _, j in parts]
        if not isinstance(s, dict):
            raise CodegenError(f"{where}: {type(s).__name__} is not an Avro schema")
        t = s.get("type")
        if t in _NAMED:
            return self.named(s, ns, depth)
        if t == "array":
            item, js = self.type(s.get("items"), ns, depth + 1, where)
            return ListOf(item), {**s, "items": js}
        if t == "map":
            value, js = self.type(s.get("values"), ns, depth + 1, where)
            return MapOf(PRIMS["str"], value), {**s, "values": js}
        if isinstance(t, str) and t in _PRIMITIVES:
            logical = s.get("logicalType")
            if logical == "decimal" and t == "bytes":
                return _decimal(s), s
            if isinstance(logical, str) and logical in _LOGICAL and t in _LOGICAL[logical][0]:
                return _LOGICAL[logical][1], s
            return _PRIMITIVES[t], s
        if isinstance(t, (str, dict, list)):  # {"type": "com.example.Name"} or {"type": {...}}
            inner, js = self.type(t, ns, depth + 1, where)
            return inner, {**s, "type": js}
        raise CodegenError(f"{where}: an Avro schema object needs a \"type\"")

    def named(self, s: Dict[str, Any], ns: str, depth: int) -> Tuple[Type, Any]:
        kind = s["type"]
        full, space = self.full_name(s, ns)
        if full in self.built:
            if full in self.from_refs or (full in self.defs and self.defs[full][0] is s):
                return self.built[full], full
            raise CodegenError(f"Avro type {full!r} is defined twice")
        if full in self.defs:
            self.from_refs.add(full)
        self.budget.add_type(full)
        short = full.rsplit(".", 1)[-1]
        if kind == "fixed":
            size = s.get("size")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise CodegenError(f"Avro fixed {full!r} needs a non-negative integer size")
            # (a uuid on fixed(16) decodes as bytes: fastavro reads uuid on strings only)
            t: Type = _decimal(s) if s.get("logicalType") == "decimal" else PRIMS["bytes"]
            self.built[full] = t
            return t, self.placed(s, full)
        if kind == "enum":
            symbols = s.get("symbols")
            if not isinstance(symbols, list):
                raise CodegenError(f"Avro enum {full!r} needs a list of symbols")
            for sym in symbols:
                self.budget.name(sym, f"a symbol of Avro enum {full!r}")
                self.budget.add_field(full)
            if len(set(symbols)) != len(symbols):
                raise CodegenError(f"Avro enum {full!r} repeats a symbol")
            e = EnumSpec(self.names.class_name(short, full.replace(".", "_")), full)
            e.set_symbols(symbols)
            self.built[full] = e
            self.classes.append(e)
            return e, self.placed(s, full)
        fields = s.get("fields")
        if not isinstance(fields, list):
            raise CodegenError(f"Avro record {full!r} needs a list of fields")
        c = ClassSpec(self.names.class_name(short, full.replace(".", "_")), full)
        self.built[full] = c  # before the fields: a field may refer to the record itself
        self.classes.append(c)
        out_fields = []
        wires: Set[str] = set()
        for f in fields:
            if not isinstance(f, dict):
                raise CodegenError(f"a field of Avro record {full!r} is not an object")
            fname = self.budget.name(f.get("name"), f"the name of a field of Avro record {full!r}")
            if fname in wires:
                raise CodegenError(f"Avro record {full!r} has two fields named {fname!r}")
            wires.add(fname)
            self.budget.add_field(f"{full}.{fname}")
            ft, js = self.type(f.get("type"), space, depth + 1, f"field {fname!r} of {full!r}")
            c.add_field(fname, ft, "default" in f, f.get("default"))
            out_fields.append({**f, "type": js})
        return c, self.placed({**s, "fields": out_fields}, full)

    def placed(self, s: Dict[str, Any], full: str) -> Dict[str, Any]:
        """A definition as it goes into SCHEMA: one from a reference is inlined where it is first
        used, so it names its namespace (else it would take the enclosing one there)."""
        if full in self.from_refs and "." not in s["name"]:
            return {**s, "namespace": full.rsplit(".", 1)[0] if "." in full else ""}
        return s


def _decimal(s: Dict[str, Any]) -> Prim:
    scale = s.get("scale", 0)
    if isinstance(scale, bool) or not isinstance(scale, int) or not 0 <= scale <= 1000:
        scale = 0
    return Prim("decimal.Decimal", "decimal", scale)


def avro_module(text: str, style: str, budget: Budget, references: Sequence[str] = ()) -> Module:
    """The module of the Avro schema ``text``; ``references``: the texts of the schemas it refers
    to (registry references, in any order)."""
    b = _Builder(budget)
    for i, ref in enumerate(references):
        b.collect(parse_json(ref, f"Avro schema reference #{i + 1}", budget), "", 0)
    schema = parse_json(text, "the Avro schema", budget)
    _, expanded = b.type(schema, "", 0, "the Avro schema")
    if not b.classes:
        raise CodegenError("the Avro schema defines no record or enum to generate a class for")
    return Module("an Avro schema", style, b.classes, json.dumps(expanded, separators=(",", ":")))
