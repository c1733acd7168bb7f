"""AvroDeserializer: confluent-kafka's constructor and call, with per-schema compiled decoders."""

from __future__ import annotations

import io
from typing import Any, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer as _ConfluentAvroDeserializer
from confluent_kafka.serialization import SerializationContext
from fastavro import schemaless_reader

from .._errors import CorruptPayloadError, SchemaMismatchError
from .._serde import Decoder, FastDeserializer
from .._wire import Frame
from ._codegen import Unsupported, _is_raw_bytes, compile_decoder

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
        return compile_avro_decoder(
            writer_parsed, reader_parsed, self._return_record_name, self._from_dict, frame.schema_id
        )


def _fastavro_decoder(writer_parsed: Any, reader_parsed: Any, return_record_name: bool, from_dict: Any) -> Decoder:
    """fastavro's reader for one schema pair (the fallback when codegen declines a schema)."""
    if _is_raw_bytes(writer_parsed):
        def decode_raw(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            obj = bytes(data[offset:])
            return from_dict(obj, ctx) if from_dict is not None else obj

        return decode_raw

    def decode(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
        fo = io.BytesIO(data)
        fo.seek(offset)
        obj = schemaless_reader(fo, writer_parsed, reader_parsed, return_record_name)
        if fo.tell() != len(data):
            raise CorruptPayloadError(f"{len(data) - fo.tell()} trailing bytes after the record")
        if from_dict is not None:
            return from_dict(obj, ctx)
        return obj

    return decode


def compile_avro_decoder(
    writer_parsed: Any, reader_parsed: Any, return_record_name: bool, from_dict: Any, schema_id: Any = None
) -> Decoder:
    """The decoder for one (writer, reader) pair: generated code, or fastavro where codegen declines.

    A reader schema that can never read the writer schema gives a decoder that raises
    :class:`SchemaMismatchError` (built once, raised for every record of that writer schema).
    """
    try:
        return compile_decoder(writer_parsed, reader_parsed, return_record_name, from_dict)
    except SchemaMismatchError as e:
        reason = e.reason

        def mismatch(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            raise SchemaMismatchError(reason, schema_id=schema_id)

        return mismatch
    except Unsupported:
        return _fastavro_decoder(writer_parsed, reader_parsed, return_record_name, from_dict)
