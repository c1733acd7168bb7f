"""Bounds on what an untrusted schema or payload may make serdes allocate, recurse into or run.

Schemas come from whoever can register under a subject and payloads from whoever can produce to a
topic, so every size, count and depth read from either is checked against one of these limits before
it allocates or recurses. The defaults are generous for real data and small enough that a hostile
record fails with a typed error instead of exhausting the process (see docs/security.md).

Each serializer and deserializer takes them as ``serdes.*`` configuration keys, removed from the
conf before confluent-kafka's constructor sees it (so confluent-kafka's own key validation is kept).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = ["Limits", "DEFAULT_LIMITS", "split_limits_conf", "split_limits_args"]


@dataclass(frozen=True)
class Limits:
    """Per-record and per-schema bounds (positive numbers) and switches; see docs/security.md for why each."""

    #: nesting depth of one value (the protobuf runtime's own default recursion limit; JSON objects/arrays, Avro records/arrays/maps/unions, Protobuf messages)
    max_depth: int = 100
    #: items of all arrays and maps in one record, skipped (reader-dropped) ones included; this is
    #: what bounds zero-size items (``array<null>``), whose blocks cost no payload bytes
    max_items: int = 10_000_000
    #: nesting depth of a schema (named types inside named types, nested arrays/maps)
    max_schema_depth: int = 256
    #: seconds the regular-expression matching of one validation may take, all matches together,
    #: where the linear-time engine cannot run the JSON Schema patterns (backreferences, lookaround:
    #: jsonschema-rs' backtracking engine; serdes.json's Python fallback)
    regex_timeout: float = 0.1
    #: backtracking steps one match of a JSON Schema pattern may take in jsonschema-rs' backtracking
    #: engine (fancy-regex's own default); more is a ValidationError, never a silent non-match
    regex_backtrack_limit: int = 1_000_000
    #: bytes a JSON Schema pattern may compile to in jsonschema-rs' engines (the regex crate's
    #: ``size_limit``): a match cannot be interrupted and costs up to ~0.35 ns per compiled byte
    #: per character, so this bounds every match's cost per character; a pattern over it runs in
    #: serdes.json's Python fallback within ``regex_timeout``, or the schema is refused
    regex_size_limit: int = 32 << 10
    #: characters a string or object key may have to be matched against a JSON Schema pattern that
    #: needs backtracking (jsonschema-rs' fancy-regex, which cannot interrupt a match and re-runs a
    #: pattern's parts from every position: one match costs up to the square of the length); a
    #: longer string or key anywhere in a value validated under such a schema is a ValidationError
    regex_backtrack_max_length: int = 1024
    #: schema references one Protobuf or JSON schema may pull from the registry, transitively (each
    #: is a registry request), and one Avro schema may list, transitively (each edge counted, each
    #: subject version fetched once); the chain depth is bounded by ``max_schema_depth``
    max_references: int = 1000
    #: fields of all records of one Avro schema: generating and compiling its decoder/encoder costs
    #: time linear in them (~1 ms per field), paid when the schema is first seen
    max_fields: int = 10_000
    #: resolve JSON Schema ``$ref`` to ``http(s)://`` targets outside the schema and its registry
    #: references (off: such a ``$ref`` is a SchemaMismatchError; on: fetched with confluent-kafka's
    #: guard -- public addresses only, no redirects). ``file://`` and other schemes are always refused.
    allow_remote_refs: bool = False
    #: write JSON NaN / +-Infinity as ``null`` as confluent-kafka does (off: they are a
    #: ValidationError, since ``null`` silently changes the data); JSON serializers only
    json_nan_as_null: bool = False
    #: entries each cache of one serializer or deserializer keeps (decoders by schema id / GUID /
    #: schema-id header, Protobuf message-index paths, encoders by topic, parsed schemas, validators,
    #: remembered misses); at the bound the oldest entry (insertion order) is dropped on a miss
    cache_size: int = 1000
    #: seconds a registry miss is remembered (an unknown schema id or GUID, a writer schema that
    #: does not compile, a subject the serializer cannot resolve): within it the same miss raises the
    #: same typed error again without a registry request; a RegistryError (unreachable,
    #: rate-limited, refused credentials) is never remembered
    cache_miss_ttl: float = 5.0

    @property
    def conf(self) -> Dict[str, Any]:
        """These limits as ``serdes.*`` configuration keys."""
        return {_CONF_PREFIX + f.name.replace("_", "."): getattr(self, f.name) for f in fields(self)}


_CONF_PREFIX = "serdes."
_KEYS = {_CONF_PREFIX + f.name.replace("_", "."): f for f in fields(Limits)}

DEFAULT_LIMITS = Limits()


def split_limits_conf(conf: Optional[Mapping[str, Any]], base: Limits = DEFAULT_LIMITS) -> Tuple[Optional[Dict[str, Any]], Limits]:
    """Split a serde conf into (conf without ``serdes.*`` limit keys, the limits it asks for).

    Raises ``ValueError`` (what confluent-kafka raises for a bad conf value) for an unknown
    ``serdes.*`` key, a bound that is not a positive number of the field's type, or a switch that
    is not a bool (or the strings ``"true"``/``"false"``, as Kafka configuration is often written).
    """
    if conf is None:
        return None, base
    rest: Dict[str, Any] = {}
    changes: Dict[str, Any] = {}
    for key, value in conf.items():
        if not (isinstance(key, str) and key.startswith(_CONF_PREFIX)):
            rest[key] = value
            continue
        f = _KEYS.get(key)
        if f is None:
            raise ValueError(f"unknown serdes configuration key {key!r}; known: {sorted(_KEYS)}")
        if f.type in ("bool", bool):
            changes[f.name] = _parse_bool(key, value)
            continue
        kind = float if f.type in ("float", float) else int
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)) or value <= 0:
            raise ValueError(f"{key} must be a positive {kind.__name__}, got {value!r}")
        changes[f.name] = kind(value)
    return rest, replace(base, **changes) if changes else base


def split_limits_args(args: Tuple[Any, ...], kwargs: Dict[str, Any], conf_index: int) -> Tuple[Tuple[Any, ...], Dict[str, Any], Limits]:
    """:func:`split_limits_conf` for a constructor's ``(*args, **kwargs)`` whose ``conf`` is the
    positional argument ``conf_index`` or the keyword ``conf``; returns them without ``serdes.*`` keys."""
    if "conf" in kwargs:
        kwargs = dict(kwargs)
        kwargs["conf"], limits = split_limits_conf(kwargs["conf"])
    elif len(args) > conf_index:
        rest: List[Any] = list(args)
        rest[conf_index], limits = split_limits_conf(rest[conf_index])
        args = tuple(rest)
    else:
        limits = DEFAULT_LIMITS
    return args, kwargs, limits


def _parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{key} must be a bool, got {value!r}")
