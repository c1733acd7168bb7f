"""AvroDeserializer: confluent-kafka's constructor and call, with per-schema compiled decoders."""

from __future__ import annotations

import io
from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer as _ConfluentAvroDeserializer
from confluent_kafka.serialization import SerializationContext
from fastavro import schemaless_reader

from .._errors import SchemaMismatchError
from .._serde import Decoder, FastDeserializer
from .._wire import Frame

__all__ = ["AvroDeserializer"]


class AvroDeserializer(FastDeserializer, _ConfluentAvroDeserializer):
    """Decodes Confluent-framed Avro into dicts (or objects via ``from_dict``).

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.avro.AvroDeserializer``; see there. The writer schema comes
    from the registry (by id, GUID or schema-id header); ``schema_str`` (or ``use.latest.version``)
    gives the reader schema it is resolved against. After the first record of a schema, decoding is
    a dict lookup plus the compiled decoder.
    """

    _schema_type = "AVRO"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:
        return _ConfluentAvroDeserializer.__call__(self, data, ctx)

    def _record_name(self, writer: Schema) -> Optional[str]:
        parsed = self._get_parsed_schema(writer)
        return parsed.get("name") if isinstance(parsed, dict) else None

    def _build_decoder(
        self, writer: Schema, reader: Optional[Schema], frame: Frame, ctx: Optional[SerializationContext]
    ) -> Decoder:
        writer_parsed = self._get_parsed_schema(writer)
        if reader is not None:
            reader_parsed = self._get_parsed_schema(reader)
        elif self._reader_schema is not None:
            reader_parsed = self._reader_schema
        else:
            reader_parsed = None
        return_record_name = self._return_record_name
        from_dict = self._from_dict
        if reader_parsed is not None:
            from fastavro._read_common import SchemaResolutionError  # type: ignore

            try:
                # fastavro resolves writer against reader lazily; force it once so a mismatch is a
                # typed error on the first record, not a KeyError deep in a decode.
                schemaless_reader(io.BytesIO(b""), writer_parsed, reader_parsed)
            except SchemaResolutionError as e:
                raise SchemaMismatchError(f"writer schema cannot be read with the reader schema: {e}") from e
            except Exception:
                pass

        def decode(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            fo = io.BytesIO(data)
            fo.seek(offset)
            obj = schemaless_reader(fo, writer_parsed, reader_parsed, return_record_name)
            if from_dict is not None:
                return from_dict(obj, ctx)
            return obj

        return decode
