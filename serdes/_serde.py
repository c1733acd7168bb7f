"""The fast path shared by every format: per-schema decoder and encoder caches.

serdes' serializers subclass confluent-kafka's, so construction, configuration keys, defaults,
subject-name strategies and registration behave exactly as there. What changes is ``__call__``:

* **Deserializers** look the frame header up in a plain dict (the 5 id bytes, the 17 GUID bytes or
  the schema-id header value); a hit is a decoder compiled for that writer schema (and the reader
  schema, if one applies). No lock (dict reads are atomic under the GIL, and a racing miss only
  builds the same decoder twice), no schema walk, no ``BytesIO``. A miss fetches the writer schema
  from the registry once and compiles the decoder.
* **Serializers** look ``(topic, field)`` up in a dict; a hit is an encoder bound to the schema id
  the registry gave for that subject, with the frame prefix (or header value) precomputed. The
  first record of a ``(topic, field)`` goes through confluent-kafka's own implementation, which
  resolves the subject and registers or looks up the schema exactly as it always did; serdes reads
  the frame that call produced and builds the encoder from it.

Schemas that carry data-contract rules (CEL, encryption, migrations) are handed to confluent-kafka's
implementation for every record, so their semantics are kept at its speed.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional

from confluent_kafka.schema_registry import (
    Schema,
    dual_schema_id_deserializer,
    header_schema_id_serializer,
    prefix_schema_id_deserializer,
    prefix_schema_id_serializer,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from ._errors import CorruptPayloadError, FramingError, InvalidMagicByteError, RecordLocation, SerdesError, TruncatedFrameError
from ._registry import fetch_writer_schema, registry_call
from ._wire import (
    MAGIC_GUID,
    MAGIC_ID,
    Frame,
    find_schema_id_header,
    frame_prefix,
    parse_frame,
    parse_header_value,
    schema_id_header_name,
)

__all__ = ["FastDeserializer", "FastSerializer", "Decoder", "Encoder", "has_rules"]

_VALUE = MessageField.VALUE
_KEY = MessageField.KEY

# decode(data, offset, ctx) -> value ; the payload is data[offset:]
Decoder = Callable[[Any, int, Optional[SerializationContext]], Any]
# encode(obj, ctx) -> framed bytes: the prefix the encoder was built with, then the payload
Encoder = Callable[[Any, Optional[SerializationContext]], bytes]


def has_rules(schema: Optional[Schema]) -> bool:
    """True when a registry schema carries data-contract rules that confluent-kafka would execute."""
    if schema is None:
        return False
    rs = getattr(schema, "rule_set", None)
    if rs is None:
        return False
    return bool(rs.domain_rules or rs.migration_rules or getattr(rs, "encoding_rules", None))


def _wrap_unexpected(e: BaseException, data: Any, ctx: Optional[SerializationContext], schema_id: Any) -> SerdesError:
    if isinstance(e, SerdesError):
        if ctx is not None and e.location.topic is None:
            e.at(topic=ctx.topic, field=ctx.field)
        return e
    return CorruptPayloadError(
        f"payload of {len(data)} bytes does not decode with the writer schema: {type(e).__name__}: {e}",
        RecordLocation.from_ctx(ctx),
        schema_id,
    )


class FastDeserializer:
    """Mixin for a confluent-kafka deserializer subclass.

    The subclass implements :meth:`_build_decoder` and calls :meth:`_init_fast` at the end of its
    ``__init__``. Class attribute ``_protobuf`` says whether frames carry message indexes.
    """

    _protobuf = False
    _schema_type = "AVRO"
    _decoders: Dict[Any, Decoder]
    _header_decoders: Dict[Any, Decoder]

    def _init_fast(self) -> None:
        self._decoders = {}
        self._header_decoders = {}
        sid_deser = getattr(self, "_schema_id_deserializer", dual_schema_id_deserializer)
        self._reads_headers = sid_deser is dual_schema_id_deserializer
        self._custom_id_deserializer = sid_deser not in (dual_schema_id_deserializer, prefix_schema_id_deserializer)
        # With use.latest.version (and friends) the reader schema depends on the subject, i.e. on the
        # topic: the cache key then includes (topic, field).
        self._subject_keyed = bool(
            getattr(self, "_use_latest_version", False)
            or getattr(self, "_use_latest_with_metadata", None)
            or getattr(self, "_use_schema_id", None) is not None
        )

    # -- to implement -----------------------------------------------------------------------------
    def _build_decoder(
        self,
        writer: Schema,
        reader: Optional[Schema],
        frame: Frame,
        ctx: Optional[SerializationContext],
    ) -> Decoder:  # pragma: no cover - abstract
        raise NotImplementedError

    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # -- hot path ---------------------------------------------------------------------------------
    def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        """Decode one framed record (same call as confluent-kafka's deserializers)."""
        # The common case first: magic 0 + 4-byte id, no headers, a schema seen before. Its cache
        # key is the 5 frame bytes (GUID keys are 17 bytes and subject-keyed ones tuples, so a hit
        # can only be a magic-0 frame whose payload starts at 5).
        if data.__class__ is bytes and (ctx is None or not ctx.headers):
            dec = self._decoders.get(data[:5])
            if dec is not None:
                try:
                    return dec(data, 5, ctx)
                except Exception as e:
                    raise _wrap_unexpected(e, data, ctx, int.from_bytes(data[1:5], "big")) from e
        return self._decode_any(data, ctx)

    def _decode_any(self, data: Optional[bytes], ctx: Optional[SerializationContext]) -> Any:
        """Every framing: header-carried ids, GUIDs, subject-keyed readers, cache misses."""
        if data is None:
            return None
        if data.__class__ is not bytes:
            # bytearray / memoryview: slices of them are not hashable cache keys
            data = bytes(data)
        try:
            if ctx is not None and ctx.headers and self._reads_headers:
                hv = find_schema_id_header(ctx.headers, ctx.field == MessageField.KEY)
                if hv is not None:
                    key: Any = hv if not self._subject_keyed else (hv, ctx.topic, ctx.field)
                    dec = self._header_decoders.get(key)
                    if dec is None:
                        dec = self._miss(data, ctx, key, hv)
                    return dec(data, 0, ctx)
            magic = data[0]
            if magic == MAGIC_ID:
                key = data[:5]
            elif magic == MAGIC_GUID:
                key = data[:17]
            else:
                raise InvalidMagicByteError(
                    f"unknown magic byte {magic:#04x}: not produced by a Schema Registry serializer",
                    RecordLocation.from_ctx(ctx),
                )
            if self._subject_keyed:
                key = (key, ctx.topic if ctx is not None else None, ctx.field if ctx is not None else None)
            dec = self._decoders.get(key)
            if dec is None:
                dec = self._miss(data, ctx, key, None)
            return dec(data, len(key) if not self._subject_keyed else len(key[0]), ctx)
        except IndexError as e:
            if len(data) == 0:
                raise TruncatedFrameError("empty record: expected a magic byte", RecordLocation.from_ctx(ctx)) from e
            raise _wrap_unexpected(e, data, ctx, None) from e
        except SerdesError as e:
            raise _wrap_unexpected(e, data, ctx, None)
        except Exception as e:
            raise _wrap_unexpected(e, data, ctx, self._schema_ref(data, ctx)) from e

    def deserialize_batch(
        self, payloads: Iterable[Optional[bytes]], ctx: Optional[SerializationContext] = None
    ) -> List[Any]:
        """Decode a list of framed records that share one context (topic, field, no per-record headers)."""
        call = self.__call__
        return [call(p, ctx) for p in payloads]

    # -- slow path --------------------------------------------------------------------------------
    def _schema_ref(self, data: Any, ctx: Optional[SerializationContext]) -> Any:
        try:
            if ctx is not None and ctx.headers:
                hv = find_schema_id_header(ctx.headers, ctx.field == MessageField.KEY)
                if hv is not None:
                    return parse_header_value(hv, self._protobuf).schema_id
            return parse_frame(data, self._protobuf).schema_id
        except Exception:
            return None

    def _subject(self, ctx: Optional[SerializationContext], record_name: Optional[str] = None) -> Optional[str]:
        if ctx is None:
            return None
        if getattr(self, "_strategy_accepts_client", False):
            return self._subject_name_func(ctx, record_name, self._registry, self._subject_name_conf)  # type: ignore[attr-defined]
        return self._subject_name_func(ctx, record_name)  # type: ignore[attr-defined]

    def _record_name(self, writer: Schema) -> Optional[str]:
        """The record/message name a record-based subject strategy needs (format specific)."""
        return None

    def _miss(self, data: Any, ctx: Optional[SerializationContext], key: Any, header_value: Any) -> Decoder:
        loc = RecordLocation.from_ctx(ctx)
        if self._custom_id_deserializer:
            # A user-supplied schema.id.deserializer: confluent-kafka's path understands it, ours does not.
            dec = self._delegate_decoder()
            (self._header_decoders if header_value is not None else self._decoders)[key] = dec
            return dec
        if header_value is not None:
            frame = parse_header_value(header_value, self._protobuf, loc)
        else:
            frame = parse_frame(data, self._protobuf, loc)
        writer = fetch_writer_schema(self._registry, frame.schema_id, location=loc)  # type: ignore[attr-defined]
        reader: Optional[Schema] = None
        if self._subject_keyed:
            subject = self._subject(ctx, None)
            if subject is None:
                subject = self._subject(ctx, self._record_name(writer))
            if subject is not None:
                latest = registry_call(
                    f"fetching the reader schema of subject {subject!r}",
                    lambda: self._get_reader_schema(subject),  # type: ignore[attr-defined]
                    loc,
                    frame.schema_id,
                )
                if latest is not None:
                    if has_rules(latest.schema):
                        dec = self._delegate_decoder()
                        self._store(key, header_value, dec)
                        return dec
                    reader = latest.schema
        if has_rules(writer) or getattr(self, "_validation_rules_execution", "DISABLED") not in ("DISABLED", None):
            dec = self._delegate_decoder()
        else:
            dec = self._build_decoder(writer, reader, frame, ctx)
        self._store(key, header_value, dec)
        return dec

    def _store(self, key: Any, header_value: Any, dec: Decoder) -> None:
        (self._header_decoders if header_value is not None else self._decoders)[key] = dec

    def _delegate_decoder(self) -> Decoder:
        confluent_call = self._confluent_call

        def delegate(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            return confluent_call(data, ctx)

        return delegate

    def clear_cache(self) -> None:
        """Forget every compiled decoder (the registry client's own caches are left alone)."""
        self._decoders.clear()
        self._header_decoders.clear()


class FastSerializer:
    """Mixin for a confluent-kafka serializer subclass.

    The subclass implements :meth:`_build_encoder` and :meth:`_confluent_call` and calls
    :meth:`_init_fast` at the end of its ``__init__``.
    """

    _protobuf = False
    _encoders: Dict[Any, Callable[[Any, Optional[SerializationContext]], Optional[bytes]]]

    def _init_fast(self) -> None:
        self._encoders = {}
        # the same encoders by topic, one dict per field: hashing a str is cached by CPython, while
        # hashing a (topic, MessageField) tuple runs the str-Enum's __hash__ in Python (~150 ns)
        self._value_encoders: Dict[str, Callable[[Any, Optional[SerializationContext]], Optional[bytes]]] = {}
        self._key_encoders: Dict[str, Callable[[Any, Optional[SerializationContext]], Optional[bytes]]] = {}
        sid_ser = getattr(self, "_schema_id_serializer", prefix_schema_id_serializer)
        self._framing = (
            "prefix" if sid_ser is prefix_schema_id_serializer
            else "header" if sid_ser is header_schema_id_serializer
            else "custom"
        )
        # schemas confluent-kafka's first-record call resolved to write with, by id and GUID
        self._resolved_schemas: Dict[Any, Schema] = {}

    # -- to implement -----------------------------------------------------------------------------
    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> Encoder:  # pragma: no cover
        """An encoder returning ``prefix + payload`` (``prefix`` is empty for header framing).

        ``written_with`` is the registry schema confluent-kafka encoded with when it was not the
        serializer's own schema (``use.latest.version`` / ``use.schema.id``), else ``None``.
        Writing the prefix inside the encoder saves a concatenation per record.
        """
        raise NotImplementedError

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:  # pragma: no cover
        raise NotImplementedError

    # -- hot path ---------------------------------------------------------------------------------
    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        """Encode one value with registry framing (same call as confluent-kafka's serializers)."""
        if obj is None:
            return None
        if ctx is not None:
            field = ctx.field
            by_topic = self._value_encoders if field is _VALUE else self._key_encoders if field is _KEY else None
            if by_topic is not None:
                enc = by_topic.get(ctx.topic)
                if enc is not None:
                    return enc(obj, ctx)
        key = (ctx.topic, ctx.field) if ctx is not None else None
        enc = self._encoders.get(key)
        if enc is None:
            return self._first(obj, ctx, key)
        return enc(obj, ctx)

    def serialize_batch(self, objs: Iterable[Any], ctx: Optional[SerializationContext] = None) -> List[Optional[bytes]]:
        """Encode a list of values for one ``(topic, field)``."""
        call = self.__call__
        return [call(o, ctx) for o in objs]

    # -- slow path --------------------------------------------------------------------------------
    def _get_reader_schema(self, subject: str, fmt: Optional[str] = None) -> Any:
        """confluent-kafka's lookup of the schema it writes with (``use.latest.version``,
        ``use.latest.with.metadata``, ``use.schema.id``), remembered so that :meth:`_first` does not
        ask the registry for the same schema again."""
        registered = super()._get_reader_schema(subject, fmt)  # type: ignore[misc]
        if registered is not None:
            self._resolved_schemas[registered.schema_id] = registered.schema
            if getattr(registered, "guid", None):
                self._resolved_schemas[registered.guid] = registered.schema
        return registered

    def _written_schema(self, schema_id: Any, loc: RecordLocation) -> Schema:
        """The registry schema a first record was written with: as confluent-kafka resolved it, else fetched."""
        schema = self._resolved_schemas.get(schema_id if isinstance(schema_id, int) else str(schema_id))
        if schema is not None:
            return schema
        return fetch_writer_schema(self._registry, schema_id, location=loc)  # type: ignore[attr-defined]

    def _uses_rules(self) -> bool:
        return getattr(self, "_validation_rules_execution", "DISABLED") not in ("DISABLED", None)

    def _first(self, obj: Any, ctx: Optional[SerializationContext], key: Any) -> Optional[bytes]:
        loc = RecordLocation.from_ctx(ctx)
        out = registry_call("registering or looking up the schema", lambda: self._confluent_call(obj, ctx), loc)
        if self._framing == "custom" or self._uses_rules() or out is None:
            self._remember(ctx, key, self._confluent_call)
            return out
        if self._framing == "prefix":
            frame = parse_frame(out, self._protobuf, loc)
            header_value = None
        else:
            hv = find_schema_id_header(ctx.headers if ctx is not None else None, ctx is not None and ctx.field == MessageField.KEY)
            if hv is None:
                raise FramingError("the schema-id header the serializer wrote is missing from the context", loc)
            frame = parse_header_value(hv, self._protobuf, loc)
            header_value = bytes(hv)
        written_with = None
        if getattr(self, "_use_latest_version", False) or getattr(self, "_use_latest_with_metadata", None) \
                or getattr(self, "_use_schema_id", None) is not None:
            written_with = self._written_schema(frame.schema_id, loc)
            if has_rules(written_with):
                self._remember(ctx, key, self._confluent_call)
                return out
        if header_value is None:
            self._remember(ctx, key, self._build_encoder(frame_prefix(frame.schema_id, frame.message_indexes), written_with))
        else:
            self._remember(ctx, key, _headered(
                schema_id_header_name(ctx is not None and ctx.field == MessageField.KEY),
                header_value,
                self._build_encoder(b"", written_with),
            ))
        return out

    def _remember(self, ctx: Optional[SerializationContext], key: Any, enc: Any) -> None:
        self._encoders[key] = enc
        if ctx is not None:
            if ctx.field is _VALUE:
                self._value_encoders[ctx.topic] = enc
            elif ctx.field is _KEY:
                self._key_encoders[ctx.topic] = enc

    def clear_cache(self) -> None:
        """Forget every cached encoder; the next record of each subject asks the registry again."""
        self._encoders.clear()
        self._value_encoders.clear()
        self._key_encoders.clear()


def _headered(name: str, value: bytes, encode: Encoder) -> Callable[[Any, Optional[SerializationContext]], bytes]:
    def encode_headered(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
        headers = ctx.headers if ctx is not None else None
        if isinstance(headers, list):
            headers.append((name, value))
        elif isinstance(headers, dict):
            headers[name] = value
        else:
            raise FramingError(
                "header framing (schema.id.serializer=header_schema_id_serializer) needs "
                "SerializationContext.headers to be a list or dict",
                RecordLocation.from_ctx(ctx),
            )
        return encode(obj, ctx)

    return encode_headered
