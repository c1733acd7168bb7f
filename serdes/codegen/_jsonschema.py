"""JSON Schema -> the model of a module: objects with ``properties`` -> classes.

Required properties without a default are plain fields; the others are ``Optional[X] = None`` (or
their ``default``). ``$ref`` resolves inside the document (``#/$defs/...``, ``#/definitions/...``,
any JSON pointer) and into the given references (``other.json`` or ``other.json#/...``, by
reference name); nothing is fetched. Each referenced object is one class, recursive ones too.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Set, Tuple, Union
from urllib.parse import unquote

from ._avro import parse_json
from ._emit import (
    ANY, NONE, PRIMS, Budget, ClassSpec, CodegenError, EnumSpec, ListOf, LiteralOf, MapOf, Module, Names, Type, union,
)

__all__ = ["jsonschema_module"]

_TYPES: Dict[str, Type] = {
    "string": PRIMS["str"], "integer": PRIMS["int"], "number": PRIMS["float"], "boolean": PRIMS["bool"], "null": NONE,
}
_WORD = re.compile(r"[0-9A-Za-z]+")


def _pascal(hint: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in _WORD.findall(hint))


def _scalar(v: Any) -> bool:
    """A value ``typing.Literal`` takes as its repr (NaN and infinities have no literal)."""
    return v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v))


class _Builder:
    def __init__(self, budget: Budget, docs: Dict[str, Any]) -> None:
        self.budget = budget
        self.docs = docs
        self.names = Names()
        self.classes: List[Union[ClassSpec, EnumSpec]] = []
        self.memo: Dict[Tuple[str, str], Type] = {}
        self.resolving: Set[Tuple[str, str]] = set()
        self.refs = 0

    # -- $ref -----------------------------------------------------------------------------------------
    def resolve(self, ref: Any, doc: str, depth: int) -> Type:
        if not isinstance(ref, str):
            raise CodegenError(f"a $ref must be a string, not {type(ref).__name__}")
        self.budget.name(ref, "a $ref")
        target, _, fragment = ref.partition("#")
        target_doc = doc if target == "" else target
        if target_doc not in self.docs:
            raise CodegenError(
                f"$ref {ref!r} is not in the schema or its references (serdes.codegen fetches nothing)"
            )
        key = (target_doc, fragment)
        if key in self.memo:
            return self.memo[key]
        if key in self.resolving:
            raise CodegenError(f"$ref {ref!r} refers to itself without an object in between")
        self.refs += 1
        if self.refs > self.budget.limits.max_types:
            raise CodegenError(f"the schema follows more than {self.budget.limits.max_types} $refs")
        node = self.docs[target_doc]
        if fragment:
            if not fragment.startswith("/"):
                raise CodegenError(f"$ref {ref!r}: only JSON pointers (#/...) are supported, not anchors")
            for part in fragment[1:].split("/"):
                part = unquote(part).replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and part in node:
                    node = node[part]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    raise CodegenError(f"$ref {ref!r} points at nothing")
        hint = fragment.rsplit("/", 1)[-1] if fragment else target_doc.rsplit("/", 1)[-1].split(".")[0]
        name = ("" if target_doc == "" else target_doc) + "#" + fragment
        self.resolving.add(key)
        try:
            t = self.type(node, target_doc, depth + 1, hint, name, key)
        finally:
            self.resolving.discard(key)
        self.memo[key] = t
        return t

    # -- types ----------------------------------------------------------------------------------------
    def type(self, s: Any, doc: str, depth: int, hint: str, name: str,
             key: Optional[Tuple[str, str]] = None) -> Type:
        """``key``: the $ref this schema is the target of (memoized before the properties, so that
        an object may refer to itself)."""
        self.budget.depth(depth, name)
        if isinstance(s, bool):
            return ANY
        if not isinstance(s, dict):
            raise CodegenError(f"{name}: a JSON schema must be an object or a boolean, not {type(s).__name__}")
        if "$ref" in s:
            return self.resolve(s["$ref"], doc, depth)
        if "enum" in s:
            values = s["enum"]
            if not isinstance(values, list) or not values:
                raise CodegenError(f"{name}: enum must be a non-empty list")
            if all(isinstance(v, str) for v in values):
                return self.enum(s, values, hint, name, key)
            if all(_scalar(v) for v in values):
                return LiteralOf(tuple(values))
            return ANY
        if "const" in s:
            return LiteralOf((s["const"],)) if _scalar(s["const"]) else ANY
        for combo in ("anyOf", "oneOf"):
            if combo in s:
                members = s[combo]
                if not isinstance(members, list) or not members:
                    raise CodegenError(f"{name}: {combo} must be a non-empty list")
                return union([self.type(m, doc, depth + 1, f"{hint}{i}", f"{name}/{combo}/{i}")
                              for i, m in enumerate(members)])
        if "allOf" in s:
            return self.all_of(s, doc, depth, hint, name, key)
        t = s.get("type")
        if isinstance(t, list):
            if not t:
                raise CodegenError(f"{name}: type must not be an empty list")
            return union([self.one_type(s, x, doc, depth, hint, name, key) for x in t])
        if t is None:
            if "properties" in s:
                t = "object"
            elif "items" in s or "prefixItems" in s:
                t = "array"
            else:
                return ANY
        return self.one_type(s, t, doc, depth, hint, name, key)

    def one_type(self, s: Dict[str, Any], t: Any, doc: str, depth: int, hint: str, name: str,
                 key: Optional[Tuple[str, str]]) -> Type:
        if isinstance(t, str) and t in _TYPES:
            return _TYPES[t]
        if t == "array":
            items = s.get("items")
            if isinstance(items, (dict, bool)):
                return ListOf(self.type(items, doc, depth + 1, hint + "Item", f"{name}/items"))
            return ListOf(ANY)
        if t == "object":
            props = s.get("properties")
            if isinstance(props, dict) and props:
                return self.object(s, props, doc, depth, hint, name, key)
            extra = s.get("additionalProperties")
            if isinstance(extra, dict):
                return MapOf(PRIMS["str"], self.type(extra, doc, depth + 1, hint + "Value", f"{name}/additionalProperties"))
            return MapOf(PRIMS["str"], ANY)
        raise CodegenError(f"{name}: unknown type {t!r}")

    def all_of(self, s: Dict[str, Any], doc: str, depth: int, hint: str, name: str,
               key: Optional[Tuple[str, str]]) -> Type:
        members = s["allOf"]
        if not isinstance(members, list) or not members:
            raise CodegenError(f"{name}: allOf must be a non-empty list")
        if len(members) == 1 and len(s) == 1:
            return self.type(members[0], doc, depth + 1, hint, f"{name}/allOf/0")
        # the object all of them describe: their properties and required lists together
        merged: Dict[str, Any] = {k: v for k, v in s.items() if k != "allOf"}
        props: Dict[str, Any] = dict(merged.get("properties") or {})
        required: List[Any] = list(merged.get("required") or [])
        for i, m in enumerate(members):
            seen = 0
            while isinstance(m, dict) and "$ref" in m:  # an object given by reference
                seen += 1
                self.budget.depth(depth + seen, f"{name}/allOf/{i}")
                m = self._target(m["$ref"], doc)
            if not isinstance(m, dict):
                continue
            props.update(m.get("properties") or {})
            required += list(m.get("required") or [])
        if not props:
            return ANY
        merged.update({"type": "object", "properties": props, "required": required})
        return self.object(merged, props, doc, depth, hint, name, key)

    def _target(self, ref: Any, doc: str) -> Any:
        if not isinstance(ref, str):
            raise CodegenError("a $ref must be a string")
        target, _, fragment = ref.partition("#")
        node = self.docs.get(doc if target == "" else target)
        if node is None:
            raise CodegenError(f"$ref {ref!r} is not in the schema or its references (serdes.codegen fetches nothing)")
        for part in fragment[1:].split("/") if fragment.startswith("/") else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def enum(self, s: Dict[str, Any], values: List[str], hint: str, name: str,
             key: Optional[Tuple[str, str]]) -> EnumSpec:
        for v in values:
            self.budget.name(v, f"a value of enum {name!r}", empty=True)
            self.budget.add_field(name)
        if len(set(values)) != len(values):
            raise CodegenError(f"{name}: enum repeats a value")
        title = s.get("title")
        self.budget.add_type(name)
        e = EnumSpec(self.names.class_name(*self._candidates(title, hint)), title if isinstance(title, str) else name)
        e.set_symbols(values)
        self.classes.append(e)
        if key is not None:
            self.memo[key] = e
        return e

    def _candidates(self, title: Any, hint: str) -> List[str]:
        out = []
        if isinstance(title, str) and title:
            self.budget.name(title, "a title")
            out.append(_pascal(title) or title)
        out.append(_pascal(hint) or "Object")
        return out

    def object(self, s: Dict[str, Any], props: Dict[str, Any], doc: str, depth: int, hint: str, name: str,
               key: Optional[Tuple[str, str]]) -> ClassSpec:
        title = s.get("title")
        self.budget.add_type(name)
        c = ClassSpec(self.names.class_name(*self._candidates(title, hint)), title if isinstance(title, str) else name)
        self.classes.append(c)
        if key is not None:
            self.memo[key] = c  # before the properties: they may refer back to this object
        required = s.get("required") or []
        if not isinstance(required, list):
            raise CodegenError(f"{name}: required must be a list")
        for prop, sub in props.items():
            self.budget.name(prop, f"a property of {name!r}", empty=True)
            self.budget.add_field(f"{name}.{prop}")
            where = f"{name}/properties/{prop}"
            t = self.type(sub, doc, depth + 1, prop, where)
            has_default = isinstance(sub, dict) and "default" in sub
            default = sub.get("default") if isinstance(sub, dict) else None
            if prop in required:
                c.add_field(prop, t, has_default, default)
            else:
                opt = union([t, NONE])
                c.add_field(prop, opt, True, default if has_default else None)
                if not has_default and union([t]) != opt:  # the schema does not take null here
                    c.omit_none.append(prop)
        return c


def jsonschema_module(text: str, style: str, budget: Budget, references: Dict[str, str]) -> Module:
    docs: Dict[str, Any] = {}
    for ref_name, ref_text in references.items():
        budget.name(ref_name, "a reference name")
        docs[ref_name] = parse_json(ref_text, f"JSON schema reference {ref_name!r}", budget)
    root = parse_json(text, "the JSON schema", budget)
    docs[""] = root
    b = _Builder(budget, docs)
    t = b.type(root, "", 0, "Root", "#", ("", ""))
    if not isinstance(t, ClassSpec):
        raise CodegenError(
            "the JSON schema's top level is not an object with properties (nothing to generate a class for)"
        )
    return Module("a JSON schema", style, b.classes, json.dumps(root, separators=(",", ":")))
