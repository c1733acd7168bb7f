"""The pure-Python validator serdes falls back to, with its regular expressions bounded.

jsonschema-rs validates everything it can read. What it cannot read -- a Python value a serializer
is given that is not JSON data (``datetime``, non-string keys, ``bytes``), or a schema it does not
compile for another reason than a ``$ref`` or a ``pattern`` -- is validated with confluent-kafka's
``jsonschema`` validator class, extended here so that a hostile schema cannot stall the process:

* ``pattern``, ``patternProperties`` and ``additionalProperties`` match with the ``regex`` module
  under a time budget: all matches of one validation together may take ``Limits.regex_timeout``
  seconds, then a :class:`~serdes.ValidationError` naming the limit is raised (Python's ``re``
  cannot be interrupted: ``^(a|aa)+\\Z`` against 41 characters runs for over a minute);
* ``multipleOf`` is decided on the numbers' decimal values (``0.07`` is a multiple of ``0.01``),
  as jsonschema-rs decides it, not by float division (where ``0.07 / 0.01 = 7.000000000000001``).
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Iterator

import regex

from .._errors import SchemaMismatchError, ValidationError

__all__ = ["bounded_validator_class", "RegexBudget", "is_multiple_of"]


class RegexBudget(threading.local):
    """The deadline of the validation running in this thread (``None``: no validation running)."""

    deadline: Any = None
    timeout: float = 0.0


_budget = RegexBudget()


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    try:
        return regex.compile(pattern)
    except (regex.error, TypeError) as e:
        raise SchemaMismatchError(f"JSON Schema pattern {pattern!r} is not a regular expression: {e}") from e


def _search(pattern: str, text: str) -> bool:
    compiled = _compiled(pattern)
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


def bounded_validator_class(cls: Any) -> Any:
    """``cls`` (a ``jsonschema`` validator class) with bounded regex keywords and decimal ``multipleOf``."""
    import jsonschema
    from jsonschema.validators import extend

    def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _search(patrn, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for k, v in instance.items():
                if isinstance(k, str) and _search(patrn, k):
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            k for k in instance
            if k not in properties and not (isinstance(k, str) and any(_search(p, k) for p in patterns))
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
