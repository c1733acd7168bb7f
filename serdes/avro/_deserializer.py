"""AvroDeserializer: confluent-kafka's constructor and call, with per-schema compiled decoders."""

from __future__ import annotations

import io
from typing import Any, Dict, FrozenSet, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer as _ConfluentAvroDeserializer
from confluent_kafka.serialization import SerializationContext
from fastavro import schemaless_reader

from .. import _bigstack
from .._confluent import avro_return_record_name, from_dict, get_parsed_schema, reader_schema
from .._errors import CorruptPayloadError, SchemaMismatchError, SerdesError
from .._limits import DEFAULT_LIMITS, Limits, split_limits_args
from .._serde import Decoder, FastDeserializer
from .._wire import Frame
from ._codegen import Unsupported, _is_raw_bytes, compile_validator
from ._native_decoder import compile_native_decoder
from ._refs import ReferencesMixin
from ._typed import record_makers
from ..typed import FromDict

__all__ = ["AvroDeserializer"]


class AvroDeserializer(ReferencesMixin, FastDeserializer, _ConfluentAvroDeserializer):
    """Decodes Confluent-framed Avro into dicts (or objects via ``from_dict``).

    Same constructor arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.avro.AvroDeserializer``; see there. The writer schema comes
    from the registry (by id, GUID or schema-id header); ``schema_str`` (or ``use.latest.version``)
    gives the reader schema it is resolved against. After the first record of a schema, decoding is
    a dict lookup plus the compiled decoder.

    ``conf`` also takes serdes' limit keys (``serdes.max.items``, ``serdes.max.depth``,
    ``serdes.max.schema.depth``, ``serdes.max.references``, ``serdes.max.fields``; see
    docs/security.md), removed before confluent-kafka sees it. Schema references are resolved
    within ``serdes.max.references`` and ``serdes.max.schema.depth``, each referenced subject
    version fetched once (:mod:`serdes.avro._refs`).
    """

    _schema_type = "AVRO"
    _confluent_kind = "avro.deserializer"
    _limits: Limits = DEFAULT_LIMITS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        args, kwargs, self._limits = split_limits_args(args, kwargs, 4)
        super().__init__(*args, **kwargs)
        self._init_fast()

    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:
        return _ConfluentAvroDeserializer.__call__(self, data, ctx)

    def _record_name(self, writer: Schema) -> Optional[str]:
        try:
            parsed = get_parsed_schema(self, writer)
        except Exception:  # noqa: BLE001 - _build_decoder reports it, typed
            return None
        return parsed.get("name") if isinstance(parsed, dict) else None

    def _parse(self, schema: Schema, role: str) -> Any:
        try:
            return get_parsed_schema(self, schema)
        except SerdesError:
            raise
        except Exception as e:  # noqa: BLE001 - fastavro/json errors of an untrusted schema
            raise SchemaMismatchError(f"the {role} schema does not parse: {type(e).__name__}: {e}") from None

    def _build_decoder(
        self, writer: Schema, reader: Optional[Schema], frame: Frame, ctx: Optional[SerializationContext]
    ) -> Decoder:
        try:
            writer_parsed = self._parse(writer, "writer")
            if reader is not None:
                reader_parsed = self._parse(reader, "reader")
            else:
                reader_parsed = reader_schema(self)
        except SchemaMismatchError as e:
            # a schema id names one schema forever: remember the answer, raise it per record
            return _raising(e.reason, frame.schema_id)
        return compile_avro_decoder(
            writer_parsed, reader_parsed, avro_return_record_name(self), from_dict(self), frame.schema_id, self._limits
        )


def _raising(reason: str, schema_id: Any) -> Decoder:
    def mismatch(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
        raise SchemaMismatchError(reason, schema_id=schema_id)

    return mismatch


def _nests_deeper(parsed: Any, levels: int) -> bool:
    """Whether values of the parsed schema can nest more than ``levels`` records, arrays, maps and
    unions deep (a recursive schema always can)."""
    named: Dict[str, int] = {}  # a named record's height, known from its definition on

    def height(s: Any, path: FrozenSet[str]) -> int:
        if isinstance(s, str):  # a named type on the path: recursion
            return levels + 1 if s in path else named.get(s, 0)
        if isinstance(s, list):
            return 1 + max((height(b, path) for b in s), default=0)
        if not isinstance(s, dict):
            return 0
        t = s.get("type")
        if t in ("record", "error"):
            name = str(s.get("name"))
            h = 1 + max((height(f.get("type"), path | {name}) for f in s.get("fields", ())), default=0)
            named[name] = h
            return h
        if t == "array":
            return 1 + height(s.get("items"), path)
        if t == "map":
            return 1 + height(s.get("values"), path)
        return height(t, path) if isinstance(t, (dict, list)) else 0

    try:
        return height(parsed, frozenset()) > levels
    except RecursionError:
        return True


def _fastavro_decoder(
    writer_parsed: Any, reader_parsed: Any, return_record_name: bool, from_dict: Any, validate: Any
) -> Decoder:
    """fastavro's reader for one schema pair (when codegen declines the reader schema), run only on
    payloads ``validate`` (the generated validator of the writer schema: same checks and limits as
    a generated decoder) accepted."""
    if _is_raw_bytes(writer_parsed):
        def decode_raw(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            obj = bytes(data[offset:])
            return from_dict(obj, ctx) if from_dict is not None else obj

        return decode_raw

    # fastavro's Cython reader recurses on the C stack: a value of a schema that can nest deeper
    # than a small thread stack holds is read on serdes' sized-stack thread (serdes/_bigstack.py)
    deep = _nests_deeper(writer_parsed, _bigstack.INLINE_LEVELS)

    def decode(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
        validate(data, offset)
        fo = io.BytesIO(data)
        fo.seek(offset)
        if deep:
            obj = _bigstack.call(lambda: schemaless_reader(fo, writer_parsed, reader_parsed, return_record_name))
        else:
            obj = schemaless_reader(fo, writer_parsed, reader_parsed, return_record_name)
        if fo.tell() != len(data):
            raise CorruptPayloadError(f"{len(data) - fo.tell()} trailing bytes after the record")
        if from_dict is not None:
            return from_dict(obj, ctx)
        return obj

    return decode


def compile_avro_decoder(
    writer_parsed: Any,
    reader_parsed: Any,
    return_record_name: bool,
    from_dict: Any,
    schema_id: Any = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Decoder:
    """The decoder for one (writer, reader) pair: the native decoder when the extension is active
    (serdes._native.active(), asked here, at build time), else generated code; for the few reader
    schemas codegen declines, fastavro behind the generated validator of the writer schema (same limits).

    A schema serdes refuses (a name that is not an Avro name, nesting past
    ``limits.max_schema_depth``) or a reader schema that can never read the writer schema gives a
    decoder that raises :class:`SchemaMismatchError` (built once, raised for every record of that
    writer schema).
    """
    makers = None
    if isinstance(from_dict, FromDict) and not return_record_name:
        # typed records built inside the decoder when the class agrees with the schema
        makers = record_makers(reader_parsed if reader_parsed is not None else writer_parsed,
                               from_dict.record_type, writer_parsed if reader_parsed is not None else None)
    try:
        try:
            if makers is not None:
                return compile_native_decoder(writer_parsed, reader_parsed, return_record_name, None, limits,
                                              makers=makers)
            return compile_native_decoder(writer_parsed, reader_parsed, return_record_name, from_dict, limits)
        except Unsupported:
            validate = compile_validator(writer_parsed, limits)
            return _fastavro_decoder(writer_parsed, reader_parsed, return_record_name, from_dict, validate)
    except SchemaMismatchError as e:
        return _raising(e.reason, schema_id)
