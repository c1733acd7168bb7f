"""Compiled JSON Schema validators: jsonschema-rs first, confluent-kafka's ``jsonschema`` as fallback.

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

Where jsonschema-rs cannot do the job, the validator is confluent-kafka's own ``jsonschema``
validator with confluent-kafka's ``referencing.Registry``:

* the schema does not compile with jsonschema-rs (a ``$ref`` only confluent-kafka's HTTP retriever
  can fetch, a regex only Python's ``re`` accepts, an unknown ``$schema`` meta-schema);
* per value: a Python value jsonschema-rs cannot read (``datetime``, non-string dict keys, ...) --
  only on the serializer side; a decoded JSON document is always readable.

fastjsonschema was measured and not used: it is 6-20x slower than jsonschema-rs on the documents in
``tests/json_samples.py`` (it generates Python code), supports drafts 4/6/7 only, and fills in
``default`` values (mutating the document), which confluent-kafka does not.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Sequence

import jsonschema_rs

from .._errors import SchemaMismatchError, ValidationError

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
    """

    __slots__ = ("backend", "is_valid", "_rs", "_py", "_py_factory")

    def __init__(self, rs: Any, py_factory: Callable[[], Any]) -> None:
        self._rs = rs
        self._py: Any = None
        self._py_factory = py_factory
        if rs is not None:
            self.backend = "jsonschema-rs"
            self.is_valid: Callable[[Any], bool] = rs.is_valid
        else:
            self.backend = "jsonschema"
            self._py = py_factory()
            self.is_valid = self._py.is_valid

    def _python(self) -> Any:
        if self._py is None:
            self._py = self._py_factory()
        return self._py

    def check(self, value: Any) -> bool:
        try:
            return self.is_valid(value)
        except _UNREADABLE:
            return self._python().is_valid(value)

    def error(self, value: Any) -> ValidationError:
        """The :class:`serdes.ValidationError` for an invalid ``value`` (call after ``is_valid`` said no)."""
        if self._rs is not None:
            try:
                self._rs.validate(value)
            except jsonschema_rs.ValidationError as e:
                return _error(list(e.instance_path), e.message, list(e.schema_path))
            except _UNREADABLE:
                pass
        import jsonschema

        try:
            self._python().validate(value)
        except jsonschema.ValidationError as e:
            return _error(list(e.absolute_path), e.message, list(e.absolute_schema_path))
        return _error([], "value does not conform to the schema", [])  # pragma: no cover - racy

    def validate(self, value: Any) -> None:
        """Raise :class:`serdes.ValidationError` unless ``value`` conforms to the schema."""
        if not self.check(value):
            raise self.error(value)

    def __repr__(self) -> str:
        return f"CompiledValidator(backend={self.backend!r})"


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


def _rs_registry(ref_registry: Any, parsed: Any) -> Optional[Any]:
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
    return jsonschema_rs.Registry(resources, draft=_root_draft(parsed))


def _python_factory(parsed: Any, ref_registry: Any) -> Callable[[], Any]:
    def build() -> Any:
        from jsonschema.validators import validator_for

        cls = validator_for(parsed)
        if ref_registry is not None:
            return cls(parsed, registry=ref_registry)
        return cls(parsed)

    return build


def compile_validator(parsed: Any, ref_registry: Any = None, backend: Optional[str] = None) -> CompiledValidator:
    """Compile ``parsed`` (a JSON Schema dict/bool) with its references.

    Args:
        parsed: the schema.
        ref_registry: confluent-kafka's ``referencing.Registry`` of the schema's named references.
        backend: ``None`` (jsonschema-rs, else jsonschema), ``"jsonschema-rs"`` or ``"jsonschema"``.

    Raises:
        SchemaMismatchError: the schema is not a valid JSON Schema (confluent-kafka raises
            ``jsonschema.SchemaError`` there).
    """
    import jsonschema
    from jsonschema.validators import validator_for

    py_factory = _python_factory(parsed, ref_registry)
    rs = None
    if backend in (None, "jsonschema-rs"):
        try:
            rs = jsonschema_rs.validator_for(parsed, registry=_rs_registry(ref_registry, parsed), validate_formats=False)
        except Exception as e:  # noqa: BLE001 - any failure means "use confluent-kafka's validator"
            if backend == "jsonschema-rs":
                raise SchemaMismatchError(f"jsonschema-rs cannot compile the schema: {_shorten(str(e))}") from e
            log.debug("jsonschema-rs cannot compile a schema, using jsonschema: %s", e)
    if rs is None:
        try:
            validator_for(parsed).check_schema(parsed)
        except jsonschema.SchemaError as e:
            raise SchemaMismatchError(f"not a valid JSON Schema: {_shorten(e.message)}") from e
    return CompiledValidator(rs, py_factory)
