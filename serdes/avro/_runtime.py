"""What generated Avro code calls at run time, and the namespaces it runs in.

A generated decoder or encoder (``_decgen``, ``_encgen``) reads no global but the constants of its
namespace: :data:`DECODER_NAMESPACE` or :data:`ENCODER_NAMESPACE` (copied per generated function,
then given that schema's own constants). Each helper below keeps the short name generated code
calls it by, so a traceback line in generated code names the function defined here.

The helpers are the out-of-line, cold paths: building the typed error for a bad payload or value,
multi-byte varints (:mod:`serdes._varint`), type checks of a value the fast inline test did not
take. The hot paths are inlined by the generators.
"""

from __future__ import annotations

import array
import copy
import datetime as _dt
import numbers
import struct
import uuid as _uuid
from collections.abc import Mapping, Sequence
from typing import Any, Dict

from fastavro.const import DAYS_SHIFT

from .._errors import CorruptPayloadError, SchemaMismatchError, ValidationError
from .._varint import read_varint_tail, read_zigzag_tail, write_zigzag

__all__ = ["DECODER_NAMESPACE", "ENCODER_NAMESPACE"]


# -- decoders: the error of a corrupt payload, built only when it is raised ---------------------------
def _neg(n: int) -> CorruptPayloadError:
    return CorruptPayloadError(f"negative length {n}")


def _big(n: int, left: int) -> CorruptPayloadError:
    return CorruptPayloadError(f"block of {n} items but only {left} bytes left")


def _badlen(n: int, left: int) -> CorruptPayloadError:
    if n < 0:
        return _neg(n)
    return CorruptPayloadError(f"string/bytes of length {n} but only {left} bytes left (payload ends early)")


def _too_many(limit: int) -> CorruptPayloadError:
    return CorruptPayloadError(f"record has more than serdes.max.items={limit} array/map items in total")


def _too_deep(limit: int) -> CorruptPayloadError:
    return CorruptPayloadError(f"record nests deeper than serdes.max.depth={limit} levels")


def _bad_union(raw: int, size: int) -> CorruptPayloadError:
    idx = (raw >> 1) ^ -(raw & 1)
    return CorruptPayloadError(f"union branch index {idx} out of range for a {size}-branch union")


def _bad_enum(i: int, size: int) -> CorruptPayloadError:
    return CorruptPayloadError(f"enum index {i} out of range for {size} symbols")


def _enum_miss(syms: Any, i: int, rsyms: Any, rname: Any) -> Exception:
    if not 0 <= i < len(syms):
        return _bad_enum(i, len(syms))
    return SchemaMismatchError(f"{syms[i]} not found in reader symbol list {rname}, known symbols: {rsyms}")


def _trailing(data: bytes, pos: int) -> CorruptPayloadError:
    if pos > len(data):
        return CorruptPayloadError(f"payload ends {pos - len(data)} bytes early")
    return CorruptPayloadError(f"{len(data) - pos} trailing bytes after the record")


def _varint_too_long() -> CorruptPayloadError:
    return CorruptPayloadError("varint longer than 10 bytes")


DECODER_NAMESPACE: Dict[str, Any] = {
    "_varint_too_long": _varint_too_long,
    "_rl": read_zigzag_tail,
    "_ru": read_varint_tail,
    "_neg": _neg,
    "_big": _big,
    "_badlen": _badlen,
    "_too_many": _too_many,
    "_too_deep": _too_deep,
    "_bad_union": _bad_union,
    "_bad_enum": _bad_enum,
    "_trailing": _trailing,
    "_enum_miss": _enum_miss,
    "_Mismatch": SchemaMismatchError,
    "_uf": struct.Struct("<f").unpack_from,
    "_ud": struct.Struct("<d").unpack_from,
    "_bytes": bytes,
    "_deepcopy": copy.deepcopy,
    "_epoch": _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc),
    "_epoch_naive": _dt.datetime(1970, 1, 1),
    "_td": _dt.timedelta,
    "_fromordinal": _dt.date.fromordinal,
    "_UUID": _uuid.UUID,
    "_DAYS_SHIFT": DAYS_SHIFT,
}


# -- encoders: the checks fastavro.validation.validate makes, for values the inline test let through --
class _Slow(Exception):
    """This value needs fastavro's general path (raised by generated code, caught by its entry)."""


def _bad(path: str, v: Any, expected: str) -> ValidationError:
    return ValidationError(f"{path} is <{v!r:.80}> of type {type(v).__name__}, expected {expected}")


def _chk_int(v: Any, path: str, lo: int, hi: int, expected: str) -> int:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        n = int(v)
        if lo <= n <= hi:
            return n
    raise _bad(path, v, expected)


def _chk_float(v: Any, path: str) -> float:
    if isinstance(v, (int, float, numbers.Real)) and not isinstance(v, bool):
        return float(v)
    raise _bad(path, v, "float/double")


def _chk_seq(v: Any, path: str) -> Any:
    if isinstance(v, (Sequence, array.array)) and not isinstance(v, (str, bytes)):
        return v
    raise _bad(path, v, "array")


ENCODER_NAMESPACE: Dict[str, Any] = {
    "_bad": _bad,
    "_chk_int": _chk_int,
    "_chk_float": _chk_float,
    "_chk_seq": _chk_seq,
    "_wl": write_zigzag,
    "_pf": struct.Struct("<f").pack,
    "_pd": struct.Struct("<d").pack,
    "_Slow": _Slow,
    "_VErr": ValidationError,
    "_str": str,
    "_bytes": bytes,
    "_bytearray": bytearray,
    "_int": int,
    "_float": float,
    "_list": list,
    "_tuple": tuple,
    "_dict": dict,
    "_Mapping": Mapping,
    "_NOV": object(),
    "_Exception": Exception,
}
