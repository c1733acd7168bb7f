"""A registered schema and, through the same registry, the schemas it references (bounded)."""

from __future__ import annotations

import functools
from collections import deque
from typing import Any, Deque, Dict, Set, Tuple, Union

from .._registry import checked_schema, registry_call
from ..protobuf._schemas import fetch_version
from ._emit import Budget, CodegenError, CodegenLimits

__all__ = ["fetch"]


def fetch(client: Any, subject: str, version: Union[int, str], limits: CodegenLimits) -> Tuple[str, str, Dict[str, str]]:
    """``(schema text, schema type, {reference name: text})`` of ``subject``'s ``version``.

    References are followed transitively, breadth first, each subject version once: at most
    ``limits.max_references`` of them and ``limits.max_depth`` levels deep."""
    budget = Budget(limits)
    if version != "latest" and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise ValueError(f"version must be a positive number or 'latest', not {version!r}")
    what = f"fetching subject {subject!r} version {version}"
    if version == "latest":
        got = registry_call(what, lambda: client.get_latest_version(subject))
    else:
        got = registry_call(what, lambda: client.get_version(subject, version))
    schema = checked_schema(what, getattr(got, "schema", None), None, None)
    schema_type = (schema.schema_type or "AVRO").upper()
    protobuf = schema_type == "PROTOBUF"
    if protobuf and isinstance(getattr(got, "version", None), int):
        # a serialized descriptor where the registry has one: no protoc needed (Confluent serves
        # .proto source unless asked); serdes' deserializer fetches the same way
        schema = checked_schema(what, fetch_version(client, subject, got.version).schema, None, None)
    refs: Dict[str, str] = {}
    seen: Set[Tuple[str, int]] = set()
    todo: Deque[Tuple[Any, int]] = deque((r, 1) for r in schema.references or [])
    while todo:
        ref, depth = todo.popleft()
        name = budget.name(getattr(ref, "name", None), "a schema reference name")
        ref_subject, ref_version = getattr(ref, "subject", None), getattr(ref, "version", None)
        if not isinstance(ref_subject, str) or not isinstance(ref_version, int):
            raise CodegenError(f"schema reference {name!r} has no subject or version")
        if (ref_subject, ref_version) in seen:
            continue
        budget.depth(depth, f"schema reference {name!r}")
        seen.add((ref_subject, ref_version))
        if len(seen) > limits.max_references:
            raise CodegenError(f"the schema pulls more than {limits.max_references} references from the registry")
        ref_what = f"fetching reference {name!r} ({ref_subject!r} version {ref_version})"
        if protobuf:
            ref_got = fetch_version(client, ref_subject, ref_version)
        else:
            ref_got = registry_call(ref_what, functools.partial(client.get_version, ref_subject, ref_version))
        ref_schema = checked_schema(ref_what, getattr(ref_got, "schema", None), None, None)
        refs.setdefault(name, str(ref_schema.schema_str))
        todo.extend((r, depth + 1) for r in ref_schema.references or [])
    return str(schema.schema_str), schema_type, refs
