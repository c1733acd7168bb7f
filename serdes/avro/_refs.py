"""Avro schema references: the named types a registry schema pulls from other subjects, bounded.

A registry schema may reference other subjects' schemas (``Schema.references``), each of which
may reference more. confluent-kafka's ``_resolve_named_schema`` walks that graph recursively
without memory: a schema that references the next one twice, 22 levels deep, is walked 2**22
times, and a cycle recurses until Python's stack runs out. serdes resolves the same graph into the
same ``named_schemas`` (``ref.name`` and the referenced schema's full name -> its JSON, the last
assignment of confluent-kafka's walk winning, so ``parse_schema_with_repo`` parses the same
schema) with the bounds the JSON and Protobuf paths apply:

* every distinct (subject, version) is fetched and JSON-parsed once, whatever the number of paths
  to it (a diamond or any DAG costs its number of edges, not its number of paths);
* the references listed by the schema and, transitively, by the schemas it pulls -- each edge of
  the graph, a repeated one included -- number at most ``serdes.max.references``; a schema listing
  more is refused before anything is fetched;
* a chain of references is at most ``serdes.max.schema.depth`` deep; a cycle is followed once.

Past a bound the schema is a :class:`~serdes.SchemaMismatchError` (a registry failure is the
typed registry error of :func:`serdes._registry.registry_call`).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Optional, Set, Tuple

from confluent_kafka.schema_registry import Schema

from .._confluent import avro_parse_schema_with_repo, avro_schema_loads, parsed_schema_cache, registry_of
from .._errors import SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits
from .._registry import registry_call

__all__ = ["ReferencesMixin", "resolve_named_schemas"]

# what a referenced (subject, version) resolves to: its own named schemas (name -> token) and its
# JSON; a token ((subject, version), edge number) stands for the JSON assigned by one edge
_Key = Tuple[str, int]
_Token = Tuple[_Key, int]


def resolve_named_schemas(schema: Schema, client: Any, limits: Limits = DEFAULT_LIMITS) -> Dict[str, Any]:
    """confluent-kafka's ``_resolve_named_schema(schema, client)``, memoized and bounded (see the
    module docstring). Raises :class:`SchemaMismatchError` past a bound, ``TypeError`` where
    confluent-kafka does (a reference without subject, version or name)."""
    raw: Dict[_Key, Any] = {}
    resolved: Dict[_Key, Dict[str, _Token]] = {}
    in_progress: Set[_Key] = set()
    edges = 0

    def refuse(what: str) -> SchemaMismatchError:
        return SchemaMismatchError(f"Avro schema reference {what}")

    def walk(s: Schema, depth: int) -> Dict[str, _Token]:
        nonlocal edges
        refs = s.references or []
        if len(refs) > limits.max_references:
            raise refuse(f"list of {len(refs)} entries: more than serdes.max.references={limits.max_references}")
        named: Dict[str, _Token] = {}
        for ref in refs:
            if ref.subject is None or ref.version is None:
                raise TypeError("Subject or version cannot be None")  # confluent-kafka's error
            edges += 1
            if edges > limits.max_references:
                raise refuse(
                    f"{ref.name!r}: the schema pulls more than serdes.max.references={limits.max_references} "
                    "references from the registry"
                )
            key: _Key = (ref.subject, ref.version)
            if key in in_progress:
                continue  # a cycle: the schema being resolved further up assigns it
            if key not in resolved:
                if depth >= limits.max_schema_depth:
                    raise refuse(f"{ref.name!r} is nested deeper than serdes.max.schema.depth={limits.max_schema_depth}")
                in_progress.add(key)
                subject, version = key
                registered = registry_call(
                    f"fetching reference {subject!r} version {version}",
                    # registry_call calls it at once, within this iteration
                    lambda: client.get_version(subject, version, True),  # noqa: B023
                )
                resolved[key] = walk(registered.schema, depth + 1)
                text = registered.schema.schema_str
                if text is None:
                    raise TypeError("Schema string cannot be None")
                try:
                    raw[key] = json.loads(text)
                except ValueError as e:
                    raise refuse(f"{ref.name!r} ({subject!r} version {version}) is not JSON: {e}") from None
                in_progress.discard(key)
            if ref.name is None:
                raise TypeError("Name cannot be None")
            named.update(resolved[key])
            token: _Token = (key, edges)
            named[ref.name] = token
            # also under the full name, so fastavro resolves namespace-qualified references
            doc = raw[key]
            if isinstance(doc, dict) and "name" in doc:
                ns, name = doc.get("namespace"), doc["name"]
                fqn = f"{ns}.{name}" if ns and "." not in name else name
                if fqn != ref.name:
                    named[fqn] = token
        return named

    if not schema.references:
        return {}
    if client is None:
        raise SchemaMismatchError("the Avro schema has references but there is no registry client")
    tokens = walk(schema, 0)
    # one JSON object per edge, as confluent-kafka's walk (which parses per visit) builds them:
    # fastavro's load_schema injects into them in place
    objects: Dict[_Token, Any] = {}
    out: Dict[str, Any] = {}
    for name, token in tokens.items():
        obj = objects.get(token)
        if obj is None:
            obj = objects[token] = copy.deepcopy(raw[token[0]])
        out[name] = obj
    return out


class ReferencesMixin:
    """Replaces confluent-kafka's Avro ``_get_parsed_schema``: the same parsed schema, its
    references resolved by :func:`resolve_named_schemas` (bounded, memoized), then parsed as
    confluent-kafka parses them (``parse_schema_with_repo``) and cached in its parsed-schema cache."""

    _limits: Limits = DEFAULT_LIMITS

    def _get_parsed_schema(self, schema: Schema) -> Any:
        cache = parsed_schema_cache(self)
        parsed: Optional[Any] = cache.get_parsed_schema(schema)
        if parsed is not None:
            return parsed
        named_schemas = resolve_named_schemas(schema, registry_of(self), self._limits)
        if schema.schema_str is None:
            raise TypeError("Schema string cannot be None")
        prepared = avro_schema_loads(schema.schema_str)
        if prepared.schema_str is None:
            raise TypeError("Prepared schema string cannot be None")
        parsed = avro_parse_schema_with_repo(prepared.schema_str, named_schemas)
        cache.set(schema, parsed)
        return parsed
