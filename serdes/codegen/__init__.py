"""Typed classes from a schema: ``python -m serdes.codegen`` and :func:`generate`.

The generated module holds one class per Avro record, Protobuf message or JSON Schema object (a
``dataclasses.dataclass(kw_only=True)`` or a ``msgspec.Struct``), one ``str`` enum per enum, and (Avro,
JSON Schema) the schema as ``SCHEMA``; :mod:`serdes.typed`'s ``from_dict`` / ``to_dict`` turn
decoded records into them and back (docs/typed.md).

Schemas are untrusted input: no schema text reaches the generated code except as a ``repr()``
literal, every name becomes a sanitized identifier, and nesting, counts and name lengths are bounded
(:class:`CodegenLimits`); a schema the generator cannot use raises :class:`CodegenError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Union

from ._emit import DEFAULT_CODEGEN_LIMITS, STYLES, Budget, CodegenError, CodegenLimits, check_source, render

__all__ = ["generate", "generate_from_registry", "CodegenError", "CodegenLimits", "STYLES", "SCHEMA_TYPES"]

#: the schema types :func:`generate` takes (the registry's ``schemaType`` names, any case)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


def generate(
    schema_text: str,
    schema_type: str,
    style: str = "dataclass",
    *,
    references: Optional[Dict[str, str]] = None,
    limits: CodegenLimits = DEFAULT_CODEGEN_LIMITS,
) -> str:
    """The Python source of a module of classes for ``schema_text``.

    ``schema_type``: ``"AVRO"``, ``"PROTOBUF"`` or ``"JSON"`` (any case; ``"jsonschema"`` too).
    ``style``: ``"dataclass"`` or ``"msgspec"``. ``references``: the schemas ``schema_text`` refers
    to, by reference name (Avro: any names; Protobuf: import paths; JSON Schema: ``$ref`` targets);
    Protobuf imports of ``google/protobuf/*.proto`` need none. Raises :class:`CodegenError`.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    kind = _kind(schema_type)
    budget = Budget(limits)
    refs = dict(references or {})
    if len(refs) > limits.max_references:
        raise CodegenError(f"the schema has more than {limits.max_references} references")
    if kind == "AVRO":
        from ._avro import avro_module

        module = avro_module(schema_text, style, budget, list(refs.values()))
    elif kind == "PROTOBUF":
        from ._protobuf import protobuf_module

        module = protobuf_module(schema_text, style, budget, refs)
    else:
        from ._jsonschema import jsonschema_module

        module = jsonschema_module(schema_text, style, budget, refs)
    return check_source(render(module, budget))


def generate_from_registry(
    client: Any,
    subject: str,
    version: Union[int, str] = "latest",
    style: str = "dataclass",
    *,
    limits: CodegenLimits = DEFAULT_CODEGEN_LIMITS,
) -> str:
    """:func:`generate` for a registered schema: ``client`` (a confluent-kafka
    ``SchemaRegistryClient``) fetches ``subject``'s ``version`` (a number or ``"latest"``) and,
    through the same registry, the schemas it references (transitively, at most
    ``limits.max_references``). The schema's ``schemaType`` picks the generator. Registry failures
    raise :class:`serdes.RegistryError`."""
    from ._registry import fetch

    text, schema_type, refs = fetch(client, subject, version, limits)
    return generate(text, schema_type, style, references=refs, limits=limits)


def _kind(schema_type: str) -> str:
    t = str(schema_type).upper()
    if t in ("JSONSCHEMA", "JSON_SCHEMA"):
        t = "JSON"
    if t not in SCHEMA_TYPES:
        raise ValueError(f"schema_type must be one of {SCHEMA_TYPES}, not {schema_type!r}")
    return t
