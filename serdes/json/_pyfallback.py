"""The pure-Python validator serdes falls back to, with its regular expressions bounded.

jsonschema-rs validates everything it can read. What it cannot read -- a Python value a serializer
is given that is not JSON data (``datetime``, non-string keys, ``bytes``), or a schema it does not
compile for another reason than a ``$ref`` or a ``pattern``, or whose pattern compiles to more than
``serdes.regex.size.limit`` (:mod:`serdes.json._patterns`; those patterns it reads as jsonschema-rs
does, :mod:`serdes.json._ecma`) -- is validated with confluent-kafka's
``jsonschema`` validator class, extended here so that a hostile schema cannot stall the process:

* ``pattern``, ``patternProperties`` and ``additionalProperties`` match with the ``regex`` module
  under a time budget: all matches of one validation together may take ``Limits.regex_timeout``
  seconds, then a :class:`~serdes.ValidationError` naming the limit is raised (Python's ``re``
  cannot be interrupted: ``^(a|aa)+\\Z`` against 41 characters runs for over a minute);
* ``multipleOf`` is decided on the numbers' decimal values (``0.07`` is a multiple of ``0.01``),
  as jsonschema-rs decides it, not by float division (where ``0.07 / 0.01 = 7.000000000000001``).
"""

from __future__ import annotations

import re
import threading
import time
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from typing import AbstractSet, Any, Callable, Iterator

import regex

from .._errors import SchemaMismatchError, ValidationError

__all__ = ["bounded_validator_class", "bounded_call", "precompile_patterns", "pattern_size", "is_multiple_of"]


class RegexBudget(threading.local):
    """The deadline of the validation running in this thread (``None``: no validation running)."""

    deadline: Any = None
    timeout: float = 0.0


_budget = RegexBudget()


#: the size (literals and classes, counted repeats multiplied out) of a pattern the ``regex``
#: module is asked to compile: it unrolls counted repeats, and ``(?:(?:a{1000}){1000}){1000}``
#: takes gigabytes
MAX_PATTERN_SIZE = 100_000


def pattern_size(pattern: str, limit: int = MAX_PATTERN_SIZE) -> int:
    """Size of ``pattern`` as Python's parser reads it (no compilation, nothing unrolled); stops
    counting past ``limit``. Raises ``re.error``/``RecursionError`` for what Python cannot parse."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore[no-redef, unused-ignore]  # mypy's target version decides
    c = sre_parse

    def size(items: Any) -> int:
        total = 0
        for op, av in items:
            if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
                lo, hi, sub = av
                count = hi if hi != c.MAXREPEAT else lo
                total += max(count, 1) * size(sub)
            elif op is c.SUBPATTERN:
                total += size(av[-1])
            elif op is c.BRANCH:
                total += sum(size(b) for b in av[1])
            elif op in (c.ASSERT, c.ASSERT_NOT):
                total += size(av[1])
            elif op is getattr(c, "ATOMIC_GROUP", None):
                total += size(av)
            elif op is c.GROUPREF_EXISTS:
                total += size(av[1]) + (size(av[2]) if av[2] else 0)
            else:
                total += 1
            if total > limit:
                return total
        return total

    return size(sre_parse.parse(pattern))


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    try:
        too_big = pattern_size(pattern) > MAX_PATTERN_SIZE
    except (re.error, RecursionError, TypeError, OverflowError) as e:
        raise SchemaMismatchError(f"JSON Schema pattern {pattern[:200]!r} is not a regular expression: {e}") from None
    if too_big:
        raise SchemaMismatchError(
            f"JSON Schema pattern {pattern[:200]!r} is too large to compile (more than {MAX_PATTERN_SIZE} "
            "elements with its counted repeats multiplied out)"
        )
    try:
        return regex.compile(pattern)
    except (regex.error, TypeError, RecursionError, MemoryError) as e:
        raise SchemaMismatchError(f"JSON Schema pattern {pattern[:200]!r} is not a regular expression: {e}") from None


_DATA_KEYWORDS = ("const", "enum", "default", "examples")


def precompile_patterns(schemas: Any, ecma: AbstractSet[str] = frozenset()) -> None:
    """Compile (and size-check) every ``pattern`` and ``patternProperties`` regex in ``schemas``
    now, so a pattern too large for the ``regex`` module is a SchemaMismatchError when the schema
    is compiled rather than on a record. Iterative; data keywords (``const``, ``enum``, ...) are
    not schemas and are skipped. Patterns in ``ecma`` are read as jsonschema-rs reads them."""

    def _compile(p: str) -> None:
        (_compiled_ecma if p in ecma else _compiled)(p)

    level = list(schemas)
    while level:
        nxt: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                if isinstance(node.get("pattern"), str):
                    _compile(node["pattern"])
                props = node.get("patternProperties")
                if isinstance(props, dict):
                    for p in props:
                        if isinstance(p, str):
                            _compile(p)
                nxt.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS and isinstance(v, (dict, list)))
            elif isinstance(node, list):
                nxt.extend(v for v in node if isinstance(v, (dict, list)))
        level = nxt


# \p{..}/\P{..} (which Python's own parser, used for the size, does not know) as one character
_PROPERTY_CLASS = re.compile(r"\\[pP]\{[^}]*\}")


@lru_cache(maxsize=256)
def _compiled_ecma(pattern: str) -> Any:
    """``pattern`` read as jsonschema-rs reads it (:mod:`serdes.json._ecma`), size-checked and compiled."""
    from ._ecma import Untranslatable, to_python

    try:
        python = to_python(pattern)
        too_big = pattern_size(_PROPERTY_CLASS.sub("x", python)) > MAX_PATTERN_SIZE
    except (Untranslatable, re.error, RecursionError, TypeError, OverflowError) as e:
        raise SchemaMismatchError(f"JSON Schema pattern {pattern[:200]!r} cannot be read as jsonschema-rs reads it: {e}") from None
    if too_big:
        raise SchemaMismatchError(
            f"JSON Schema pattern {pattern[:200]!r} is too large to compile (more than {MAX_PATTERN_SIZE} "
            "elements with its counted repeats multiplied out)"
        )
    try:
        return regex.compile(python)
    except (regex.error, TypeError, RecursionError, MemoryError) as e:
        raise SchemaMismatchError(f"JSON Schema pattern {pattern[:200]!r} cannot be read as jsonschema-rs reads it: {e}") from None


def _search(pattern: str, text: str, ecma: bool = False) -> bool:
    compiled = _compiled_ecma(pattern) if ecma else _compiled(pattern)
    deadline = _budget.deadline
    if deadline is None:  # not inside a bounded validation (should not happen): bound it anyway
        deadline = time.monotonic() + (_budget.timeout or 0.1)
    remaining = deadline - time.monotonic()
    try:
        if remaining <= 0:
            raise TimeoutError
        return compiled.search(text, timeout=remaining) is not None
    except TimeoutError:
        raise ValidationError(
            f"JSON Schema pattern {pattern!r} did not finish matching a {len(text)}-character string within "
            f"serdes.regex.timeout={_budget.timeout:g} s"
        ) from None


def is_multiple_of(instance: Any, divisor: Any) -> bool:
    """``instance`` is an integer multiple of ``divisor``, on their decimal values (the shortest
    repr of a float, which is what the JSON text said)."""
    if isinstance(instance, bool) or isinstance(divisor, bool):
        return False
    if isinstance(instance, int) and isinstance(divisor, int):
        return divisor != 0 and instance % divisor == 0
    try:
        d = Decimal(repr(divisor)) if isinstance(divisor, float) else Decimal(divisor)
        i = Decimal(repr(instance)) if isinstance(instance, float) else Decimal(instance)
        if not (i.is_finite() and d.is_finite()) or d == 0:
            return False
        if abs(i.adjusted() - d.adjusted()) > 1000:  # huge Decimals from a custom json_decode
            q = float(i) / float(d)
            return q == int(q) if q == q and abs(q) != float("inf") else False
        # exact rationals: Decimal's % has a 28-digit context (1e308 % 0.01 is "impossible")
        return (Fraction(i) / Fraction(d)).denominator == 1
    except (InvalidOperation, ValueError, TypeError):
        return False


def bounded_validator_class(cls: Any, ecma: AbstractSet[str] = frozenset()) -> Any:
    """``cls`` (a ``jsonschema`` validator class) with bounded regex keywords and decimal ``multipleOf``;
    the patterns in ``ecma`` are read as jsonschema-rs reads them, the others as Python does."""
    import jsonschema
    from jsonschema.validators import extend as _extend

    extend: Callable[..., Any] = _extend  # the stubs leave extend() unannotated

    def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _search(patrn, instance, patrn in ecma):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for k, v in instance.items():
                if isinstance(k, str) and _search(patrn, k, patrn in ecma):
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            k for k in instance
            if k not in properties and not (isinstance(k, str) and any(_search(p, k, p in ecma) for p in patterns))
        ]
        if validator.is_type(additional, "object"):
            for k in extras:
                yield from validator.descend(instance[k], additional, path=k)
        elif not additional and extras:
            yield jsonschema.ValidationError(
                f"Additional properties are not allowed ({', '.join(repr(k) for k in sorted(map(str, extras)))} unexpected)"
            )

    def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "number") and not is_multiple_of(instance, divisor):
            yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor!r}")

    return extend(
        cls,
        {"pattern": pattern, "patternProperties": pattern_properties,
         "additionalProperties": additional_properties, "multipleOf": multiple_of},
    )


def bounded_call(fn: Callable[..., Any], timeout: float) -> Callable[..., Any]:
    """``fn`` (a validator method) run with this thread's regex budget set to ``timeout`` seconds."""

    def call(*args: Any, **kwargs: Any) -> Any:
        outer = _budget.deadline
        if outer is None:
            _budget.deadline = time.monotonic() + timeout
            _budget.timeout = timeout
        try:
            return fn(*args, **kwargs)
        finally:
            if outer is None:
                _budget.deadline = None

    return call
