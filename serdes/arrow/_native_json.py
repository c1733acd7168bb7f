"""The native columnar JSON Schema decoder (``rust/src/columnar/json/``): whole lists of
Confluent-framed JSON records parsed, validated and written into Arrow columns in one call, with
the GIL released.

Like the Avro one (:mod:`serdes.arrow._native`) it is a shortcut with the per-record path as its
reference: a list it takes decodes to the same batch, and anything it does not take -- a frame
that does not decode, a record the schema rejects, a schema outside its subset -- is decoded again
by the per-record path, which gives each bad record its own typed error. It can only be stricter
than that path, never looser: whatever it is unsure of, it leaves to it.

**Same schema, same validator.** Per schema id, the per-record path validates with one
jsonschema-rs validator (the deserializer's ``schema_str``, else the writer schema; serdes.json).
This module asks the deserializer for that very decoder (compiling it as the per-record path
would) and takes the id only when it is the plain one -- ``orjson.loads``, then that jsonschema-rs
validator (no regex guard, no depth check: the schema is not recursive) or no validation, no
``from_dict`` -- and then compiles *the schema that validator was built from* into a program.

The schemas it takes, and how they are compiled, are :mod:`serdes.arrow._json_program`'s.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import orjson
import pyarrow as pa

from .. import _native
from .._cache import bounded_store
from .._confluent import (
    get_parsed_schema, json_ref_registry, json_validators, own_schema, reader_schema, registry_of,
)
from .._limits import Limits
from .._registry import fetch_writer_schema
from ._json_program import JsonColumnsDecoder, Refused, compile_program, program_type

__all__ = ["NativeJsonColumns", "native_json_columns"]


class _NotNow(Exception):
    """No verdict on a schema id for now (the deserializer's caches do not hold what it needs)."""


class NativeJsonColumns:
    """The native decoder of one reader shape for one JSON deserializer: a program per schema id
    (at most ``cache_size``), added the first time a list holds the id."""

    def __init__(self, mod: Any, target: pa.DataType, limits: Limits, cache_size: int) -> None:
        self._target = target  # the reader shape's struct type: what the per-record path builds
        self._limits = limits
        self._cache_size = cache_size
        self._dec = JsonColumnsDecoder(mod, limits.max_items)
        self._ids: Dict[int, Optional[str]] = {}  # id -> None (program added) or why it is refused
        #: calls decoded here, and calls handed to the per-record path (tests and measurements)
        self.taken = 0
        self.declined = 0
        #: (frame index or None, reason) of the last call the native decoder refused
        self.refused: Optional[Tuple[Optional[int], str]] = None

    def decode(self, payloads: List[Any], deser: Any, ctx: Any) -> Optional[pa.StructArray]:
        """The struct array of ``payloads`` (all decoded), or ``None``: the per-record path decodes
        them. ``deser``: the deserializer whose per-record decoders this stands in for."""
        found = self._columns(payloads, deser, ctx)
        if found is None:
            self.declined += 1
        else:
            self.taken += 1
        return found

    def _columns(self, payloads: List[Any], deser: Any, ctx: Any) -> Optional[pa.StructArray]:
        found = self._dec.decode(payloads)
        if found is not None and found.missing:
            for sid in found.missing:  # every id not added yet: new ones, and refused ones again
                if not self._add(sid, payloads, deser, ctx):
                    return None
            found = self._dec.decode(payloads)
        if found is None:
            return None  # a value that is neither bytes nor None
        array = found.array
        if array is None:
            self.refused = (found.at, found.why)
            return None
        if not array.type.equals(self._target):  # pragma: no cover - program_type said they are equal
            self.refused = (None, f"columns {array.type} differ from {self._target}")
            return None
        return array

    def _add(self, sid: int, payloads: List[Any], deser: Any, ctx: Any) -> bool:
        if sid in self._ids:
            return self._ids[sid] is None
        head = b"\x00" + sid.to_bytes(4, "big")
        frame = next(p for p in payloads if p is not None and p[:5] == head)
        try:
            # the per-record decoder of this id, compiled (and cached) as that path compiles it
            deser._decoder_for(frame, ctx)
        except Exception:  # a registry or schema failure: the per-record path reports it, per record
            return False
        try:
            nodes = self._program(sid, head, deser)
            self._dec.add(sid, nodes)
            why = None
        except _NotNow as e:  # no verdict kept: asked again next time
            self.refused = (None, str(e))
            return False
        except Refused as e:
            why = str(e)
        except ValueError as e:  # pragma: no cover - a program the extension does not read: a bug
            why = f"the extension refused the program: {e}"
        if len(self._ids) >= self._cache_size:
            oldest = next(iter(self._ids))
            if self._ids.pop(oldest) is None:
                self._dec.forget(oldest)
        self._ids[sid] = why
        return why is None

    def _program(self, sid: int, head: bytes, deser: Any) -> List[Tuple[Any, ...]]:
        step = deser._steps.get(head)
        if step is None:
            # a decoder that is not a plain step (a regex guard, a depth check), or the step was
            # evicted from the deserializer's cache
            raise _NotNow(f"the per-record decoder of schema id {sid} is not orjson + a plain validator")
        if step.parse is not orjson.loads or step.convert is not None:
            raise Refused("the per-record decoder of this schema is not orjson + jsonschema-rs")
        schema, parsed, ref_registry = _validation_schema(deser, sid)
        validate = step.validate is not None
        if schema is not None and schema.references:
            raise Refused("the schema has registry references")
        if validate:
            validators, lock = json_validators(deser)
            with lock:  # the one the per-record decoder was built with (serdes.json's cache)
                validator = validators.get(schema)
            if validator is None:
                raise _NotNow(f"the validator of schema id {sid} is no longer cached")
            if (validator.is_valid is not step.validate or validator.backend != "jsonschema-rs"
                    or validator.guarded or validator.max_depth is not None):
                raise Refused("the per-record validator of this schema is not the plain jsonschema-rs one")
        nodes = compile_program(parsed, validate, self._limits)
        got = program_type(nodes)
        if not got.equals(self._target):
            raise Refused(f"the columns of schema id {sid} ({got}) are not the reader's ({self._target})")
        return nodes


def _validation_schema(deser: Any, sid: int) -> Tuple[Any, Any, Any]:
    """``(Schema, parsed, reference registry)`` the per-record path validates records of ``sid``
    against (serdes.json's ``_build_decoder``: ``schema_str``, else the writer schema; the
    latest-version readers are not taken natively)."""
    own = own_schema(deser)
    if own is not None:
        return own, reader_schema(deser), json_ref_registry(deser)
    registry = registry_of(deser)
    if registry is None:
        raise Refused("no schema to validate against")
    writer = fetch_writer_schema(registry, sid)
    parsed, ref_registry = get_parsed_schema(deser, writer)
    return writer, parsed, ref_registry


def native_json_columns(deser: Any, key: str, target: pa.DataType) -> Optional[NativeJsonColumns]:
    """The native decoder of reader ``key`` (its schema text) kept on ``deser``, or ``None`` when
    the extension is not active or the deserializer decodes otherwise than by frame prefix and
    orjson (``use.latest.version``, data-contract rules, a custom schema-id deserializer or
    ``json_decode``)."""
    from .._confluent import json_decoder, json_loads

    mod = _native.active()
    if mod is None or not hasattr(mod, "JsonArrowDecoder"):
        return None
    decode = json_decoder(deser)
    if (deser._subject_keyed or deser._custom_id_deserializer or deser._uses_rules()
            or decode is not None and decode is not json_loads()):
        return None
    cache: Dict[str, NativeJsonColumns] = deser.__dict__.setdefault("_arrow_native_json", {})
    found = cache.get(key)
    if found is None:
        found = NativeJsonColumns(mod, target, deser._limits, deser._cache_size)
        bounded_store(cache, key, found, 16)
    return found
