"""The regular-expression engine jsonschema-rs runs a schema's patterns with, and its budget.

jsonschema-rs reads ``pattern`` and ``patternProperties`` as ECMA-262 regular expressions,
translates them to Rust syntax, and matches them with one of two engines:

* the ``regex`` crate (:class:`jsonschema_rs.RegexOptions`): linear in the string, no
  backreferences and no lookaround;
* ``fancy-regex`` (:class:`jsonschema_rs.FancyRegexOptions`, jsonschema-rs' default): the same
  translation, and for a pattern with backreferences or lookaround a backtracking matcher whose
  time is bounded only by ``backtrack_limit`` steps *per match*. Past the limit jsonschema-rs still
  gives a verdict (0.61: "invalid", for a value that matches too; the matcher's own answer to a
  failed match is "no match", which under ``not`` or ``patternProperties`` would let a value pass),
  and under the limit a hostile record can hold as many near-limit matches as it has strings
  (``^(?:(a*)*\\1b|a+)$`` against 500 strings of 18 ``a``: 9 s).

The rule (:func:`plan_patterns`): a schema none of whose patterns needs backtracking is compiled
with the linear engine (the translation is the same, so every match gives the same answer). A
schema with such a pattern is compiled with ``fancy-regex`` and ``Limits.regex_backtrack_limit``,
and each value is first run through :class:`PatternGuard`: every string and key of the value is
matched against each backtracking pattern, with that engine and limit, all matches together within
``Limits.regex_timeout`` seconds. A match over the step limit or past the deadline is a
:class:`~serdes.ValidationError` naming the limit, the pattern and where the string is; otherwise
no match of the validation that follows can hit the limit (same engine, same limit, same
strings), so its answer is exact.

The step limit does not bound one match's time: fancy-regex runs the parts it delegates to the
regex crate (which it does not count as steps) again from every position it tries, so one match
costs up to the square of the string's length times the compiled program, unanchored or not
(``(?=[ab])[ab]*a[ab]{449}c`` or ``^(?:(?![ab]*a[ab]{400}c)[ab])*$`` on 4096 random ``a``/``b``: 4
to 9 s; on 1024: 0.2 to 1.9 s; on 512: 0.05 s), and the deadline is read only between matches. So
before matching a string the guard refuses (the same :class:`~serdes.ValidationError`, naming
``Limits.regex_backtrack_max_length``) any string or key longer than that limit: one match costs at
most what a string of that length can, all of them together at most ``regex_timeout`` plus one
match, and the validation that follows never runs fancy-regex on a longer string. The guard is
conservative: it checks every string and key of the value, including ones no backtracking pattern
of the schema applies to (it does not know where in the schema a pattern applies), so a long string
anywhere in such a value is refused; schemas without a backtracking pattern have no guard and no
length limit.

Neither engine can interrupt a match, and "linear" is linear in the string times the compiled
program: when the lazy DFA gives up, each character costs up to ~0.35 ns per compiled byte
(``[ab]*a[ab]{10000}c``, a 20-character pattern of 0.8 MB: 1.8 s per 15 KB string). So both
engines compile with ``size_limit=Limits.regex_size_limit`` (fancy-regex passes it to the parts
it delegates to the regex crate), which bounds every match's cost per character; a pattern over it
runs in the Python fallback (:mod:`serdes.json._pyfallback`, ``regex`` module, interruptible,
``Limits.regex_timeout``), read as jsonschema-rs reads it (:mod:`serdes.json._ecma`), or, where
that reading cannot be written exactly, the schema is a :class:`~serdes.SchemaMismatchError`.
"""

from __future__ import annotations

import enum
import time
from functools import lru_cache
from typing import Any, FrozenSet, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

import jsonschema_rs

from .._errors import SchemaMismatchError, ValidationError
from .._limits import DEFAULT_LIMITS, Limits

__all__ = ["Engine", "PatternPlan", "PatternGuard", "pattern_engine", "plan_patterns", "schema_patterns", "needs_backtracking"]

# Errors jsonschema-rs raises when it cannot read a Python value (the main validation copes).
_UNREADABLE = (ValueError, TypeError, OverflowError)


def schema_patterns(schemas: Sequence[Any]) -> Set[str]:
    """Every ``pattern`` string and ``patternProperties`` key anywhere in ``schemas`` (iterative).

    Deliberately more than the patterns jsonschema-rs compiles: data keywords (``const``,
    ``enum``, ...) are walked too, since a property may be *named* ``enum``; an extra pattern only
    costs a check, a missed one would go unguarded.
    """
    found: Set[str] = set()
    level: List[Any] = list(schemas)
    while level:
        nxt: List[Any] = []
        for node in level:
            if isinstance(node, dict):
                p = node.get("pattern")
                if isinstance(p, str):
                    found.add(p)
                props = node.get("patternProperties")
                if isinstance(props, dict):
                    found.update(k for k in props if isinstance(k, str))
                nxt.extend(v for v in node.values() if isinstance(v, (dict, list)))
            elif isinstance(node, list):
                nxt.extend(v for v in node if isinstance(v, (dict, list)))
        level = nxt
    return found


def _compiles(pattern: str, options: Any) -> bool:
    try:
        jsonschema_rs.Draft202012Validator({"pattern": pattern}, pattern_options=options)
    except Exception:  # noqa: BLE001 - jsonschema-rs' "is not a regex" and anything else: no
        return False
    return True


class Engine(enum.Enum):
    """Where one pattern can run, for a compiled-size bound."""

    #: the regex crate, within the bound
    LINEAR = "linear"
    #: fancy-regex (backreferences, lookaround), its regex-crate parts within the bound
    BACKTRACKING = "backtracking"
    #: a linear-engine pattern whose program is over the bound
    LINEAR_OVERSIZE = "linear, over the size bound"
    #: a backtracking pattern over the bound
    BACKTRACKING_OVERSIZE = "backtracking, over the size bound"
    #: jsonschema-rs compiles it in neither engine (not ECMA-262, or over the regex crate's own limit)
    NONE = "none"


def pattern_engine(pattern: str, size_limit: int) -> Engine:
    """Which of jsonschema-rs' engines runs ``pattern`` when its compiled program (the regex
    crate's ``size_limit``, in bytes; fancy-regex passes it to the parts it delegates) may be at
    most ``size_limit`` bytes."""
    # cached for patterns of ordinary length (the cache's memory is bounded by count and length)
    return _engine_cached(pattern, size_limit) if len(pattern) <= 1000 else _engine(pattern, size_limit)


def _engine(pattern: str, size_limit: int) -> Engine:
    if _compiles(pattern, jsonschema_rs.RegexOptions(size_limit=size_limit)):
        return Engine.LINEAR
    if _compiles(pattern, jsonschema_rs.RegexOptions()):
        return Engine.LINEAR_OVERSIZE
    if _compiles(pattern, jsonschema_rs.FancyRegexOptions(size_limit=size_limit)):
        return Engine.BACKTRACKING
    if _compiles(pattern, jsonschema_rs.FancyRegexOptions()):
        return Engine.BACKTRACKING_OVERSIZE
    return Engine.NONE


_engine_cached = lru_cache(maxsize=1024)(_engine)


def needs_backtracking(pattern: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """jsonschema-rs' linear engine refuses ``pattern`` and its backtracking engine compiles it."""
    return pattern_engine(pattern, limits.regex_size_limit) in (Engine.BACKTRACKING, Engine.BACKTRACKING_OVERSIZE)


class PatternPlan(NamedTuple):
    """How one schema's patterns run."""

    #: ``pattern_options`` for the jsonschema-rs validator (``None``: jsonschema-rs does not run
    #: the schema; the Python fallback does, reading every pattern as jsonschema-rs would)
    options: Any
    #: the patterns that need the backtracking engine (empty: the linear engine runs them all)
    backtracking: Tuple[str, ...]
    #: the patterns over ``serdes.regex.size.limit`` (then ``options`` is ``None``)
    oversize: Tuple[str, ...] = ()
    #: the patterns the Python fallback reads as jsonschema-rs does (:mod:`serdes.json._ecma`);
    #: the others, which jsonschema-rs does not compile, it reads as Python does
    ecma: FrozenSet[str] = frozenset()

    def guard(self, limits: Limits) -> Optional["PatternGuard"]:
        return PatternGuard(self.backtracking, limits) if self.backtracking else None


def plan_patterns(schemas: Sequence[Any], limits: Limits) -> PatternPlan:
    """The engine for ``schemas`` (a root schema and the documents it references): the one rule.

    * every pattern compiles within ``serdes.regex.size.limit`` in the linear engine: that engine;
    * some need backtracking, and their regex-crate parts compile within the bound: fancy-regex
      with the step limit and the size bound, and :class:`PatternGuard` for those patterns;
    * a linear-engine pattern is over the bound, and every pattern of the schema is one
      :mod:`serdes.json._ecma` writes exactly for Python's ``regex`` module: the Python fallback
      (``options`` ``None``), where matching has ``serdes.regex.timeout``;
    * otherwise (a backtracking pattern over the bound, or with one over the bound a pattern the
      fallback cannot read as jsonschema-rs does): :class:`~serdes.SchemaMismatchError` naming the
      pattern and the limit.

    Patterns jsonschema-rs compiles in neither engine leave the plan to the caller (jsonschema-rs
    refuses the schema, and the Python fallback reads it as Python does, as before).
    """
    size_limit = limits.regex_size_limit
    engines = {p: pattern_engine(p, size_limit) for p in schema_patterns(schemas)}
    over = sorted(p for p, e in engines.items() if e in (Engine.LINEAR_OVERSIZE, Engine.BACKTRACKING_OVERSIZE))
    hard = tuple(sorted(p for p, e in engines.items() if e is Engine.BACKTRACKING))
    if not over:
        if not hard:
            return PatternPlan(jsonschema_rs.RegexOptions(size_limit=size_limit), ())
        return PatternPlan(
            jsonschema_rs.FancyRegexOptions(backtrack_limit=limits.regex_backtrack_limit, size_limit=size_limit), hard
        )
    from ._ecma import Untranslatable, to_python

    advice = "raise serdes.regex.size.limit or simplify the pattern"
    for p in over:
        if engines[p] is Engine.BACKTRACKING_OVERSIZE:
            raise SchemaMismatchError(
                f"JSON Schema pattern {p[:200]!r} needs backtracking (backreferences or lookaround) and its "
                f"other parts compile to more than serdes.regex.size.limit={size_limit} bytes in jsonschema-rs' "
                f"regular-expression engine, where a match cannot be interrupted; {advice}"
            )
    where = (
        f"JSON Schema pattern {over[0][:200]!r} compiles to more than serdes.regex.size.limit={size_limit} bytes "
        f"in jsonschema-rs' linear-time engine, where a match cannot be interrupted"
    )
    for p, e in sorted(engines.items()):
        if e is Engine.BACKTRACKING:
            raise SchemaMismatchError(
                f"{where}; the schema's pattern {p[:200]!r} needs backtracking (backreferences or lookaround), "
                f"which serdes' Python fallback cannot read as jsonschema-rs does; {advice}"
            )
        if e is not Engine.NONE:
            try:
                to_python(p)
            except Untranslatable as u:
                raise SchemaMismatchError(
                    f"{where}; the schema's pattern {p[:200]!r} uses {u}, which serdes' Python fallback cannot "
                    f"read as jsonschema-rs does; {advice}"
                ) from None
    return PatternPlan(None, (), tuple(over), frozenset(p for p, e in engines.items() if e is not Engine.NONE))


def _strings(value: Any) -> Iterator[Any]:
    """Every string jsonschema-rs may match a pattern against in ``value``: string values, object
    keys, and the values of enum members (which it reads as their ``.value``). Iterative; each
    container once (a cyclic value is the main validation's problem, not an endless walk)."""
    stack = [value]
    seen: Set[int] = set()
    while stack:
        x = stack.pop()
        if isinstance(x, enum.Enum):
            stack.append(x.value)
            if not isinstance(x, str):
                continue
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            if id(x) in seen:
                continue
            seen.add(id(x))
            for k in x:
                if isinstance(k, enum.Enum):
                    stack.append(k.value)
                if isinstance(k, str):
                    yield k
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, (list, tuple)):
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.extend(reversed(x))


def _where(value: Any, target: Any) -> Tuple[str, bool]:
    """The JSON path of the string ``target`` (the object itself) in ``value``, and whether it is
    an object key there, for the error."""
    from ._validator import json_path

    stack: List[Tuple[Any, Tuple[Any, ...]]] = [(value, ())]
    seen: Set[int] = set()
    while stack:
        x, path = stack.pop()
        if x is target:
            return json_path(path), False
        if isinstance(x, enum.Enum):
            stack.append((x.value, path))
        elif isinstance(x, dict):
            if id(x) in seen:
                continue
            seen.add(id(x))
            for k in x:
                if k is target or (isinstance(k, enum.Enum) and k.value is target):
                    return json_path(path + (k,)), True
            stack.extend(reversed([(v, path + (k,)) for k, v in x.items()]))
        elif isinstance(x, (list, tuple)):
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.extend(reversed([(v, path + (i,)) for i, v in enumerate(x)]))
    return "$", False


class PatternGuard:
    """Matches a value's strings against the backtracking patterns of a schema within the budget;
    raises :class:`~serdes.ValidationError` when it is exceeded (see the module docstring)."""

    __slots__ = ("_matchers", "_limit", "_timeout", "_max_length")

    #: the clock the deadline is read from (a test may count or step it)
    clock = staticmethod(time.monotonic)

    def __init__(self, patterns: Sequence[str], limits: Limits) -> None:
        options = jsonschema_rs.FancyRegexOptions(
            backtrack_limit=limits.regex_backtrack_limit, size_limit=limits.regex_size_limit
        )
        self._matchers = [(p, jsonschema_rs.Draft202012Validator({"pattern": p}, pattern_options=options)) for p in patterns]
        self._limit = limits.regex_backtrack_limit
        self._timeout = limits.regex_timeout
        self._max_length = limits.regex_backtrack_max_length

    def __call__(self, value: Any) -> None:
        clock = self.clock
        deadline = clock() + self._timeout
        max_length = self._max_length
        for s in _strings(value):
            if len(s) > max_length:
                # before any match: one match cannot be interrupted and costs up to the square of
                # the length, and the validation that follows would match the same string
                self._too_long(value, s)
            for pattern, matcher in self._matchers:
                try:
                    matched = matcher.is_valid(s)
                except _UNREADABLE:
                    break  # a string jsonschema-rs cannot read: the main validation decides
                if not matched:
                    self._no_match_or_over(matcher, pattern, value, s)
                if clock() > deadline:
                    path, key = _where(value, s)
                    raise _error(
                        f"JSON Schema patterns that need the backtracking engine (backreferences or lookaround) did "
                        f"not finish matching the value's strings within serdes.regex.timeout={self._timeout:g} s "
                        f"(stopped after pattern {pattern[:200]!r} on the {len(s)}-character {_what(key)} at {path})",
                        path,
                    )

    def _too_long(self, value: Any, s: Any) -> None:
        path, key = _where(value, s)
        patterns = ", ".join(repr(p[:200]) for p, _ in self._matchers[:3])
        more = f" and {len(self._matchers) - 3} more" if len(self._matchers) > 3 else ""
        raise _error(
            f"JSON Schema pattern {patterns}{more} needs the backtracking engine (backreferences or lookaround), "
            f"which matches no string longer than serdes.regex.backtrack.max.length={self._max_length} characters: "
            f"the {len(s)}-character {_what(key)} at {path}",
            path,
        )

    def _no_match_or_over(self, matcher: Any, pattern: str, value: Any, s: str) -> None:
        """``is_valid`` said no: a plain non-match, or a match jsonschema-rs could not finish."""
        try:
            matcher.validate(s)
        except jsonschema_rs.ValidationError as e:
            if isinstance(e.kind, jsonschema_rs.ValidationErrorKind.Pattern):
                return
            path, key = _where(value, s)
            raise _error(
                f"JSON Schema pattern {pattern[:200]!r} needs more than serdes.regex.backtrack.limit={self._limit} "
                f"backtracking steps on the {len(s)}-character {_what(key)} at {path} ({_short(e.message)})",
                path,
            ) from None


def _what(key: bool) -> str:
    return "object key" if key else "string"


def _error(message: str, path: str) -> ValidationError:
    err = ValidationError(message)
    err.json_path = path  # type: ignore[attr-defined]
    return err


def _short(text: str, limit: int = 120) -> str:
    text = text.split("\n", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."
