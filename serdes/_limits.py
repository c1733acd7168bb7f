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
from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = ["Limits", "DEFAULT_LIMITS", "split_limits_conf"]


@dataclass(frozen=True)
class Limits:
    """Per-record and per-schema bounds. All are positive ints; see docs/security.md for why each."""

    #: nesting depth of one value (the protobuf runtime's own default recursion limit; JSON objects/arrays, Avro records/arrays/maps/unions, Protobuf messages)
    max_depth: int = 100
    #: items of all arrays and maps in one record, skipped (reader-dropped) ones included; this is
    #: what bounds zero-size items (``array<null>``), whose blocks cost no payload bytes
    max_items: int = 10_000_000
    #: nesting depth of a schema (named types inside named types, nested arrays/maps)
    max_schema_depth: int = 256
    #: seconds one regular-expression match of a JSON Schema ``pattern`` may take where the linear-time
    #: engine cannot compile it (see serdes.json)
    regex_timeout: float = 0.1

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
    ``serdes.*`` key or a value that is not a positive number of the field's type.
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
        kind = float if f.type in ("float", float) else int
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)) or value <= 0:
            raise ValueError(f"{key} must be a positive {kind.__name__}, got {value!r}")
        changes[f.name] = kind(value)
    return rest, replace(base, **changes) if changes else base
