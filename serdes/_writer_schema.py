"""The writer schema of a record: ``deserialize_with_schema`` (id or GUID, subject, version).

A Confluent frame carries only the schema's id (or GUID). Which subject and version that schema
is registered as takes registry requests, so serdes asks them once per (frame head, topic,
field) and keeps the answer in a bounded dict next to the decoders; a later record of the same
schema costs one dict lookup beside its decode. Failed lookups are remembered like decoder misses
(``serdes.cache.miss.ttl``), so a registry that cannot answer is not asked once per record.

The subject is the one the deserializer's subject-name strategy names for the record (the topic
strategy's ``<topic>-value``, a record-name strategy's ``<namespace>.<name>``), looked up with
``lookup_schema`` -- which also gives the id of a GUID frame. A schema the producer registered
under another subject (a different strategy) is found with ``get_schema_versions`` (the
registry's ``/schemas/ids/{id}/versions``): its first registration is reported, and every one is
in :attr:`WriterSchema.registered`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Tuple

from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from ._errors import RecordLocation, UnknownSchemaError
from ._registry import fetch_writer_schema, registry_call
from ._wire import Frame, find_schema_id_header, parse_frame, parse_header_value, schema_id_header_name

if TYPE_CHECKING:
    from ._serde import FastDeserializer

__all__ = ["WriterSchema", "writer_schema_of"]


@dataclass(frozen=True)
class WriterSchema:
    """The schema a record was written with, as :meth:`deserialize_with_schema` returns it.

    Attributes:
        schema_id: the registry's int id (from the frame, or for a GUID frame from the registry
            when it says; else ``None``).
        guid: the GUID of a magic-1 frame or GUID header, as a string; else ``None``.
        schema: the writer schema as the registry returned it (``None`` for a deserializer
            without a registry client, which decodes every record with its own schema).
        subject: the subject the schema is registered under: the one this deserializer's
            subject-name strategy names for the record when the schema is there, else the
            registry's first; ``None`` when the registry lists none (or there is no client).
        version: the schema's version in ``subject``.
        registered: every ``(subject, version)`` the lookup found (one when the strategy's
            subject holds the schema).
    """

    schema_id: Optional[int]
    guid: Optional[str]
    schema: Optional[Schema]
    subject: Optional[str]
    version: Optional[int]
    registered: Tuple[Tuple[str, int], ...] = ()


def frame_of(deser: "FastDeserializer", data: bytes, ctx: Optional[SerializationContext]) -> Frame:
    """The frame of a record that has decoded (so it parses): header value first, as the decoder reads it."""
    loc = RecordLocation.from_ctx(ctx)
    if ctx is not None and ctx.headers and deser._reads_headers:
        is_key = ctx.field == MessageField.KEY
        hv = find_schema_id_header(ctx.headers, is_key)
        if hv is not None:
            return parse_header_value(hv, deser._protobuf, loc, schema_id_header_name(is_key))
    return parse_frame(data, deser._protobuf, loc)


def writer_schema_of(
    deser: "FastDeserializer", registry: Any, frame: Frame, ctx: Optional[SerializationContext],
) -> WriterSchema:
    """Ask the registry for the writer schema of ``frame`` and where it is registered (the miss)."""
    ref = frame.schema_id
    schema_id: Optional[int] = ref if isinstance(ref, int) else None
    guid = None if isinstance(ref, int) else str(ref)
    if registry is None:
        return WriterSchema(schema_id, guid, None, None, None)
    loc = RecordLocation.from_ctx(ctx)
    writer = fetch_writer_schema(registry, ref, location=loc)
    subject = deser._subject(ctx, deser._record_name(writer)) if ctx is not None else None
    if subject is not None:
        try:
            found = registry_call(
                f"looking schema {ref} up in subject {subject!r}",
                lambda: registry.lookup_schema(subject, writer), loc, ref,
            )
        except UnknownSchemaError:
            found = None  # registered under another subject: listed below
        if found is not None and isinstance(found.version, int):
            sid = found.schema_id if schema_id is None and isinstance(found.schema_id, int) else schema_id
            return WriterSchema(sid, guid, writer, found.subject or subject, found.version,
                                ((found.subject or subject, found.version),))
    if schema_id is None:
        return WriterSchema(None, guid, writer, None, None)
    versions = registry_call(
        f"listing the subjects and versions of schema id {schema_id}",
        lambda: registry.get_schema_versions(schema_id), loc, schema_id,
    )
    registered = tuple((v.subject, v.version) for v in versions or ()
                       if isinstance(v.subject, str) and isinstance(v.version, int))
    first = registered[0] if registered else (None, None)
    return WriterSchema(schema_id, guid, writer, first[0], first[1], registered)
