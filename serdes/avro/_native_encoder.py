"""The native Avro encoder (``rust/src/avro_encode``), with the pure-Python encoder as its fallback.

:func:`compile_native_encoder` takes the arguments of :func:`serdes.avro._codegen.compile_encoder`
and returns an encoder with the same contract (``encode(obj, ctx) -> prefix + payload``), the same
accepted values, the same bytes and the same errors. When the extension is active
(:func:`serdes._native.active`, asked once per encoder built) and compiles the schema, the result
is the extension's ``AvroEncoder``; it runs on every value of the exact built-in types the pure
encoder's fast path takes and hands anything else to the pure encoder for the same schema, which
then decides (its bytes, or its :class:`serdes.ValidationError`). Otherwise -- pure Python forced or
not built, a ``"bytes"`` schema (written raw), a union with a logical-type branch, a type the
generator does not know -- the result is the pure encoder itself. See docs/native.md ("Avro encoding").
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Callable, Dict, Optional

from fastavro import parse_schema
from fastavro.write import LOGICAL_WRITERS

from .. import _native
from .._errors import SchemaMismatchError, ValidationError
from .._limits import DEFAULT_LIMITS, Limits
from ._codegen import compile_encoder
from ._generator import is_raw_bytes
from ._runtime import checked_decimal_writer

__all__ = ["compile_native_encoder", "is_native_encoder"]

_Encode = Callable[[Any, Any], bytes]

# logical types the native loop converts itself for the exact types it knows, as fastavro's own
# prepare function (by name) does; a prepare function registered in its place is always called
_FAST_LOGICAL = {
    "string-uuid": ("prepare_uuid", 1),
    "long-timestamp-millis": ("prepare_timestamp_millis", 2),
    "long-timestamp-micros": ("prepare_timestamp_micros", 3),
    "int-date": ("prepare_date", 4),
    "bytes-decimal": ("prepare_bytes_decimal", 5),
}
_CLASSES = (uuid.UUID, datetime.datetime, datetime.date, datetime.timezone.utc, decimal.Decimal)
# the native loop counts a recursive schema's nesting in a u32; deeper than the thread's stack
# allows it never goes (it hands the value to the pure encoder: docs/native.md, "Guards")
_MAX_COUNT = 2**32 - 1


def _fast_logical() -> Dict[str, int]:
    out: Dict[str, int] = {}
    for key, (name, code) in _FAST_LOGICAL.items():
        fn = LOGICAL_WRITERS.get(key)
        if getattr(fn, "__name__", None) == name and str(getattr(fn, "__module__", "")).startswith("fastavro."):
            out[key] = code
    return out


def _logical_writers() -> Dict[str, Any]:
    """fastavro's ``LOGICAL_WRITERS`` as the native loop calls them: the decimal ones refuse a
    value with more digits than the precision, as the pure encoder does (the loop then leaves the
    value to it, which raises the ValidationError)."""
    writers = dict(LOGICAL_WRITERS)
    for key in ("bytes-decimal", "fixed-decimal"):
        if key in writers:
            writers[key] = checked_decimal_writer(writers[key])
    return writers


def compile_native_encoder(
    schema: Any,
    prefix: bytes = b"",
    strict: bool = False,
    strict_allow_default: bool = False,
    to_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    role: str = "serializer's",
) -> _Encode:
    """``encode(obj, ctx) -> prefix + payload`` for ``schema``: native when it can be, else pure.

    Raises what :func:`compile_encoder` raises for a bad schema (:class:`SchemaMismatchError`),
    before anything native is built."""
    native = _native.active()
    if native is None:
        return compile_encoder(schema, prefix, strict, strict_allow_default, to_dict, limits, role)
    # the pure encoder checks and parses the schema first (its errors are the errors) and is the
    # native encoder's fallback, so it is built without to_dict: the native side calls to_dict once
    fallback = compile_encoder(schema, prefix, strict, strict_allow_default, None, limits, role)
    parsed = parse_schema(schema)
    if is_raw_bytes(parsed):
        return compile_encoder(parsed, prefix, strict, strict_allow_default, to_dict, limits, role)
    try:
        encoder: _Encode = native.AvroEncoder(
            parsed, prefix, fallback, to_dict, strict, strict_allow_default, min(limits.max_depth, _MAX_COUNT),
            _logical_writers(), ValidationError, _fast_logical(), _CLASSES,
        )
    # NotImplementedError: a schema the native program leaves to the pure encoder; TypeError /
    # ValueError: a schema shape it does not expect (the pure encoder is still right for it);
    # SchemaMismatchError: the native compiler failed (a panic: a serdes bug, reported on stderr)
    except (NotImplementedError, TypeError, ValueError, SchemaMismatchError):
        if to_dict is None:
            return fallback
        return compile_encoder(parsed, prefix, strict, strict_allow_default, to_dict, limits, role)
    return encoder


def is_native_encoder(encode: object) -> bool:
    """Whether ``encode`` (from :func:`compile_native_encoder`) runs in the native extension."""
    native = _native.native
    return native is not None and isinstance(encode, native.AvroEncoder)
