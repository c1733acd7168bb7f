"""JSON Schemas as Arrow columns.

A schema has a columnar shape when every value it admits has one Arrow type: ``type`` names one
JSON type (optionally with ``"null"``), objects list their ``properties`` (or give one schema for
``additionalProperties``: a map), arrays give one ``items`` schema. Local ``$ref``s
(``#/definitions/...``, ``#/$defs/...``) are followed; a schema that refers to itself, ``oneOf`` /
``anyOf`` of different types, or a property with no ``type`` has none (:class:`NoColumnarShape`).

Objects are *strict* columns: a value with a property the schema does not declare is an error for
its row (a columnar batch has nowhere to keep it, and dropping it silently would change the data).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pyarrow as pa

from ._avro import NoColumnarShape, _is_int
from ._shapes import ListOf, MapOf, Plain, Shape, Struct

__all__ = ["json_shape"]


_SCALARS: Dict[str, Shape] = {
    "string": Plain(pa.utf8(), (str,)),
    "integer": Plain(pa.int64(), check=lambda v: _is_int(v) and -(1 << 63) <= v < (1 << 63)),
    "number": Plain(pa.float64(), check=lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": Plain(pa.bool_(), (bool,)),
    "null": Plain(pa.null(), check=lambda v: v is None),
}


def json_shape(schema: Any, max_depth: int = 64) -> Struct:
    """The columns of a JSON Schema (a dict): an object's properties, or for any other schema one
    column ``value``."""
    if not isinstance(schema, dict):
        raise NoColumnarShape("a JSON Schema that is not an object has no columnar shape")

    def resolve(s: Any, refs: Tuple[str, ...]) -> Tuple[Dict[str, Any], Tuple[str, ...]]:
        while isinstance(s, dict) and "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
                raise NoColumnarShape(f"$ref {ref!r}: only local references have a columnar shape here")
            if ref in refs:
                raise NoColumnarShape(f"$ref {ref} refers to itself: a recursive schema has no columnar shape")
            refs = refs + (ref,)
            node: Any = schema
            for part in ref[2:].split("/") if ref != "#" else ():
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    raise NoColumnarShape(f"$ref {ref} names nothing in the schema")
                node = node[part]
            s = node
        if not isinstance(s, dict):
            raise NoColumnarShape(f"a schema node that is not an object: {s!r}"[:120])
        return s, refs

    def shape(s: Any, refs: Tuple[str, ...], depth: int, path: str) -> Tuple[Shape, bool]:
        if depth > max_depth:
            raise NoColumnarShape(f"the schema nests more than {max_depth} levels")
        s, refs = resolve(s, refs)
        for combinator in ("oneOf", "anyOf"):
            alts = s.get(combinator)
            if isinstance(alts, list):
                non_null = [a for a in alts if resolve(a, refs)[0].get("type") != "null"]
                if len(non_null) != 1:
                    raise NoColumnarShape(f"{path or 'the schema'}: {combinator} of several types has no columnar shape")
                inner, _ = shape(non_null[0], refs, depth + 1, path)
                return inner, len(non_null) < len(alts)
        t = s.get("type")
        types: List[Any] = t if isinstance(t, list) else [t]
        nullable = "null" in types
        types = [x for x in types if x != "null"]
        if "enum" in s and t is None:
            kinds = {type(x) for x in s["enum"] if x is not None}
            if kinds == {str}:
                return _SCALARS["string"], None in s["enum"]
        if len(types) != 1 or types[0] is None:
            what = "no type" if not types or types[0] is None else f"types {types}"
            raise NoColumnarShape(f"{path or 'the schema'} has {what}: no columnar shape")
        t = types[0]
        if t in _SCALARS:
            return _SCALARS[t], nullable
        if t == "array":
            items = s.get("items")
            if not isinstance(items, dict):
                raise NoColumnarShape(f"{path or 'the schema'}: an array without one items schema has no columnar shape")
            item, item_nullable = shape(items, refs, depth + 1, path + "[]")
            return ListOf(item, item_nullable), nullable
        if t == "object":
            props = s.get("properties")
            extra = s.get("additionalProperties")
            if not props and isinstance(extra, dict):
                value, value_nullable = shape(extra, refs, depth + 1, path + ".*")
                return MapOf(_SCALARS["string"], value, value_nullable), nullable
            if not isinstance(props, dict):
                raise NoColumnarShape(f"{path or 'the schema'}: an object without properties has no columnar shape")
            required = set(s.get("required", ()))
            fields = []
            for name, sub in props.items():
                sh, sub_nullable = shape(sub, refs, depth + 1, f"{path}.{name}" if path else name)
                fields.append((name, sh, sub_nullable or name not in required))
            # a null of an optional property is written back as the property left out
            return Struct(fields, strict=True, omit_null=[n for n in props if n not in required]), nullable
        raise NoColumnarShape(f"{path or 'the schema'}: type {t!r} has no columnar shape")

    top, nullable = shape(schema, (), 0, "")
    if isinstance(top, Struct):
        return top
    return Struct([("value", top, nullable)], wrapped=True)

