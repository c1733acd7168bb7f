"""``generated_source``: the Python source serdes generates for an Avro schema (read-only, for
debugging, reviews and bug reports). Nothing here compiles or runs the code."""

from __future__ import annotations

import json
from typing import Any, Optional

from .._errors import SchemaMismatchError
from .._limits import DEFAULT_LIMITS, Limits
from ._codegen import Unsupported, encoder_source
from ._codegen import generated_source as _decoder_source
from ._generator import is_raw_bytes, parse

__all__ = ["generated_source"]

_KINDS = ("decoder", "encoder")


def _schema(schema: Any, role: str) -> Any:
    text = getattr(schema, "schema_str", schema)  # a confluent_kafka.schema_registry.Schema
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError as e:
        raise SchemaMismatchError(f"the {role} schema is not JSON: {e}") from None


def generated_source(
    schema: Any,
    reader_schema: Any = None,
    *,
    kind: str = "decoder",
    return_record_name: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> Optional[str]:
    """The Python source serdes generates to decode (``kind="decoder"``) or encode
    (``kind="encoder"``) records of ``schema``.

    ``schema`` is the writer schema: Avro schema JSON text, its parsed form (a ``dict``, ``list`` or
    primitive name) or a ``confluent_kafka.schema_registry.Schema`` without references.
    ``reader_schema`` (decoders only) is the schema records are read as, as ``AvroDeserializer``'s
    ``schema_str``; ``return_record_name`` is its conf key of that name.

    The source is the code :class:`~serdes.avro.AvroDeserializer` /
    :class:`~serdes.avro.AvroSerializer` run (the default, non-strict serializer), and what a
    traceback through it shows: each compiled function's filename is
    ``<serdes.avro decoder|encoder HASH>``, its lines registered with :mod:`linecache`.

    Returns ``None`` when serdes generates no code for the schema: a reader schema the decoder
    generator declines, or a value shape the encoder generator declines, are decoded/encoded with
    fastavro; a ``"bytes"`` schema is copied as is.

    Raises:
        ValueError: ``kind`` is not ``"decoder"`` or ``"encoder"``, or a reader schema was given
            for an encoder.
        SchemaMismatchError: a schema serdes refuses (not JSON, a name that is not an Avro name,
            nesting past ``limits.max_schema_depth``) or a reader schema that can never read the
            writer schema.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be 'decoder' or 'encoder', not {kind!r}")
    writer = _schema(schema, "writer")
    if kind == "encoder":
        if reader_schema is not None:
            raise ValueError("an encoder has no reader schema")
        parsed = parse(writer, "serializer's", limits)
        if is_raw_bytes(parsed):
            return None
        generated = encoder_source(parsed, False, limits)
        return None if generated is None else generated[0]
    reader = None if reader_schema is None else _schema(reader_schema, "reader")
    try:
        return _decoder_source(writer, reader, return_record_name, limits, check_resolution=True)
    except Unsupported:
        return None
