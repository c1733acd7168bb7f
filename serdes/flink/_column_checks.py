"""Checks that a decoded value fits its Flink column type, one precomputed checker per column.

PyFlink encodes an operator's output *after* the operator returns, outside any ``try`` of
serdes: a value the column's coder cannot write (a JSON ``integer`` of 2**63 in a BIGINT column,
a Protobuf ``uint64`` above 2**63-1, a string with a lone surrogate, a ``None`` list element) raises
there and fails the job whatever ``on_error`` says.  The decode operator therefore checks every
column value first, with a checker built once per column from the column's ``TypeInformation``
(no per-record schema walk), so such a value is a :class:`serdes.ColumnValueError` naming the
column, which follows ``on_error``.

A checker returns the value the column holds: the value itself, or the same number in the
column's own Python type (an integral ``float`` for an integer column: JSON Schema's ``integer``
admits ``1.0``; an ``int`` for a FLOAT/DOUBLE column).  It never changes a value otherwise.
``None`` is always accepted (every column of a Flink row is nullable); elements of a LIST and keys
of a MAP must not be null (Flink's list and map serializers cannot write them).
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, Callable, List, Optional, Tuple

from pyflink.common import Row
from pyflink.common.time import Instant
from pyflink.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    LocalTimeTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
)

from .._cdc_types import unscaled_digits
from .._errors import ColumnValueError

__all__ = ["Check", "column_checks", "value_check", "declare_decimal", "FLOAT32_MAX"]

#: value -> the value the column holds; raises :class:`ColumnValueError`
Check = Callable[[Any], Any]

#: the largest finite IEEE single (Flink FLOAT)
FLOAT32_MAX = 3.4028234663852886e38

_INT_RANGES = {
    BasicType.BYTE: ("TINYINT", -(1 << 7), (1 << 7) - 1),
    BasicType.SHORT: ("SMALLINT", -(1 << 15), (1 << 15) - 1),
    BasicType.INT: ("INT", -(1 << 31), (1 << 31) - 1),
    BasicType.LONG: ("BIGINT", -(1 << 63), (1 << 63) - 1),
    BasicType.BIG_INT: ("BIGINT", -(1 << 63), (1 << 63) - 1),   # PyFlink writes BIG_INT as int64
}

#: Java's BigDecimal keeps its scale in an int: the exponent of a decimal it can parse
_JAVA_SCALE = (1 << 31) - 1

# The attribute a DECIMAL column's TypeInformation carries its declared (precision, scale) in;
# PyFlink's Types.BIG_DEC() has none of its own (see declare_decimal).
_DECIMAL_ATTR = "_serdes_decimal"


def declare_decimal(t: TypeInformation, precision: int, scale: int) -> TypeInformation:
    """``t`` (a ``Types.BIG_DEC()``) remembering the schema's ``decimal(precision, scale)``, so its
    checker refuses values with more digits.  Equality and the Java type are unchanged."""
    setattr(t, _DECIMAL_ATTR, (precision, scale))
    return t


def _type_name(v: Any) -> str:
    return type(v).__name__


def _short(v: Any) -> str:
    """A number for an error message, never a megabyte of digits."""
    if isinstance(v, int) and v.bit_length() > 256:
        return f"an integer of {v.bit_length()} bits"
    text = str(v)
    return text if len(text) <= 80 else f"{text[:40]}...({len(text)} characters)"


class _Checker:
    """A column checker: ``path`` names the column (and the place inside it) in errors."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, what: str) -> ColumnValueError:
        return ColumnValueError(f"column {self.path!r}: {what}", column=self.path)


class _Integer(_Checker):
    __slots__ = ("sql", "lo", "hi")

    def __init__(self, path: str, sql: str, lo: int, hi: int) -> None:
        super().__init__(path)
        self.sql, self.lo, self.hi = sql, lo, hi

    def __call__(self, v: Any) -> Any:
        if type(v) is int and self.lo <= v <= self.hi:
            return v
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(f"a {_type_name(v)} is not an integer ({self.sql})")
        if isinstance(v, float):
            if not v.is_integer():
                raise self.fail(f"{_short(v)} is not an integer ({self.sql})")
            v = int(v)
        v = int(v)
        if not self.lo <= v <= self.hi:
            raise self.fail(f"{_short(v)} is outside {self.sql}'s range [{self.lo}, {self.hi}]")
        return v


class _Floating(_Checker):
    __slots__ = ("sql", "limit")

    def __init__(self, path: str, sql: str, limit: float) -> None:
        super().__init__(path)
        self.sql, self.limit = sql, limit

    def __call__(self, v: Any) -> Any:
        if type(v) is float and -self.limit <= v <= self.limit:
            return v
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)):
            raise self.fail(f"a {_type_name(v)} is not a number ({self.sql})")
        try:
            f = float(v)
        except OverflowError:
            raise self.fail(f"{_short(v)} is outside {self.sql}'s range") from None
        if math.isfinite(f):
            if abs(f) > self.limit:
                raise self.fail(f"{_short(v)} is outside {self.sql}'s range")
        elif not (isinstance(v, float) or (isinstance(v, decimal.Decimal) and not v.is_finite())):
            raise self.fail(f"{_short(v)} is outside {self.sql}'s range")   # a finite number overflowed
        return f


class _Boolean(_Checker):
    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if v is True or v is False or v is None:
            return v
        raise self.fail(f"a {_type_name(v)} is not a boolean (BOOLEAN)")


class _String(_Checker):
    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if type(v) is str and v.isascii():
            return v
        if v is None:
            return None
        if not isinstance(v, str):
            raise self.fail(f"a {_type_name(v)} is not a string (STRING)")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise self.fail(f"the string is not valid Unicode (a lone surrogate at index {e.start})") from None
        return v


class _Bytes(_Checker):
    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if type(v) is bytes or v is None:
            return v
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        raise self.fail(f"a {_type_name(v)} is not bytes (BYTES)")


class _Decimal(_Checker):
    __slots__ = ("declared",)

    def __init__(self, path: str, declared: Optional[Tuple[int, int]]) -> None:
        super().__init__(path)
        self.declared = declared

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, int) and not isinstance(v, bool):
            v = decimal.Decimal(v)
        if not isinstance(v, decimal.Decimal):
            raise self.fail(f"a {_type_name(v)} is not a decimal (DECIMAL)")
        if not v.is_finite():
            raise self.fail(f"{v} is not a finite decimal (DECIMAL)")
        _sign, digits, exp = v.as_tuple()
        assert isinstance(exp, int)  # finite
        if not -_JAVA_SCALE <= exp <= _JAVA_SCALE:
            raise self.fail(f"the decimal's exponent {exp} is outside what DECIMAL can hold")
        if self.declared is not None and v:
            precision, scale = self.declared
            # trailing zeros below the scale are no digits (1.500 fits decimal(2, 1): Flink's
            # DECIMAL(p, s) sets the scale exactly); a nonzero digit below it never fits
            if unscaled_digits(v, scale) > precision:
                raise self.fail(f"{len(digits)} digits with exponent {exp} do not fit the declared "
                                f"decimal({precision}, {scale})")
        return v


class _Date(_Checker):
    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if type(v) is datetime.date or v is None:
            return v
        if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
            return v
        raise self.fail(f"a {_type_name(v)} is not a date (DATE)")


class _Time(_Checker):
    """``Types.SQL_TIME()``: PyFlink's coder writes milliseconds of the day, so a time with more
    digits is refused rather than cut (``LocalTimeTypeInfo`` LOCAL_TIME keeps them)."""

    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if isinstance(v, datetime.time):
            if v.microsecond % 1000:
                raise self.fail(f"time {v.isoformat()} has sub-millisecond digits, which SQL_TIME cannot hold "
                                "(it keeps milliseconds; LocalTimeTypeInfo LOCAL_TIME keeps them)")
            return v
        if v is None:
            return v
        raise self.fail(f"a {_type_name(v)} is not a time of day (TIME)")


class _Timestamp(_Checker):
    """``Types.SQL_TIMESTAMP()``: PyFlink's coder is TIMESTAMP(3), so a datetime with microseconds
    is refused rather than cut (``LocalTimeTypeInfo`` LOCAL_DATE_TIME keeps them)."""

    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if isinstance(v, datetime.datetime):
            if v.microsecond % 1000:
                raise self.fail(f"timestamp {v.isoformat()} has sub-millisecond digits, which SQL_TIMESTAMP "
                                "cannot hold (it keeps milliseconds; LocalTimeTypeInfo LOCAL_DATE_TIME keeps them)")
            return v
        if v is None:
            return v
        raise self.fail(f"a {_type_name(v)} is not a timestamp (TIMESTAMP)")


class _LocalTimestamp(_Checker):
    """``LocalTimeTypeInfo`` LOCAL_DATE_TIME (Java ``LocalDateTime``, Flink ``TIMESTAMP(9)``): a
    naive ``datetime`` (PyFlink's coder writes its fields and would drop a zone unseen)."""

    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if type(v) is datetime.datetime and v.tzinfo is None or v is None:
            return v
        if isinstance(v, datetime.datetime):
            raise self.fail("a datetime with a time zone is not a TIMESTAMP (no zone) value")
        raise self.fail(f"a {_type_name(v)} is not a timestamp (TIMESTAMP)")


class _LocalTime(_Checker):
    """``LocalTimeTypeInfo`` LOCAL_TIME (Java ``LocalTime``, Flink ``TIME``): a naive ``time``."""

    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if type(v) is datetime.time and v.tzinfo is None or v is None:
            return v
        if isinstance(v, datetime.time):
            raise self.fail("a time with a time zone is not a TIME value")
        raise self.fail(f"a {_type_name(v)} is not a time of day (TIME)")


class _Instant(_Checker):
    """``Types.INSTANT()`` (Java ``Instant``, Flink ``TIMESTAMP_LTZ(9)``): a PyFlink ``Instant``."""

    __slots__ = ()

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, Instant):
            raise self.fail(f"a {_type_name(v)} is not an Instant (TIMESTAMP_LTZ)")
        if type(v.seconds) is not int or type(v.nanos) is not int or not 0 <= v.nanos < 1_000_000_000 \
                or not _INSTANT_MIN <= v.seconds <= _INSTANT_MAX:
            raise self.fail(f"Instant({_short(v.seconds)}, {_short(v.nanos)}) is not a Java Instant")
        return v


# java.time.Instant's range (years -1000000000 .. 1000000000)
_INSTANT_MIN, _INSTANT_MAX = -31557014167219200, 31556889864403199


class _Row(_Checker):
    __slots__ = ("fields",)

    def __init__(self, path: str, fields: List[Check]) -> None:
        super().__init__(path)
        self.fields = fields

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, Row):
            raise self.fail(f"a {_type_name(v)} is not a row (ROW)")
        values = v._values
        if len(values) != len(self.fields):
            raise self.fail(f"a row of {len(values)} fields, not {len(self.fields)} (ROW)")
        v._values = [c(x) for c, x in zip(self.fields, values, strict=True)]  # lengths checked above
        return v


class _List(_Checker):
    """LIST and primitive arrays (Flink's serializers write no null element); basic and object
    arrays (``nulls=True``) hold null elements."""

    __slots__ = ("element", "nulls")

    def __init__(self, path: str, element: Check, nulls: bool = False) -> None:
        super().__init__(path)
        self.element, self.nulls = element, nulls

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, (list, tuple)):
            raise self.fail(f"a {_type_name(v)} is not a list (LIST)")
        out: List[Any] = []
        check = self.element
        for i, x in enumerate(v):
            if x is None:
                if self.nulls:
                    out.append(None)
                    continue
                raise self.fail(f"element {i} is null (a Flink LIST cannot hold null elements)")
            out.append(check(x))
        return out


class _Map(_Checker):
    __slots__ = ("key", "value")

    def __init__(self, path: str, key: Check, value: Check) -> None:
        super().__init__(path)
        self.key, self.value = key, value

    def __call__(self, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.fail(f"a {_type_name(v)} is not a map (MAP)")
        kc, vc = self.key, self.value
        out = {}
        for k, x in v.items():
            if k is None:
                raise self.fail("a null map key (a Flink MAP cannot hold one)")
            out[kc(k)] = vc(x)
        return out


def value_check(t: TypeInformation, path: str) -> Check:
    """The checker of a column (or nested value) of Flink type ``t``; ``path`` names it in errors.
    Raises ``ValueError`` for a type serdes' row mappings do not produce (no unchecked column)."""
    if isinstance(t, BasicTypeInfo):
        basic = t._basic_type
        if basic in _INT_RANGES:
            sql, lo, hi = _INT_RANGES[basic]
            return _Integer(path, sql, lo, hi)
        if basic is BasicType.FLOAT:
            return _Floating(path, "FLOAT", FLOAT32_MAX)
        if basic is BasicType.DOUBLE:
            return _Floating(path, "DOUBLE", math.inf)
        if basic is BasicType.BOOLEAN:
            return _Boolean(path)
        if basic in (BasicType.STRING, BasicType.CHAR):
            return _String(path)
        if basic is BasicType.BIG_DEC:
            return _Decimal(path, getattr(t, _DECIMAL_ATTR, None))
        if basic is BasicType.INSTANT:
            return _Instant(path)
    elif isinstance(t, LocalTimeTypeInfo):
        if t == LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE):
            return _Date(path)
        if t == LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME):
            return _LocalTime(path)
        if t == LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME):
            return _LocalTimestamp(path)
    elif isinstance(t, DateTypeInfo):
        return _Date(path)
    elif isinstance(t, TimeTypeInfo):
        return _Time(path)
    elif isinstance(t, TimestampTypeInfo):
        return _Timestamp(path)
    elif isinstance(t, PrimitiveArrayTypeInfo):
        elem = _children(t)[0]
        if isinstance(elem, BasicTypeInfo) and elem._basic_type is BasicType.BYTE:
            return _Bytes(path)
        return _List(path, value_check(elem, f"{path}[]"))
    elif isinstance(t, RowTypeInfo):
        return _Row(path, [value_check(ft, f"{path}.{n}") for n, ft in zip(t.get_field_names(), t.get_field_types(), strict=False)])
    elif isinstance(t, ListTypeInfo):
        return _List(path, value_check(_children(t)[0], f"{path}[]"))
    elif isinstance(t, (BasicArrayTypeInfo, ObjectArrayTypeInfo)):
        return _List(path, value_check(_children(t)[0], f"{path}[]"), nulls=True)
    elif isinstance(t, MapTypeInfo):
        key, value = _children(t)
        return _Map(path, value_check(key, f"{path}{{key}}"), value_check(value, f"{path}{{}}"))
    raise ValueError(f"column {path!r}: no value check for the Flink type {t}")


def _children(t: Any) -> List[Any]:
    """The component types of a composite type, read through the PyFlink seam (elements; key, value)."""
    from ._pyflink import type_info_children

    return [child for _, child in type_info_children(t)]


def column_checks(row_type: RowTypeInfo) -> List[Check]:
    """One checker per column of ``row_type``, in column order."""
    # strict=False: PyFlink's RowTypeInfo does not check that its names and types pair up, and
    # checking that is not this function's job
    return [value_check(t, n) for n, t in zip(row_type.get_field_names(), row_type.get_field_types(), strict=False)]
