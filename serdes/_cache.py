"""Bounded caches and remembered misses for the per-schema decoder/encoder caches.

The caches stay plain dicts: the hot path (``FastDeserializer._call_py`` and the native dispatcher
in rust/src/dispatch.rs) reads them with one ``dict`` lookup, so a hit costs what it cost before
they were bounded. The bound is enforced where entries are written, on a miss, by dropping the
oldest entries in insertion order (a dict's own order, so no bookkeeping on a hit). That is FIFO,
not LRU: an LRU would have to move an entry on every hit. A working set larger than the bound
(``serdes.cache.size``) then costs one rebuild per evicted schema, never unbounded memory.

Misses are remembered by :class:`MissCache`: a registry that does not know a schema id (or a
schema that does not compile, or a subject a serializer cannot resolve) is asked once per
``serdes.cache.miss.ttl`` seconds, not once per record.
"""

from __future__ import annotations

import time
from typing import Any, Dict, MutableMapping, Tuple

from ._errors import RecordLocation, RegistryError, SerdesError

__all__ = ["bounded_store", "trim", "MissCache"]


def trim(cache: MutableMapping[Any, Any], room: int) -> None:
    """Drop the oldest entries (insertion order) until ``cache`` holds at most ``room`` entries."""
    while len(cache) > room:
        try:
            del cache[next(iter(cache))]
        except (StopIteration, KeyError, RuntimeError):  # another thread changed it meanwhile
            return


def bounded_store(cache: MutableMapping[Any, Any], key: Any, value: Any, bound: int) -> None:
    """``cache[key] = value`` with ``cache`` kept at ``bound`` entries (the oldest dropped first)."""
    if key not in cache:
        trim(cache, bound - 1)
    cache[key] = value


# A RegistryError (unreachable, rate-limited, credentials refused, not a registry answer) says
# nothing about the schema and the record decodes once the registry answers again: never
# remembered, the next record asks again (the registry client retries with backoff on its own).
_NOT_ANSWERS = (RegistryError,)


class MissCache:
    """Typed errors of recent misses by cache key, each for ``ttl`` seconds, at most ``size`` of them."""

    __slots__ = ("_errors", "_size", "_ttl")

    def __init__(self, size: int, ttl: float) -> None:
        self._errors: Dict[Any, Tuple[float, SerdesError]] = {}
        self._size = size
        self._ttl = ttl

    def __len__(self) -> int:
        return len(self._errors)

    def check(self, key: Any, ctx: Any) -> None:
        """Raise the remembered error of ``key`` (a fresh copy located at ``ctx``), if any."""
        found = self._errors.get(key)
        if found is None:
            return
        expires, err = found
        if time.monotonic() >= expires:
            self._errors.pop(key, None)
            return
        raise _fresh(err, ctx)

    def remember(self, key: Any, err: BaseException) -> None:
        if isinstance(err, SerdesError) and not isinstance(err, _NOT_ANSWERS):
            # a detached copy: the raised error's traceback (and its cause's) reaches back to the
            # frames of the record that missed, and would keep its bytes alive for the TTL
            bounded_store(self._errors, key, (time.monotonic() + self._ttl, _fresh(err, None)), self._size)

    def clear(self) -> None:
        self._errors.clear()


def _fresh(err: SerdesError, ctx: Any) -> SerdesError:
    """A copy of ``err`` for another record: same class, reason, schema id and extra attributes
    (``http_status``, ...), its location the record's (the original was filled in for another)."""
    rebuild, args, state = err.__reduce__()
    copy: SerdesError = rebuild(*args)
    if state:
        copy.__dict__.update(state)
    copy.location = RecordLocation.from_ctx(ctx)
    copy.args = (copy._format(),)
    return copy

