"""Checks an Avro schema must pass before serdes generates code for it.

A schema comes from whoever can register under a subject, and fastavro's ``parse_schema`` accepts
any string as a name. serdes never pastes a schema string into generated source (names reach it
only as ``repr()`` literals or namespace constants), and on top of that refuses, with a typed
:class:`SchemaMismatchError` naming the culprit:

* a record/enum/fixed name or namespace with a dot-separated part that does not match the Avro
  specification's ``[A-Za-z_][A-Za-z0-9_]*`` (``O'Brien``, a namespace with quotes or newlines),
  or a named type called like a primitive type (``int``), which the specification forbids;
* a schema nesting deeper than ``serdes.max.schema.depth`` (records, arrays, maps and unions inside
  each other), which bounds the recursion of every build-time walk and the size of generated code;
* a schema whose records have more than ``serdes.max.fields`` fields in all, which bounds the time
  and memory of generating and compiling its code (linear in the fields, ~1 ms each).

Field names and enum symbols are not checked (fastavro and confluent-kafka accept e.g. ``a-b``):
they only ever reach generated code as constants.

The walk is iterative, so a schema nested far past the limit is refused, not a ``RecursionError``.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from fastavro.const import AVRO_TYPES

from .._errors import SchemaMismatchError

__all__ = ["check_schema", "valid_name"]

_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAMED = ("record", "error", "enum", "fixed")
# "Primitive type names have no namespace and their names may not be defined in any namespace."
_PRIMITIVE = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def valid_name(name: Any) -> bool:
    """True for an Avro name or full name: dot-separated parts each ``[A-Za-z_][A-Za-z0-9_]*``."""
    return isinstance(name, str) and all(_PART.match(part) for part in name.split("."))


def _valid_type_name(name: Any) -> bool:
    return valid_name(name) and name.rsplit(".", 1)[-1] not in _PRIMITIVE


def _bad_name(what: str, name: Any, role: str) -> SchemaMismatchError:
    return SchemaMismatchError(
        f"invalid Avro {what} {name!r} in the {role} schema: every dot-separated part of a name or "
        "namespace must match [A-Za-z_][A-Za-z0-9_]* (Avro specification)"
    )


def check_schema(schema: Any, role: str, max_schema_depth: int, max_fields: Optional[int] = None) -> None:
    """Raise :class:`SchemaMismatchError` unless every name in ``schema`` (parsed or not) is a valid
    Avro name, it nests at most ``max_schema_depth`` levels and its records have at most
    ``max_fields`` fields in all (``None``: not counted). ``role`` says which schema it is
    ("writer", "reader", ...) in the message."""
    stack: List[Tuple[Any, int]] = [(schema, 1)]
    fields_seen = 0
    while stack:
        s, depth = stack.pop()
        if depth > max_schema_depth and (
            isinstance(s, list) or (isinstance(s, dict) and s.get("type") in ("record", "error", "array", "map"))
        ):
            raise SchemaMismatchError(
                f"the {role} schema nests deeper than serdes.max.schema.depth={max_schema_depth} levels"
            )
        if isinstance(s, list):
            stack.extend((branch, depth + 1) for branch in s)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in _NAMED:
                if not _valid_type_name(s.get("name")):
                    raise _bad_name("name", s.get("name"), role)
                ns = s.get("namespace")
                if ns not in (None, "") and not valid_name(ns):
                    raise _bad_name("namespace", ns, role)
                if t in ("record", "error"):
                    fields = s.get("fields")
                    if not isinstance(fields, list):
                        raise SchemaMismatchError(f"record {s.get('name')!r} in the {role} schema has no field list")
                    fields_seen += len(fields)
                    if max_fields is not None and fields_seen > max_fields:
                        raise SchemaMismatchError(
                            f"the {role} schema has more than serdes.max.fields={max_fields} record fields "
                            f"(record {s.get('name')!r} brings the count to {fields_seen})"
                        )
                    for f in fields:
                        if not isinstance(f, dict):
                            raise SchemaMismatchError(f"record {s.get('name')!r} in the {role} schema has a field that is not an object")
                        stack.append((f.get("type"), depth + 1))
            elif t == "array":
                stack.append((s.get("items"), depth + 1))
            elif t == "map":
                stack.append((s.get("values"), depth + 1))
            elif isinstance(t, (dict, list)):
                stack.append((t, depth))
        elif isinstance(s, str) and s not in AVRO_TYPES and not valid_name(s):
            raise _bad_name("type name", s, role)
