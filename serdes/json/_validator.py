r"""Compiled JSON Schema validators: jsonschema-rs first, confluent-kafka's ``jsonschema`` as fallback.

confluent-kafka validates with the pure-Python ``jsonschema`` package: ``validator_for(schema)``
(the ``$schema`` keyword picks the draft, 2020-12 when absent), ``check_schema``, then
``cls(schema, registry=<referencing.Registry of the schema's references>)``. No format checker is
passed, so ``format`` is an annotation, never asserted.

serdes compiles the same schema with jsonschema-rs (a Rust validator, ~100-400x faster here) with
the same semantics:

* draft from ``$schema`` (draft 4, 6, 7, 2019-09, 2020-12), 2020-12 when absent, as ``jsonschema``;
* ``validate_formats=False`` (``format`` is not asserted, as in confluent-kafka);
* the schema's references (``Schema.references``, resolved recursively from the registry by
  confluent-kafka's ``_resolve_named_schema``) become a ``jsonschema_rs.Registry`` under the same
  names; a referenced schema without ``$schema`` is read with the root schema's draft, which is
  what ``jsonschema`` does in confluent-kafka (it keeps the root's validator class across a
  ``$ref``; the resource's ``DEFAULT_SPEC`` of draft 7 only affects ``$id`` handling).

Untrusted schemas (docs/security.md): a ``$ref`` outside the schema and its registry references
is refused (:mod:`serdes.json._refs`), values are depth-checked before a recursive schema
validates them (:mod:`serdes.json._depth`), patterns run in the linear-time engine unless they
need backtracking, and then within the regex budget (:mod:`serdes.json._patterns`), and an
unknown ``$schema`` meta-schema is read as draft 2020-12 (what ``jsonschema`` does), never fetched.

Where jsonschema-rs cannot do the job, the validator is confluent-kafka's ``jsonschema`` validator
class with bounded regular expressions and decimal ``multipleOf`` (:mod:`serdes.json._pyfallback`):

* the schema does not compile with jsonschema-rs: a ``pattern`` that is not an ECMA-262 regular
  expression but one Python accepts (``^ab\Z``: confluent-kafka accepts these schemas, so serdes
  does, with Python's reading of the pattern, as confluent-kafka; but within a time budget);
* per value: a Python value jsonschema-rs cannot read (``datetime``, non-string dict keys, ...) --
  only on the serializer side; a decoded JSON document is always readable.

fastjsonschema was measured and not used: it is 6-20x slower than jsonschema-rs on the documents in
``tests/support/json_samples.py`` (it generates Python code), supports drafts 4/6/7 only, and fills in
``default`` values (mutating the document), which confluent-kafka does not.
"""

from __future__ import annotations

import logging
from typing import AbstractSet, Any, Callable, List, Optional, Sequence, Tuple

import jsonschema_rs

from .. import _bigstack
from .._errors import SchemaMismatchError, SerdesError, ValidationError
from .._limits import DEFAULT_LIMITS, Limits
from ._depth import depth_error, exceeds_depth, schema_needs_depth_check, uses_keywords
from ._patterns import PatternPlan, plan_patterns
from ._pyfallback import bounded_call, bounded_validator_class, precompile_patterns
from ._refs import guarded_registry, refused_uri, remote_retriever

# the value depth jsonschema-rs validates on the calling thread: serdes.max.depth's default, which
# fits a 64 KiB thread stack (tests/unit/test_native_guards.py)
_INLINE_DEPTH = 100

__all__ = ["CompiledValidator", "compile_validator", "json_path"]

log = logging.getLogger(__name__)

# Errors jsonschema-rs raises when it cannot read a Python value (not a validation failure).
_UNREADABLE = (ValueError, TypeError, OverflowError)


def json_path(parts: Sequence[Any]) -> str:
    """``["lines", 0, "qty"]`` -> ``$.lines[0].qty``."""
    out = ["$"]
    for p in parts:
        if isinstance(p, int):
            out.append(f"[{p}]")
        else:
            out.append(f".{p}")
    return "".join(out)


def _shorten(text: str, limit: int = 300) -> str:
    text = text.split("\n\n", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CompiledValidator:
    """One schema, compiled once.

    ``is_valid(value) -> bool`` is the hot-path check (jsonschema-rs' own method when available);
    ``validate(value)`` raises :class:`serdes.ValidationError` with the JSON path and reason;
    ``check(value)`` is ``is_valid`` that also copes with values jsonschema-rs cannot read.

    Attributes:
        backend: ``"jsonschema-rs"`` or ``"jsonschema"``.
        max_depth: the nesting bound values are checked against before validation (``None`` when
            the schema cannot make validation recurse deeper than the schema itself).
        unchecked_is_valid: ``is_valid`` without the depth check, for callers that bounded the
            depth already.

    ``guard`` (:class:`serdes.json._patterns.PatternGuard`) runs before jsonschema-rs on every
    value when the schema has patterns that need backtracking: it raises the regex budget's
    :class:`serdes.ValidationError` (from ``is_valid`` too) instead of letting jsonschema-rs give a
    verdict for a match it could not finish.
    """

    __slots__ = ("backend", "is_valid", "max_depth", "unchecked_is_valid", "_rs", "_py", "_py_factory", "_guard")

    def __init__(
        self, rs: Any, py_factory: Callable[[], Any], max_depth: Optional[int] = None,
        guard: Optional[Callable[[Any], None]] = None,
    ) -> None:
        self._rs = rs
        self._py: Any = None
        self._py_factory = py_factory
        self._guard = guard
        self.max_depth = max_depth
        if rs is not None:
            self.backend = "jsonschema-rs"
            raw: Callable[[Any], bool] = rs.is_valid
            if guard is not None:
                def guarded(value: Any, _guard: Callable[[Any], None] = guard, _raw: Callable[[Any], bool] = raw) -> bool:
                    _guard(value)
                    return _raw(value)

                raw = guarded
        else:
            self.backend = "jsonschema"
            self._py = py_factory()
            raw = self._py.is_valid
        if max_depth is not None and max_depth > _INLINE_DEPTH:
            # jsonschema-rs recurses on the C stack once per level of the value: a value deeper
            # than a small thread stack holds (serdes.max.depth raised past the default) is
            # validated on serdes' sized-stack thread (serdes/_bigstack.py)
            inline = raw

            def raw(value: Any, _inline: Callable[[Any], bool] = inline) -> bool:
                if exceeds_depth(value, _INLINE_DEPTH):
                    return _bigstack.call(lambda: _inline(value))
                return _inline(value)

        self.unchecked_is_valid = raw
        if max_depth is None:
            self.is_valid: Callable[[Any], bool] = raw
        else:
            def is_valid(value: Any, _raw: Callable[[Any], bool] = raw, _limit: int = max_depth) -> bool:
                return not exceeds_depth(value, _limit) and _raw(value)

            self.is_valid = is_valid

    @property
    def guarded(self) -> bool:
        """Whether values run through the regex budget's guard first (then ``is_valid`` may raise
        :class:`serdes.ValidationError`, and a fast path would only run the guard twice)."""
        return self._guard is not None

    def _python(self) -> Any:
        if self._py is None:
            self._py = self._py_factory()
        return self._py

    def _too_deep(self, value: Any) -> bool:
        return self.max_depth is not None and exceeds_depth(value, self.max_depth)

    def check(self, value: Any) -> bool:
        if self._too_deep(value):
            return False
        try:
            return self.unchecked_is_valid(value)
        except SerdesError:  # before _UNREADABLE: ValidationError is a ValueError (the regex budget)
            raise
        except _UNREADABLE:
            return self._python_is_valid(value)
        except RecursionError:  # the Python validator on a deep value under a schema without $ref
            return False

    def _python_is_valid(self, value: Any) -> bool:
        try:
            return bool(self._python().is_valid(value))
        except SerdesError:
            raise
        except RecursionError:
            return False
        except Exception as e:
            refused = refused_uri(e)
            if refused is not None:
                raise refused from None
            raise

    def error(self, value: Any) -> ValidationError:
        """The :class:`serdes.ValidationError` for an invalid ``value`` (call after ``is_valid`` said no)."""
        if self._too_deep(value):
            return depth_error(self.max_depth)  # type: ignore[arg-type]
        if self._rs is not None:
            try:
                if self._guard is not None:
                    self._guard(value)
                if self.max_depth is not None and self.max_depth > _INLINE_DEPTH and exceeds_depth(value, _INLINE_DEPTH):
                    _bigstack.call(lambda: self._rs.validate(value))
                else:
                    self._rs.validate(value)
            except ValidationError as e:  # the regex budget
                return e
            except jsonschema_rs.ValidationError as e:
                return _error(list(e.instance_path), e.message, list(e.schema_path))
            except _UNREADABLE:
                pass
        import jsonschema

        try:
            self._python().validate(value)
        except jsonschema.ValidationError as e:
            return _error(list(e.absolute_path), e.message, list(e.absolute_schema_path))
        except RecursionError:
            return ValidationError("JSON value is nested too deeply for the Python validator (RecursionError)")
        except SerdesError as e:
            if isinstance(e, ValidationError):
                return e
            raise
        except Exception as e:
            refused = refused_uri(e)
            if refused is not None:
                raise refused from None
            raise
        return _error([], "value does not conform to the schema", [])  # pragma: no cover - racy

    def validate(self, value: Any) -> None:
        """Raise :class:`serdes.ValidationError` unless ``value`` conforms to the schema."""
        if not self.check(value):
            raise self.error(value)

    def __repr__(self) -> str:
        return f"CompiledValidator(backend={self.backend!r}, max_depth={self.max_depth!r})"


def _error(instance_path: List[Any], message: str, schema_path: List[Any]) -> ValidationError:
    path = json_path(instance_path)
    err = ValidationError(f"JSON Schema validation failed at {path}: {_shorten(message)}")
    err.json_path = path  # type: ignore[attr-defined]
    err.schema_path = "/".join(str(p) for p in schema_path)  # type: ignore[attr-defined]
    return err


_DRAFTS = (
    ("draft-04", jsonschema_rs.Draft4),
    ("draft-06", jsonschema_rs.Draft6),
    ("draft-07", jsonschema_rs.Draft7),
    ("draft/2019-09", jsonschema_rs.Draft201909),
    ("draft/2020-12", jsonschema_rs.Draft202012),
)


def _root_draft(parsed: Any) -> int:
    """The draft ``jsonschema.validators.validator_for`` picks for the root: ``$schema``, else 2020-12."""
    uri = parsed.get("$schema") if isinstance(parsed, dict) else None
    if isinstance(uri, str):
        for marker, draft in _DRAFTS:
            if marker in uri:
                return draft
    return jsonschema_rs.Draft202012


def _rs_registry(ref_registry: Any, parsed: Any, retriever: Any = None) -> Optional[Any]:
    """confluent-kafka's ``referencing.Registry`` (named references) as a ``jsonschema_rs.Registry``.

    The ``jsonschema`` validator confluent-kafka builds evaluates a referenced schema with the
    root's validator class (the root's draft), whatever ``DEFAULT_SPEC`` its resource was
    registered with; so the referenced schemas default to the root's draft here too.
    """
    if ref_registry is None:
        return None
    resources = [(uri, ref_registry[uri].contents) for uri in ref_registry]
    if not resources:
        return None
    return jsonschema_rs.Registry(resources, draft=_root_draft(parsed), retriever=retriever)


class _BoundedPython:
    """A ``jsonschema`` validator whose calls each run under one regex time budget."""

    __slots__ = ("is_valid", "validate", "iter_errors")

    def __init__(self, validator: Any, timeout: float) -> None:
        self.is_valid = _typed_refs(bounded_call(validator.is_valid, timeout))
        self.validate = _typed_refs(bounded_call(validator.validate, timeout))
        self.iter_errors = _typed_refs(bounded_call(lambda v: list(validator.iter_errors(v)), timeout))


def _typed_refs(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` with the Python validator's lazy ``$ref`` failures raised as SchemaMismatchError
    (the refusal itself when a retrieval was refused)."""
    import referencing.exceptions
    from jsonschema.exceptions import _WrappedReferencingError  # type: ignore[attr-defined]  # private: not in the stubs

    def call(value: Any) -> Any:
        try:
            return fn(value)
        except (referencing.exceptions.Unresolvable, _WrappedReferencingError) as e:
            refused = refused_uri(e)
            if refused is not None:
                raise refused from None
            raise SchemaMismatchError(f"JSON Schema $ref cannot be resolved: {_shorten(str(e))}") from None

    return call


def _python_factory(
    parsed: Any, ref_registry: Any, limits: Limits = DEFAULT_LIMITS, ecma: AbstractSet[str] = frozenset()
) -> Callable[[], Any]:
    """The Python fallback's builder; the patterns in ``ecma`` it reads as jsonschema-rs does."""

    def build() -> Any:
        from jsonschema.validators import validator_for

        resources = [parsed] + ([ref_registry[uri].contents for uri in ref_registry] if ref_registry is not None else [])
        if uses_keywords(resources, ("unevaluatedProperties", "patternProperties")):
            # jsonschema evaluates patternProperties for unevaluatedProperties with Python's ``re``
            # directly (no keyword to bound): refuse instead of risking an unbounded match
            raise SchemaMismatchError(
                "the schema needs the Python validator and combines unevaluatedProperties with "
                "patternProperties, whose regexes it cannot run within serdes.regex.timeout"
            )
        precompile_patterns(resources, ecma)

        cls = bounded_validator_class(validator_for(parsed), ecma)
        # always a registry of our own: without one, jsonschema fetches remote $refs itself
        registry = guarded_registry(ref_registry, limits.allow_remote_refs)
        return _BoundedPython(cls(parsed, registry=registry), limits.regex_timeout)

    return build


_DRAFT_CLASSES = {
    jsonschema_rs.Draft4: jsonschema_rs.Draft4Validator,
    jsonschema_rs.Draft6: jsonschema_rs.Draft6Validator,
    jsonschema_rs.Draft7: jsonschema_rs.Draft7Validator,
    jsonschema_rs.Draft201909: jsonschema_rs.Draft201909Validator,
    jsonschema_rs.Draft202012: jsonschema_rs.Draft202012Validator,
}


def compile_validator(
    parsed: Any, ref_registry: Any = None, backend: Optional[str] = None, limits: Limits = DEFAULT_LIMITS
) -> CompiledValidator:
    """Compile ``parsed`` (a JSON Schema dict/bool) with its references.

    Args:
        parsed: the schema.
        ref_registry: a ``referencing.Registry`` of the schema's named references (confluent-kafka's
            or :func:`serdes.json._refs.resolve_references`'); only its resources are used.
        backend: ``None`` (jsonschema-rs, else jsonschema), ``"jsonschema-rs"`` or ``"jsonschema"``.
        limits: ``max_depth`` (values under a recursive schema), ``regex_timeout`` (the Python
            fallback's patterns), ``allow_remote_refs`` (``$ref`` outside schema and references).

    Raises:
        SchemaMismatchError: the schema is not a valid JSON Schema (confluent-kafka raises
            ``jsonschema.SchemaError`` there), or a ``$ref`` points outside it and its references
            (unless remote references are allowed).
    """
    import jsonschema
    from jsonschema.validators import validator_for

    retriever = remote_retriever(limits.allow_remote_refs)
    refused: List[SchemaMismatchError] = []  # jsonschema-rs wraps what its retriever raises

    def retrieve(uri: str) -> Any:
        try:
            return retriever(uri)
        except SchemaMismatchError as e:
            refused.append(e)
            raise

    references = {uri: ref_registry[uri].contents for uri in ref_registry} if ref_registry is not None else {}
    max_depth = limits.max_depth if schema_needs_depth_check(parsed, references, limits.max_depth) else None
    rs = None
    plan: Optional[PatternPlan] = None
    if backend in (None, "jsonschema-rs"):
        try:
            rs, plan = _compile_rs(parsed, ref_registry, [parsed, *references.values()], retrieve, limits)
        except SchemaMismatchError:
            raise
        except Exception as e:  # noqa: BLE001 - any other failure means "use the Python validator"
            if refused:
                raise refused[0] from None
            if backend == "jsonschema-rs":
                raise SchemaMismatchError(f"jsonschema-rs cannot compile the schema: {_shorten(str(e))}") from e
            log.debug("jsonschema-rs cannot compile a schema, using jsonschema: %s", e)
        if rs is None and plan is not None and backend == "jsonschema-rs":
            raise SchemaMismatchError(
                f"jsonschema-rs cannot run JSON Schema pattern {plan.oversize[0][:200]!r} within "
                f"serdes.regex.size.limit={limits.regex_size_limit} bytes"
            )
    # a plan that routed the schema here for the size of a pattern: its patterns read as jsonschema-rs does
    py_factory = _python_factory(parsed, ref_registry, limits, plan.ecma if plan is not None else frozenset())
    if rs is None:
        try:
            if plan is not None and plan.ecma:
                # ECMA-262 patterns jsonschema-rs compiled already: not Python's format "regex" check
                validator_for(parsed).check_schema(parsed, format_checker=None)  # type: ignore[call-arg]  # the stubs' Protocol lacks it
            else:
                validator_for(parsed).check_schema(parsed)
        except jsonschema.SchemaError as e:
            raise SchemaMismatchError(f"not a valid JSON Schema: {_shorten(e.message)}") from e
        except RecursionError:  # a pattern (its format: regex check) or a schema nested too deeply
            raise SchemaMismatchError("not a valid JSON Schema: nested too deeply to check") from None
    return CompiledValidator(rs, py_factory, max_depth, plan.guard(limits) if plan is not None and rs is not None else None)


def _compile_rs(
    parsed: Any, ref_registry: Any, documents: List[Any], retrieve: Callable[[str], Any], limits: Limits
) -> Tuple[Any, PatternPlan]:
    """The jsonschema-rs validator of ``parsed`` with the pattern engine :func:`plan_patterns` picks
    for its documents (``None`` when the plan routes the schema to the Python fallback), and that plan. Documents a remote ``$ref`` fetched while compiling (only
    with ``serdes.allow.remote.refs``) join the plan: their backtracking patterns are guarded too."""
    fetched: List[Any] = []

    def fetching(uri: str) -> Any:
        doc = retrieve(uri)
        fetched.append(doc)
        return doc

    def compile_with(plan: PatternPlan) -> Any:
        cls = _DRAFT_CLASSES[_root_draft(parsed)]
        return cls(
            parsed, registry=_rs_registry(ref_registry, parsed, fetching), retriever=fetching,
            validate_formats=False, pattern_options=plan.options,
        )

    plan = plan_patterns(documents, limits)
    if plan.options is None:
        return None, plan  # a pattern over serdes.regex.size.limit: the Python fallback
    try:
        rs = compile_with(plan)
    except SchemaMismatchError:
        raise
    except Exception:
        if not fetched:
            raise
        # the engine refused a pattern of a fetched document: plan again with it
        again = plan_patterns(documents + fetched, limits)
        if again.options is None:
            return None, again
        if again.backtracking == plan.backtracking:
            raise
        return compile_with(again), again
    if fetched and plan.backtracking:
        plan = plan_patterns(documents + fetched, limits)
    return rs, plan
