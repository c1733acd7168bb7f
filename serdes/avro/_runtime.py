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
import datetime as _dt
from decimal import Decimal as _Decimal
import math
import numbers
import struct
import uuid as _uuid
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, Optional, Tuple

from fastavro.const import DAYS_SHIFT

from .._errors import CorruptPayloadError, SchemaMismatchError, ValidationError
from .._varint import read_varint_tail, read_zigzag_tail, write_zigzag

__all__ = [
    "DECODER_NAMESPACE", "ENCODER_NAMESPACE", "DecimalSpec", "checked_decimal_writer", "decimal_fits", "default_copier",
    "flat_bytes_view",
]


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


# -- decimals: the bounds of decimal(precision, scale), checked before anything is converted -------
#: precisions up to this many digits get their ``10**precision`` bound computed when the decoder
#: is built; above it (no real schema) the bound is computed on the first value long enough to need it
_EAGER_BOUND_DIGITS = 10_000


class DecimalSpec:
    """The bounds of one ``decimal(precision, scale)`` value of a schema and the errors of a value
    outside them (shared by the generated and the native decoder and by the encoders).

    ``max_len``: the most bytes the big-endian two's-complement unscaled integer of a value with at
    most ``precision`` digits takes, ``ceil((precision * log2(10) + 1) / 8)``; a longer ``bytes``
    decimal is refused before it is converted (converting costs time quadratic in its length).
    ``bound``: ``10**precision``; an unscaled value with ``abs(u) >= bound`` does not fit the type
    (fastavro rounds it to ``precision`` digits, silently changing the value: serdes refuses it).
    """

    __slots__ = ("precision", "scale", "where", "max_len", "_bound", "_safe_bits")

    def __init__(self, precision: int, scale: int, where: str) -> None:
        self.precision, self.scale, self.where = precision, scale, where
        self._bound: Optional[int] = None
        #: an unscaled value of at most this many bits fits without comparing it with the bound
        self._safe_bits = 0
        if precision <= _EAGER_BOUND_DIGITS:
            self._bound = 10**precision
            bits = (self._bound - 1).bit_length() + 1  # the digits' bits and a sign bit
        else:  # a byte of slack for the float either way; check() stays exact
            bits = math.ceil(precision * math.log2(10)) + 9
            self._safe_bits = math.floor(precision * math.log2(10)) - 8
        self.max_len = (bits + 7) // 8

    @property
    def bound(self) -> int:
        if self._bound is None:
            self._bound = 10**self.precision
        return self._bound

    @property
    def eager(self) -> bool:
        """The bound is known without computing anything (the precision is a realistic one)."""
        return self.precision <= _EAGER_BOUND_DIGITS

    def _name(self) -> str:
        return f"{self.where} (decimal({self.precision},{self.scale}))"

    def too_long(self, n: int) -> CorruptPayloadError:
        return CorruptPayloadError(
            f"decimal {self._name()}: the unscaled value takes {n} bytes, but precision {self.precision} "
            f"needs at most {self.max_len}"
        )

    def too_many_digits(self, *_: Any) -> CorruptPayloadError:
        return CorruptPayloadError(
            f"decimal {self._name()}: the unscaled value has more than {self.precision} digits, "
            "a value the type cannot hold"
        )

    def check(self, unscaled: int) -> int:
        """``unscaled`` when it has at most ``precision`` digits, else the error, raised."""
        if self._bound is None and unscaled.bit_length() <= self._safe_bits:
            return unscaled  # 2**bits < 10**precision: no need to compute the bound
        bound = self.bound
        if not -bound < unscaled < bound:
            raise self.too_many_digits()
        return unscaled

    def check_encode(self, v: Any, path: str) -> Any:
        """``v`` unless it is a Decimal with more than ``precision`` digits once scaled (which
        fastavro writes, a value the type cannot hold): then the ValidationError, raised."""
        if not decimal_fits(v, self.precision, self.scale):
            raise ValidationError(
                f"{path} is <{v!r:.80}>: more than the {self.precision} digits of decimal({self.precision},"
                f"{self.scale}) once scaled to {self.scale} decimal places (a value the type cannot hold)"
            )
        return v


def decimal_fits(v: Any, precision: Any, scale: Any) -> bool:
    """False for a finite Decimal whose unscaled integer at ``scale`` has more than ``precision``
    digits; True for anything else (fastavro's prepare function decides about those)."""
    if not isinstance(v, _Decimal) or not v.is_finite() or type(precision) is not int or type(scale) is not int:
        return True
    _, digits, exp = v.as_tuple()
    if digits == (0,):
        return True
    assert isinstance(exp, int)
    return len(digits) + max(exp + scale, 0) <= precision


def checked_decimal_writer(prepare: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """fastavro's decimal ``prepare(value, schema)``, refusing what :func:`decimal_fits` refuses
    (``ValueError``: the native encoder then leaves the value to the pure one, which says why)."""
    def prepare_checked(v: Any, schema: Any) -> Any:
        if not decimal_fits(v, schema.get("precision"), schema.get("scale", 0)):
            raise ValueError("decimal has more digits than its precision")
        return prepare(v, schema)

    return prepare_checked


# -- reader defaults: a fresh copy per record, as cheap as the default's shape allows ------------
def _shape(value: Any) -> Tuple[Optional[Callable[[], Any]], int]:
    """The copier of a JSON default (``None``: an immutable value, shared) and how many items
    (list items and dict entries, nested ones included) one copy creates."""
    if isinstance(value, list):
        parts = [_shape(x) for x in value]
        items = len(value) + sum(n for _, n in parts)
        if all(c is None for c, _ in parts):
            return value.copy, items  # a flat list: one C-level copy
        copiers = [(c, x) for (c, _), x in zip(parts, value, strict=True)]
        return (lambda: [x if c is None else c() for c, x in copiers]), items
    if isinstance(value, dict):
        dparts = {k: _shape(x) for k, x in value.items()}
        items = len(value) + sum(n for _, n in dparts.values())
        if all(c is None for c, _ in dparts.values()):
            return value.copy, items
        dcopiers = [(k, dparts[k][0], x) for k, x in value.items()]
        return (lambda: {k: x if c is None else c() for k, c, x in dcopiers}), items
    return None, 0


def default_copier(value: Any) -> Tuple[Optional[Callable[[], Any]], int]:
    """How a reader default is returned in each record: ``(copier, items)``.

    A dict or list default is copied for every record (fastavro returns the schema's own object,
    so a caller mutating one record's default would change every later record's: serdes does
    not share mutable values); the copy is structural -- each flat list or dict is one C-level
    ``copy()`` -- and its ``items`` are charged to the record's ``serdes.max.items`` budget like
    decoded array/map items. Strings, numbers, booleans and ``None`` are immutable and shared
    (``copier`` ``None``). Raises ``RecursionError`` for a default nested past the stack.
    """
    return _shape(value)


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


def flat_bytes_view(v: Any) -> bool:
    """``v`` is a memoryview the encoders take for bytes or fixed outside a union: one-dimensional,
    contiguous unsigned bytes, so ``len(v)`` is its byte count and its bytes are what fastavro
    writes (it copies a view's buffer without its strides or item size)."""
    return type(v) is memoryview and v.format == "B" and v.ndim == 1 and v.c_contiguous


def _chk_bytes(v: Any, path: str, expected: str, in_union: bool) -> Any:
    """``v`` for a bytes or fixed value that is not a bytes/bytearray: a flat memoryview
    (:func:`flat_bytes_view`) outside a union, where fastavro writes it as it writes bytes; a union
    branch is chosen by fastavro's ``validate``, which takes only bytes/bytearray (confluent-kafka
    refuses a memoryview there)."""
    if not in_union and flat_bytes_view(v):
        return v
    if type(v) is memoryview and in_union:
        raise _bad(path, v, f"{expected} (a memoryview is taken outside unions only, as in confluent-kafka)")
    raise _bad(path, v, expected)


def _enum_sub(table: Dict[str, int], v: Any) -> Optional[int]:
    """The index of a str subclass instance (an ``enum.StrEnum`` member, say) that is not an exact
    ``str``, by its string contents; ``None`` for anything else."""
    if isinstance(v, str):
        return table.get(str.__str__(v))
    return None


ENCODER_NAMESPACE: Dict[str, Any] = {
    "_bad": _bad,
    "_chk_bytes": _chk_bytes,
    "_enum_sub": _enum_sub,
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
