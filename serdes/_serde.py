"""The fast path shared by every format: per-schema decoder and encoder caches.

serdes' serializers subclass confluent-kafka's, so construction, configuration keys, defaults,
subject-name strategies and registration behave exactly as there. What changes is ``__call__``:

* **Deserializers** look the frame header up in a plain dict (the 5 id bytes, the 17 GUID bytes or
  the schema-id header value); a hit is a decoder compiled for that writer schema (and the reader
  schema, if one applies). No lock (dict reads are atomic under the GIL, and a racing miss only
  builds the same decoder twice), no schema walk, no ``BytesIO``. A miss fetches the writer schema
  from the registry once and compiles the decoder.
* **Serializers** look ``(topic, field)`` up in a dict; a hit is an encoder bound to the schema id
  the registry gave for that subject, with the frame prefix (or header value) precomputed. On the
  first record of a ``(topic, field)`` serdes resolves the subject with confluent-kafka's strategy
  and conf (``use.latest.version``, ``use.schema.id``, ``auto.register.schemas``, references),
  registers or looks the schema up, builds the encoder, and writes that first record with it: first
  and later records share one code path, and no per-instance mutable state (confluent-kafka's
  ``_schema_id``, which threads sharing a serializer race on) decides a frame.

Every cache is bounded (``serdes.cache.size``, :mod:`serdes._cache`): entries are written only on a
miss, which drops the oldest entries at the bound, so a hit stays one plain dict lookup. Keys come
from parsed frames only (a schema-id header with bytes after its frame is refused), and misses
are remembered for ``serdes.cache.miss.ttl`` seconds.

Schemas that carry data-contract rules (CEL, encryption, migrations) are handed to confluent-kafka's
implementation for every record, so their semantics are kept at its speed.

Failures are classified where they are caught, by phase, never re-labelled afterwards: a registry
request (only ever wrapped around a call that does nothing else) -> ``RegistryError`` /
``UnknownSchemaError`` / ``SchemaMismatchError`` (409/422); reading a registry schema or compiling a
decoder/encoder from it -> ``SchemaMismatchError``; a decoder call -> ``CorruptPayloadError``; an
encoder call -> ``ValidationError``. The cache lookup and miss (:meth:`FastDeserializer._decoder_for`,
:meth:`FastSerializer._resolve_encoder`) do not depend on the sync ``__call__``.

**The fast-path hook.** A format plugs in through one method per direction and nothing else:
``_build_decoder`` returns a :data:`Decoder` callable or a :class:`ParseStep`; ``_build_encoder``
returns an :data:`Encoder` callable or an :class:`EncodeStep`. A step declares the common case as
a few C-level callables (parse, validate, convert / validate, dumps) that the shared ``__call__``
runs itself, so a cache hit costs no Python frame of serdes' beyond the user's one call; a step
that does not succeed (bad bytes, an invalid value, any exception) hands the record to its
``fallback`` -- the full decoder / encoder, which re-does the work and raises the typed error. No
format overrides ``__call__``.

**Dispatch.** ``__call__`` is ``property(attrgetter("_dispatch"))``: the instance's ``_dispatch``
is chosen once, at construction (:func:`serdes._native.active`). With the native extension it is a
``Dispatcher`` / ``EncodeDispatcher`` (rust/src/dispatch.rs) that reads the frame, looks the
cache up and runs the entry -- a step or a callable -- natively, so the user's call goes from the
interpreter straight into Rust; it calls back into Python only for what it does not handle
(``_decode_any`` / ``_encode_any``: misses, headers, GUIDs, subject-keyed readers, rules). In
pure Python it is the bound ``_call_py``, the reference implementation of the same path (in a
process without the extension, ``__call__`` is ``_call_py`` itself: no property step). Both
read and fill the same cache dicts. ``deserialize_batch`` / ``serialize_batch`` run a whole batch
in one native call (or one Python loop), every record attempted, failures reported by position
(:class:`~serdes.BatchError`).
"""

from __future__ import annotations

import operator
import threading
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Type, Union, cast,
)

from confluent_kafka.schema_registry import (
    Schema,
    dual_schema_id_deserializer,
    header_schema_id_serializer,
    prefix_schema_id_deserializer,
    prefix_schema_id_serializer,
)
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.serialization import MessageField, SerializationContext

from . import _native
from ._cache import MissCache, bounded_store
from ._errors import (
    BatchError,
    CorruptPayloadError,
    FramingError,
    InvalidMagicByteError,
    RecordError,
    RecordLocation,
    RegistryBadResponseError,
    SchemaMismatchError,
    SerdesError,
    TruncatedFrameError,
    UnknownSchemaError,
    ValidationError,
)
from ._confluent import SerdeConfig, get_reader_schema, registry_of, snapshot, trim_parsed_schemas
from ._limits import DEFAULT_LIMITS, Limits
from ._registry import checked_schema, classify_registry_error, fetch_writer_schema, registry_call
from ._writer_schema import WriterSchema, frame_of, writer_schema_of

if TYPE_CHECKING:  # serdes.arrow needs pyarrow, an extra: imported when called
    from .arrow._batch import ArrowBatch
from ._wire import (
    MAGIC_GUID,
    MAGIC_ID,
    Frame,
    canonical_header_value,
    find_schema_id_header,
    header_value_bytes,
    parse_frame,
    parse_header_value,
    schema_id_header_name,
)

__all__ = [
    "FastDeserializer", "FastSerializer", "Decoder", "Encoder", "ParseStep", "EncodeStep", "Built", "BuiltEncoder",
    "has_rules",
]

_VALUE = MessageField.VALUE
_KEY = MessageField.KEY

# decode(data, offset, ctx) -> value ; the payload is data[offset:]
Decoder = Callable[[Any, int, Optional[SerializationContext]], Any]
# encode(obj, ctx) -> framed bytes: the prefix the encoder was built with, then the payload
Encoder = Callable[[Any, Optional[SerializationContext]], bytes]


class ParseStep(NamedTuple):
    """The common case of a decoder, declared instead of written as a closure.

    For a frame whose cache entry is this step, ``__call__`` runs::

        value = parse(payload)                  # e.g. orjson.loads, Message.FromString
        if validate is None or validate(value): # e.g. a jsonschema-rs is_valid
            return value if convert is None else convert(value, ctx)   # e.g. JSON from_dict
        # else, or if parse / validate raised anything:
        return fallback(data, 5, ctx)           # the full decoder: raises the typed error

    ``payload`` is the record after the frame: the 5 bytes of magic 0 + id, and for Protobuf the
    message-index array (``[0]`` is one zero byte; the step ``_build_decoder`` returns is the one
    for ``[0]``, a decoder registers those of other messages with ``_step_registrar`` once it has
    checked their index path). An exception from ``convert`` (the user's code) is a
    :class:`CorruptPayloadError` as from any decoder; ``convert`` never runs twice for a record.
    ``parse`` and ``validate`` must be free of side effects (a failing step is re-done by
    ``fallback``).
    """

    parse: Callable[[bytes], Any]
    validate: Optional[Callable[[Any], bool]]
    convert: Optional[Callable[[Any, Optional[SerializationContext]], Any]]
    fallback: Decoder


class EncodeStep(NamedTuple):
    """The common case of an encoder, declared instead of written as a closure.

    For a ``(topic, field)`` whose cache entry is this step, ``__call__`` runs::

        if validate is None or validate(obj):        # e.g. jsonschema-rs is_valid, a class check
            payload = dumps(obj)                     # e.g. orjson.dumps, Message.SerializeToString
            if null_check is None or b"null" not in payload or null_check(obj):
                return prefix + payload
        # else, or if anything raised:
        return fallback(obj, ctx)                    # the full encoder: raises the typed error

    ``null_check`` is for encoders that write NaN / Infinity as ``null`` (orjson): a payload holding
    ``null`` is accepted only when it says the value holds no such float. Only prefix framing has
    steps (header framing appends a header, a custom ``schema.id.serializer`` is the user's call).
    """

    prefix: bytes
    validate: Optional[Callable[[Any], bool]]
    dumps: Callable[[Any], bytes]
    null_check: Optional[Callable[[Any], bool]]
    fallback: Encoder


#: what ``_build_decoder`` returns: a decoder, or a declared step (with its fallback decoder)
Built = Union[Decoder, ParseStep]
#: what ``_build_encoder`` returns: an encoder, or a declared step (with its fallback encoder)
BuiltEncoder = Union[Encoder, EncodeStep]

_find = bytes.find


def decoder_of(built: Built) -> Decoder:
    """The plain decoder of what ``_build_decoder`` returned (a step's fallback)."""
    return built.fallback if built.__class__ is ParseStep else built  # type: ignore[return-value]


def encoder_of(built: BuiltEncoder) -> Encoder:
    """The plain encoder of what ``_build_encoder`` returned (a step's fallback)."""
    return built.fallback if built.__class__ is EncodeStep else built  # type: ignore[return-value]


def has_rules(schema: Optional[Schema]) -> bool:
    """True when a registry schema carries data-contract rules that confluent-kafka would execute."""
    if schema is None:
        return False
    rs = getattr(schema, "rule_set", None)
    if rs is None:
        return False
    return bool(rs.domain_rules or rs.migration_rules or getattr(rs, "encoding_rules", None))


def _payload_error(e: BaseException, data: Any, ctx: Optional[SerializationContext], schema_id: Any) -> SerdesError:
    """The error of a decoder call: typed errors pass (with the context's location), anything else
    a decoder raises is the payload's fault -- decoders run only after the frame was read, the
    writer schema fetched and the decoder compiled, so registry and schema failures never get here."""
    if isinstance(e, SerdesError):
        if e.schema_id is None and schema_id is not None:
            # a decoder shared by every frame (no registry client) does not know the record's id
            e.schema_id = schema_id
            e.args = (e._format(),)
        return _located(e, ctx)
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
    #: the key of serdes._confluent.FORMAT_ATTRIBUTES naming the private attributes this class reads
    _confluent_kind = "avro.deserializer"
    _decoders: Dict[Any, Decoder]
    _header_decoders: Dict[Any, Decoder]
    #: frame head (magic 0 + id, plus Protobuf's index array [0]) -> the declared step of that schema
    _steps: Dict[bytes, ParseStep]
    #: confluent-kafka's configuration of this instance, read once (serdes._confluent)
    _conf: SerdeConfig

    def _init_fast(self) -> None:
        self._decoders = {}
        self._header_decoders = {}
        self._steps = {}
        limits: Limits = getattr(self, "_limits", DEFAULT_LIMITS)
        #: entries each cache keeps (serdes.cache.size); enforced on the miss path only
        self._cache_size = limits.cache_size
        #: typed errors of recent misses, by cache key (serdes.cache.miss.ttl)
        self._misses = MissCache(limits.cache_size, limits.cache_miss_ttl)
        #: deserialize_with_schema's answers by (cache key, topic, field), and its failed lookups
        self._writer_schemas: Dict[Any, WriterSchema] = {}
        self._writer_schema_misses = MissCache(limits.cache_size, limits.cache_miss_ttl)
        #: without a registry client: the one decoder of each framing (prefix, header), every id's
        self._shared: Dict[bool, Built] = {}
        self._init_dispatch()
        self._conf = conf = snapshot(self, self._confluent_kind)
        sid_deser = conf.schema_id_deserializer
        self._reads_headers = sid_deser is dual_schema_id_deserializer
        self._custom_id_deserializer = sid_deser not in (dual_schema_id_deserializer, prefix_schema_id_deserializer)
        # With use.latest.version (and friends) the reader schema depends on the subject, i.e. on the
        # topic: the cache key then includes (topic, field).
        self._subject_keyed = conf.subject_keyed

    def _init_dispatch(self) -> None:
        native = _native.active()
        dispatcher = getattr(native, "Dispatcher", None)
        # the bytes a step is keyed by: the 5-byte frame, and for Protobuf the index array [0]
        self._step_tail = b"\x00" if self._protobuf else b""
        self._step_head = 5 + len(self._step_tail)
        if dispatcher is not None:
            d = dispatcher(self._steps, self._decoders, ParseStep, self._step_tail, self._decode_any, _payload_error)
            self._dispatch: Callable[..., Any] = d
            self._batch: Callable[..., Tuple[List[Any], List[Tuple[int, BaseException]]]] = d.batch
        else:
            self._dispatch = self._call_py
            self._batch = self._batch_py

    # -- to implement -----------------------------------------------------------------------------
    def _build_decoder(
        self,
        writer: Schema,
        reader: Optional[Schema],
        frame: Frame,
        ctx: Optional[SerializationContext],
    ) -> Built:  # pragma: no cover - abstract
        """The decoder of one writer (and reader) schema: a :data:`Decoder`, or a :class:`ParseStep`
        whose ``fallback`` is one (the fast-path hook; see the module docstring)."""
        raise NotImplementedError

    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # -- hot path ---------------------------------------------------------------------------------
    #: ``deser(data, ctx=None)``: decode one framed record (same call as confluent-kafka's
    #: deserializers). The instance's dispatcher (native, or :meth:`_call_py`), with no Python
    #: frame in between.
    if TYPE_CHECKING:  # what the property resolves to, for type checkers

        def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any: ...
    else:
        __call__ = property(operator.attrgetter("_dispatch"), doc="Decode one framed record (as confluent-kafka's).")

    def _call_py(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        """Decode one framed record: the pure-Python dispatcher (the native one does the same)."""
        # The common case first: magic 0 + 4-byte id, no headers, a schema seen before. Its cache
        # key is the 5 frame bytes (GUID keys are 17 bytes and subject-keyed ones tuples, so a hit
        # can only be a magic-0 frame whose payload starts at 5).
        if data.__class__ is bytes and (ctx is None or not ctx.headers):
            steps = self._steps
            if steps:
                # a declared step (ParseStep): run here, no decoder frame in between
                head = self._step_head
                if head != 5 and len(data) > 5:
                    # Protobuf: the key includes the message-index array; for the one-byte indexes
                    # of every real schema its length is the count (zigzag, byte 5) + 1
                    head = 6 + (data[5] >> 1)
                step = steps.get(data[:head])
                if step is not None:
                    # (indexing the tuple, not unpacking it: fewer stores on the hot path)
                    try:
                        value = step[0](data[head:])  # parse
                        validate = step[1]
                        ok = validate is None or validate(value)
                    except Exception:  # the fallback decoder raises the typed error
                        ok = False
                    if ok:
                        convert = step[2]
                        if convert is None:
                            return value
                        try:
                            return convert(value, ctx)
                        except Exception as e:
                            raise _payload_error(e, data, ctx, int.from_bytes(data[1:5], "big")) from e
                    try:
                        return step[3](data, 5, ctx)  # fallback
                    except Exception as e:
                        raise _payload_error(e, data, ctx, int.from_bytes(data[1:5], "big")) from e
            dec = self._decoders.get(data[:5])
            if dec is not None:
                try:
                    return dec(data, 5, ctx)
                except Exception as e:
                    raise _payload_error(e, data, ctx, int.from_bytes(data[1:5], "big")) from e
        return self._decode_any(data, ctx)

    if not TYPE_CHECKING and _native.native is None:
        # No extension in this process (not built, or SERDES_PURE_PYTHON=1): every instance is
        # pure, so the pure dispatcher is the call itself, saving the property step (~80 ns a
        # call). Instances built inside forced_pure() beside native ones keep the property.
        __call__ = _call_py

    def _decode_any(self, data: Optional[bytes], ctx: Optional[SerializationContext]) -> Any:
        """Every framing: header-carried ids, GUIDs, subject-keyed readers, cache misses."""
        if data is None:
            return None
        if data.__class__ is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                # bytes(5) would be five zero bytes, a frame of schema id 0
                raise TypeError(f"{type(self).__name__} decodes bytes, not {type(data).__name__}")
            # bytearray / memoryview: slices of them are not hashable cache keys
            data = bytes(data)
        dec, offset = self._decoder_for(data, ctx)
        try:
            return dec(data, offset, ctx)
        except Exception as e:
            raise _payload_error(e, data, ctx, self._schema_ref(data, ctx)) from e

    def _decoder_for(self, data: bytes, ctx: Optional[SerializationContext]) -> Tuple[Decoder, int]:
        """``(decoder, payload offset)`` for a framed record: the cache, or a miss that reads the
        frame, fetches the writer schema and compiles the decoder. Raises only typed errors:
        framing, registry (:class:`RegistryError`, :class:`UnknownSchemaError`) or schema
        (:class:`SchemaMismatchError`)."""
        key, header_value, offset = self._cache_key(data, ctx)
        dec = (self._header_decoders if header_value is not None else self._decoders).get(key)
        if dec is None:
            dec = self._miss(data, ctx, key, header_value)
        return dec, offset

    def _cache_key(self, data: bytes, ctx: Optional[SerializationContext]) -> Tuple[Any, Any, int]:
        """``(cache key, schema-id header value or None, payload offset)`` of a record; raises the
        framing errors. No registry access and independent of ``__call__``: the async classes look
        the key up in the same caches and await their own miss."""
        if ctx is not None and ctx.headers and self._reads_headers:
            hv = find_schema_id_header(ctx.headers, ctx.field == MessageField.KEY)
            if hv is not None:
                # bytes as the key (a header written as text is its latin-1 bytes); the cache holds
                # only canonical values of parsed frames (_miss), so a hit is a frame read before
                if hv.__class__ is not bytes:
                    name = schema_id_header_name(ctx.field == MessageField.KEY)
                    hv = header_value_bytes(hv, name, RecordLocation.from_ctx(ctx))
                return (hv if not self._subject_keyed else (hv, ctx.topic, ctx.field)), hv, 0
        if len(data) == 0:
            raise TruncatedFrameError("empty record: expected a magic byte", RecordLocation.from_ctx(ctx))
        magic = data[0]
        if magic == MAGIC_ID:
            key: Any = data[:5]
        elif magic == MAGIC_GUID:
            key = data[:17]
        else:
            raise InvalidMagicByteError(
                f"unknown magic byte {magic:#04x}: not produced by a Schema Registry serializer",
                RecordLocation.from_ctx(ctx),
            )
        offset = len(key)
        if self._subject_keyed:
            key = (key, ctx.topic if ctx is not None else None, ctx.field if ctx is not None else None)
        return key, None, offset

    def deserialize_batch(
        self, payloads: Iterable[Optional[bytes]], ctx: Optional[SerializationContext] = None, *, errors: str = "raise"
    ) -> List[Any]:
        """Decode framed records that share one context (topic, field, headers): one result per
        record, in order -- the values single calls return, in one crossing into native code.

        Every record is attempted. ``errors="raise"`` (default): if any failed, raises
        :class:`~serdes.BatchError` whose ``.errors`` lists ``(index, typed error)`` and whose
        ``.values`` holds the results (``None`` where a record failed); a failure that is not the
        records' (a :class:`~serdes.RegistryError`) is raised as itself. ``errors="collect"``:
        returns the results with each failed record's typed error in its place.
        """
        collect = _collect(errors)
        values, failed = self._batch(payloads, ctx)
        return _batch_result(values, failed, collect, "decode", ctx)

    def _batch_py(
        self, payloads: Iterable[Optional[bytes]], ctx: Optional[SerializationContext]
    ) -> Tuple[List[Any], List[Tuple[int, BaseException]]]:
        return _run_batch(self._call_py, payloads, ctx)

    def deserialize_arrow(
        self, frames: Iterable[Any], ctx: Optional[SerializationContext] = None, *, reader_schema: Any = None,
        errors: str = "raise", metadata: Sequence[str] = (), threads: int = 1,
    ) -> "ArrowBatch":
        """Decode records into one Arrow batch (:class:`serdes.arrow.ArrowBatch`; docs/arrow.md).

        ``frames``: framed values (``bytes``, ``None`` for a tombstone: a row of nulls) sharing
        ``ctx``, or consumer ``Message`` objects (each its own topic and headers; ``metadata`` then
        adds columns of their ``topic``, ``partition``, ``offset``, ``timestamp``, ``key``,
        ``headers``). The columns are the reader schema's: ``reader_schema`` (Avro/JSON: a schema
        string, dict or ``Schema``; Protobuf: a message class), else the deserializer's own, else the
        latest registered under the records' subject, else the one writer schema of the records;
        records of other writer schemas are resolved to it. ``errors="raise"``: a record that does
        not decode raises :class:`~serdes.BatchError` (every record attempted; a registry failure
        as itself); ``"collect"``: such records are left out of the batch and listed in its
        ``errors`` with their positions. ``threads``: Avro lists of at least 8,192 records may be
        decoded on that many threads by the native columnar decoder (the result is the same).
        Needs pyarrow (``serdes[arrow]``).
        """
        from .arrow._decode import deserialize_arrow

        return deserialize_arrow(self, frames, ctx, reader_schema=reader_schema, errors=errors,
                                 metadata=metadata, threads=threads)

    # -- the writer schema with the value ------------------------------------------------------------
    def deserialize_with_schema(
        self, data: Optional[bytes], ctx: Optional[SerializationContext] = None
    ) -> Tuple[Any, Optional[WriterSchema]]:
        """``(value, writer schema)``: the value ``deser(data, ctx)`` returns, and the
        :class:`~serdes.WriterSchema` it was written with (id or GUID, subject, version).
        ``(None, None)`` for a ``None`` record. The registry is asked once per schema, topic and
        field (bounded cache beside the decoders); a record's decode errors are raised as by
        ``deser(data, ctx)``, a failed registry lookup as its typed :class:`~serdes.RegistryError`."""
        value = self(data, ctx)
        if data is None:
            return None, None
        return value, self._writer_schema(data, ctx)

    def deserialize_batch_with_schema(
        self, payloads: Iterable[Optional[bytes]], ctx: Optional[SerializationContext] = None, *, errors: str = "raise"
    ) -> List[Any]:
        """:meth:`deserialize_batch` with each value's writer schema: a list of
        ``(value, WriterSchema)`` (``(None, None)`` for a ``None`` record). Failures are reported as
        by :meth:`deserialize_batch`; with ``errors="collect"`` a failed record's typed error
        stands in place of its pair."""
        collect = _collect(errors)
        items = list(payloads)
        values, failed = self._batch(items, ctx)
        bad = {i for i, _ in failed}
        pairs: List[Any] = [
            (v, None) if i in bad or items[i] is None else (v, self._writer_schema(cast(bytes, items[i]), ctx))
            for i, v in enumerate(values)
        ]
        return _batch_result(pairs, failed, collect, "decode", ctx)

    def _writer_schema(self, data: Any, ctx: Optional[SerializationContext]) -> WriterSchema:
        """The writer schema of a record that decoded: a dict hit, else the registry (once)."""
        if data.__class__ is not bytes:
            data = bytes(data)
        key = (self._cache_key(data, ctx)[0], ctx.topic, ctx.field) if ctx is not None else (
            self._cache_key(data, None)[0], None, None)
        found = self._writer_schemas.get(key)
        if found is not None:
            return found
        self._writer_schema_misses.check(key, ctx)
        try:
            found = writer_schema_of(self, registry_of(self), frame_of(self, data, ctx), ctx)
        except SerdesError as e:
            self._writer_schema_misses.remember(key, e)
            raise
        bounded_store(self._writer_schemas, key, found, self._cache_size)
        return found

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
        conf = self._conf
        if conf.strategy_accepts_client:
            # record-based strategies that ask the registry (associated / registry-backed ones)
            asked: Optional[str] = registry_call(
                "resolving the subject name",
                lambda: conf.subject_name_func(ctx, record_name, registry_of(self), conf.subject_name_conf),
                RecordLocation.from_ctx(ctx),
            )
            return asked
        subject: Optional[str] = conf.subject_name_func(ctx, record_name)
        return subject

    def _record_name(self, writer: Schema) -> Optional[str]:
        """The record/message name a record-based subject strategy needs (format specific)."""
        return None

    def _miss(self, data: Any, ctx: Optional[SerializationContext], key: Any, header_value: Any) -> Decoder:
        """A cache miss: read the frame, then the decoder of its schema (built, or a remembered miss
        raised again). Stores only what a parsed frame keys: a header value with bytes after its
        frame is refused, another spelling of a frame is looked up under its canonical value."""
        loc = RecordLocation.from_ctx(ctx)
        if self._custom_id_deserializer:
            # A user-supplied schema.id.deserializer: confluent-kafka's path understands it, ours does not.
            dec = self._delegate_decoder()
            bounded_store(self._header_decoders if header_value is not None else self._decoders, key, dec,
                          self._cache_size)
            return dec
        if header_value is not None:
            name = schema_id_header_name(ctx is not None and ctx.field == MessageField.KEY)
            frame = parse_header_value(header_value, self._protobuf, loc, name)
            canonical = canonical_header_value(frame)
            if canonical != header_value:
                header_value = canonical
                key = canonical if not self._subject_keyed else (canonical,) + tuple(key[1:])
                known = self._header_decoders.get(key)
                if known is not None:
                    return known
        else:
            frame = parse_frame(data, self._protobuf, loc)
        self._misses.check(key, ctx)
        try:
            built = self._build_for_frame(frame, ctx, loc)
        except SerdesError as e:
            self._misses.remember(key, e)
            raise
        return self._store(key, header_value, built)

    def _build_for_frame(self, frame: Frame, ctx: Optional[SerializationContext], loc: RecordLocation) -> Built:
        """What a miss does after reading the frame: fetch the writer schema and compile its decoder
        (formats without a registry client override it). Raises only typed errors."""
        registry = registry_of(self)
        if registry is None:
            raise UnknownSchemaError(
                f"{type(self).__name__} has no schema_registry_client to fetch the writer schema from", loc,
                frame.schema_id,
            )
        writer = fetch_writer_schema(registry, frame.schema_id, location=loc)
        self._check_format(writer, "writer", frame.schema_id, loc)
        try:
            return self._compile_for(writer, frame, ctx, loc)
        except SerdesError as e:
            raise _located(e, ctx)  # noqa: B904 - the same exception, its location filled in
        except Exception as e:
            # compiling a decoder reads nothing but schemas (registry requests are typed above)
            raise SchemaMismatchError(
                f"the writer schema cannot be read by {type(self).__name__}: {type(e).__name__}: {e}",
                loc, frame.schema_id,
            ) from e

    def _shared_decoder(self, frame: Frame, ctx: Optional[SerializationContext]) -> Built:
        """Without a registry client the decoder cannot depend on the frame's schema id: one decoder
        per framing (prefix or header) serves every id, built on the first record (its errors get
        the record's id from ``_payload_error``)."""
        header = frame.offset == 0
        built = self._shared.get(header)
        if built is None:
            anonymous = Frame(cast(Any, None), frame.message_indexes, frame.offset)
            built = self._shared[header] = self._build_decoder(cast(Schema, None), None, anonymous, ctx)
        return built

    def _uses_rules(self) -> bool:
        """Whether this deserializer's conf asks for data-contract rules (then confluent-kafka decodes)."""
        return self._conf.uses_rules

    def _check_format(self, schema: Schema, role: str, schema_id: Any, loc: RecordLocation) -> None:
        """A registry schema of another format (a consumer pointed at the wrong topic) is a schema
        mismatch, found before any parser reads it."""
        kind = (schema.schema_type or "AVRO").upper()
        if kind != self._schema_type:
            raise SchemaMismatchError(
                f"the {role} schema is a {kind} schema; {type(self).__name__} reads {self._schema_type}",
                loc, schema_id,
            )

    def _compile_for(
        self, writer: Schema, frame: Frame, ctx: Optional[SerializationContext], loc: RecordLocation,
    ) -> Built:
        reader: Optional[Schema] = None
        if self._subject_keyed:
            subject = self._subject(ctx, None)
            if subject is None:
                subject = self._subject(ctx, self._record_name(writer))
            if subject is not None:
                latest = registry_call(
                    f"fetching the reader schema of subject {subject!r}",
                    lambda: get_reader_schema(self, subject),
                    loc,
                    frame.schema_id,
                )
                if latest is not None:
                    reader = checked_schema(f"the reader schema of subject {subject!r}", latest.schema, loc, latest.schema_id)
                    self._check_format(reader, "reader", latest.schema_id, loc)
                    if has_rules(reader):
                        return self._delegate_decoder()
        if has_rules(writer) or self._uses_rules():
            return self._delegate_decoder()
        return self._build_decoder(writer, reader, frame, ctx)

    def _step_registrar(self, frame: Frame) -> Optional[Callable[[bytes, ParseStep], None]]:
        """For a decoder that learns further frame heads of its schema while it runs (Protobuf:
        the message-index arrays other than ``[0]``): ``register(index_bytes, step)`` caches a
        step under the 5 frame bytes + ``index_bytes``; ``None`` where steps do not apply (header
        framing, GUIDs, subject-keyed readers, a custom schema.id.deserializer). The native
        dispatcher reads the whole index array of a frame to find those steps; the pure path
        finds the one-byte-index ones (every real schema's) and leaves the rest to the decoder."""
        if (
            self._subject_keyed or self._custom_id_deserializer or frame.offset == 0
            or not isinstance(frame.schema_id, int)
        ):
            return None
        steps = self._steps
        head = bytes((MAGIC_ID,)) + frame.schema_id.to_bytes(4, "big")

        bound = self._cache_size

        def register(index_bytes: bytes, step: ParseStep) -> None:
            bounded_store(steps, head + index_bytes, step, bound)

        return register

    def _store(self, key: Any, header_value: Any, built: Built) -> Decoder:
        """Cache what ``_build_decoder`` returned; the plain decoder for this record. A step is kept
        for the fast path only where its key is a frame head (magic 0 + id, no header, not
        subject-keyed): every other frame runs its fallback decoder."""
        dec = decoder_of(built)
        bound = self._cache_size
        bounded_store(self._header_decoders if header_value is not None else self._decoders, key, dec, bound)
        if built.__class__ is ParseStep and header_value is None and key.__class__ is bytes and len(key) == 5:
            bounded_store(self._steps, key + self._step_tail, built, bound)
        trim_parsed_schemas(self, bound)
        return dec

    def _delegate_decoder(self) -> Decoder:
        confluent_call = self._confluent_call

        def delegate(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            try:
                return confluent_call(data, ctx)
            except SerdesError:
                raise
            except Exception as e:  # confluent-kafka's call also talks to the registry
                typed = classify_registry_error("decoding with confluent-kafka's deserializer", e, RecordLocation.from_ctx(ctx))
                if typed is not None:
                    raise typed from e
                raise

        return delegate

    def clear_cache(self) -> None:
        """Forget every compiled decoder and remembered miss (the registry client's own caches are
        left alone)."""
        self._steps.clear()
        self._decoders.clear()
        self._header_decoders.clear()
        self._misses.clear()
        self._shared.clear()
        self._writer_schemas.clear()
        self._writer_schema_misses.clear()


class FastSerializer:
    """Mixin for a confluent-kafka serializer subclass.

    The subclass implements :meth:`_build_encoder` and :meth:`_confluent_call` and calls
    :meth:`_init_fast` at the end of its ``__init__``.
    """

    _protobuf = False
    #: the key of serdes._confluent.FORMAT_ATTRIBUTES naming the private attributes this class reads
    _confluent_kind = "avro.serializer"
    _encoders: Dict[Any, Callable[[Any, Optional[SerializationContext]], Optional[bytes]]]
    _value_encoders: Dict[str, Union[Callable[[Any, Optional[SerializationContext]], Optional[bytes]], EncodeStep]]
    _key_encoders: Dict[str, Union[Callable[[Any, Optional[SerializationContext]], Optional[bytes]], EncodeStep]]
    #: confluent-kafka's configuration of this instance, read once (serdes._confluent)
    _conf: SerdeConfig

    def _init_fast(self) -> None:
        self._encoders = {}
        limits: Limits = getattr(self, "_limits", DEFAULT_LIMITS)
        #: entries each encoder cache keeps (serdes.cache.size); enforced on the miss path only
        self._cache_size = limits.cache_size
        #: typed errors of subjects that recently failed to resolve, by (topic, field)
        self._misses = MissCache(limits.cache_size, limits.cache_miss_ttl)
        self._conf = conf = snapshot(self, self._confluent_kind)
        self._register_lock = threading.Lock()
        # the same encoders by topic, one dict per field: hashing a str is cached by CPython, while
        # hashing a (topic, MessageField) tuple runs the str-Enum's __hash__ in Python (~150 ns)
        # (a value there is an encoder or, for prefix framing, the EncodeStep of the fast-path hook)
        self._value_encoders = {}
        self._key_encoders = {}
        sid_ser = conf.schema_id_serializer
        self._framing = (
            "prefix" if sid_ser is prefix_schema_id_serializer
            else "header" if sid_ser is header_schema_id_serializer
            else "custom"
        )
        native = _native.active()
        dispatcher = getattr(native, "EncodeDispatcher", None)
        if dispatcher is not None:
            d = dispatcher(
                self._value_encoders, self._key_encoders, _VALUE, _KEY, EncodeStep, self._encode_any, SerdesError,
                _located,
            )
            self._dispatch: Callable[..., Optional[bytes]] = d
            self._batch: Callable[..., Tuple[List[Any], List[Tuple[int, BaseException]]]] = d.batch
        else:
            self._dispatch = self._call_py
            self._batch = self._batch_py

    # -- to implement -----------------------------------------------------------------------------
    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> BuiltEncoder:  # pragma: no cover
        """An encoder returning ``prefix + payload`` (``prefix`` is empty for header framing), or an
        :class:`EncodeStep` with ``prefix`` whose ``fallback`` is one (the fast-path hook).

        ``written_with`` is the registry schema confluent-kafka encoded with when it was not the
        serializer's own schema (``use.latest.version`` / ``use.schema.id``), else ``None``.
        Writing the prefix inside the encoder saves a concatenation per record.
        """
        raise NotImplementedError

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:  # pragma: no cover
        raise NotImplementedError

    # -- hot path ---------------------------------------------------------------------------------
    #: ``ser(obj, ctx=None)``: encode one value with registry framing (same call as confluent-kafka's
    #: serializers). The instance's dispatcher (native, or :meth:`_call_py`), no Python frame between.
    if TYPE_CHECKING:  # what the property resolves to, for type checkers

        def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]: ...
    else:
        __call__ = property(operator.attrgetter("_dispatch"), doc="Encode one value (as confluent-kafka's).")

    def _call_py(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        """Encode one value: the pure-Python dispatcher (the native one does the same)."""
        if obj is None:
            return None
        if ctx is not None:
            field = ctx.field
            by_topic = self._value_encoders if field is _VALUE else self._key_encoders if field is _KEY else None
            if by_topic is not None:
                enc = by_topic.get(ctx.topic)
                if enc is not None:
                    if enc.__class__ is EncodeStep:
                        # a declared step: run here, no encoder frame in between
                        prefix, validate, dumps, null_check, enc = enc
                        try:
                            if validate is None or validate(obj):
                                payload = dumps(obj)
                                if null_check is None or _find(payload, b"null") < 0 or null_check(obj):
                                    return prefix + payload
                        except Exception:  # noqa: BLE001 - the fallback encoder raises the typed error
                            pass
                    try:
                        return enc(obj, ctx)  # type: ignore[operator]
                    except SerdesError as e:
                        raise _located(e, ctx)  # noqa: B904 - the same exception, its location filled in
        return self._encode_any(obj, ctx)

    if not TYPE_CHECKING and _native.native is None:
        # No extension in this process (not built, or SERDES_PURE_PYTHON=1): every instance is
        # pure, so the pure dispatcher is the call itself, saving the property step (~80 ns a
        # call). Instances built inside forced_pure() beside native ones keep the property.
        __call__ = _call_py

    def _encode_any(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        """Every case but a by-topic hit: other fields, no context, the first record of a subject."""
        if obj is None:
            return None
        key = (ctx.topic, ctx.field) if ctx is not None else None
        enc = self._encoders.get(key)
        if enc is None:
            return self._first(obj, ctx, key)
        try:
            return enc(obj, ctx)
        except SerdesError as e:
            raise _located(e, ctx)  # noqa: B904 - the same exception, its location filled in

    def serialize_batch(
        self, objs: Iterable[Any], ctx: Optional[SerializationContext] = None, *, errors: str = "raise"
    ) -> List[Any]:
        """Encode values for one ``(topic, field)``: one frame per value, in order (``None`` for
        ``None``), in one crossing into native code. Failures as :meth:`FastDeserializer.deserialize_batch`
        (``errors="raise"``: :class:`~serdes.BatchError`, or a :class:`~serdes.RegistryError` as
        itself; ``"collect"``: the typed error in place)."""
        collect = _collect(errors)
        values, failed = self._batch(objs, ctx)
        return _batch_result(values, failed, collect, "encode", ctx)

    def _batch_py(
        self, objs: Iterable[Any], ctx: Optional[SerializationContext]
    ) -> Tuple[List[Any], List[Tuple[int, BaseException]]]:
        return _run_batch(self._call_py, objs, ctx)

    def serialize_arrow(self, data: Any, ctx: Optional[SerializationContext] = None, *, errors: str = "raise"
                        ) -> List[Any]:
        """Encode the rows of Arrow data (a pyarrow ``Table``/``RecordBatch``, or anything with
        ``__arrow_c_stream__``/``__arrow_c_array__``: Polars, DuckDB results) whose columns are the
        serializer's schema's (:func:`serdes.arrow.arrow_schema`): one framed value per row, the bytes
        the per-record call writes for that row. Failures as :meth:`serialize_batch`. Needs pyarrow
        (``serdes[arrow]``)."""
        from .arrow._encode import serialize_arrow

        return serialize_arrow(self, data, ctx, errors=errors)

    # -- slow path --------------------------------------------------------------------------------
    # The first record of a (topic, field) resolves the schema id here, from the subject and the
    # serializer's own (immutable) configuration, and builds the encoder that every later record of
    # that (topic, field) uses; the first record is then written by that same encoder, so first and
    # later calls answer the same. Nothing here reads or writes confluent-kafka's per-instance
    # schema-id state (``_schema_id`` / ``_known_subjects``), which threads sharing one serializer
    # race on. Two threads missing the same (topic, field) at once both resolve it (the registry
    # client's caches make the second cheap) and build equal encoders; the dict store is atomic.

    #: confluent-kafka's schema-type name for SchemaId (frames), per format
    _schema_type = "AVRO"
    #: ``fmt`` for the latest / use.schema.id reader-schema lookup (Protobuf asks ``serialized``)
    _reader_schema_fmt: Optional[str] = None
    #: exceptions confluent-kafka's own call raises for a value it cannot encode (delegated records)
    _value_errors: Tuple[Type[BaseException], ...] = (TypeError, ValueError, KeyError, AttributeError, OverflowError)

    def _uses_rules(self) -> bool:
        return self._conf.uses_rules

    def _writes_own_schema(self) -> bool:
        """Whether values are written with the serializer's own schema: no registry schema is chosen
        per subject (``use.latest.version``, ``use.latest.with.metadata``, ``use.schema.id``)."""
        return not self._conf.subject_keyed

    def _subject_record_name(self) -> Optional[str]:
        """The record name a record-based subject strategy gets (format specific)."""
        return self._conf.schema_name

    def _schema_to_register(self, ctx: SerializationContext, loc: RecordLocation) -> Optional[Schema]:
        """The schema registered / looked up under the subject (Protobuf adds its references)."""
        schema: Optional[Schema] = self._conf.schema
        return schema

    def _message_indexes(self) -> Optional[List[int]]:
        return None

    def _first(self, obj: Any, ctx: Optional[SerializationContext], key: Any) -> Optional[bytes]:
        self._misses.check(key, ctx)
        try:
            built: Optional[BuiltEncoder] = self._resolve_encoder(ctx)
        except SerdesError as e:
            self._misses.remember(key, e)
            raise
        enc: Callable[[Any, Optional[SerializationContext]], Optional[bytes]]
        if built is None:
            # no context (confluent-kafka then writes with whatever id its instance last saw), a
            # serializer without a schema of its own, or data-contract rules: confluent-kafka's
            # call for every record, its errors typed
            enc = self._delegated
            self._remember(ctx, key, enc)
        else:
            enc = encoder_of(built)
            self._remember(ctx, key, built)
        try:
            return enc(obj, ctx)
        except SerdesError as e:
            raise _located(e, ctx)  # noqa: B904 - the same exception, its location filled in

    def _resolve_encoder(self, ctx: Optional[SerializationContext]) -> Optional[BuiltEncoder]:
        """The encoder (or step) for ``ctx``'s (topic, field), or ``None`` when confluent-kafka's call
        must write every record. Only registry requests run here; their failures are typed."""
        if ctx is None or self._uses_rules():
            return None
        loc = RecordLocation.from_ctx(ctx)
        record_name = self._subject_record_name()
        conf = self._conf
        if conf.strategy_accepts_client:
            # record-based strategies that ask the registry (associated / registry-backed ones)
            subject = registry_call(
                "resolving the subject name",
                lambda: conf.subject_name_func(ctx, record_name, registry_of(self), conf.subject_name_conf),
                loc,
            )
        else:
            subject = conf.subject_name_func(ctx, record_name)
        if subject is None:
            return None
        fmt = self._reader_schema_fmt
        latest = registry_call(
            f"fetching the schema to write subject {subject!r} with",
            lambda: get_reader_schema(self, subject, fmt),
            loc,
        )
        written_with: Optional[Schema] = None
        if latest is not None:
            written_with = checked_schema(f"the schema of subject {subject!r}", latest.schema, loc, latest.schema_id)
            if has_rules(written_with):
                return None
            schema_id, guid = latest.schema_id, latest.guid
        else:
            # One registration at a time per serializer (cold path only, never taken for a cached
            # (topic, field)): two threads missing the same subject at once would otherwise both
            # register, and a registry that does not make concurrent registration of one schema
            # idempotent (confluent-kafka's mock://) gives them two ids. The id still comes from
            # this subject's answer alone, never from another call's state.
            with self._register_lock:
                registered = self._register(subject, ctx, loc)
            if registered is None:
                return None
            schema_id, guid = getattr(registered, "schema_id", None), getattr(registered, "guid", None)
        if not isinstance(schema_id, int) and self._framing == "prefix":
            raise RegistryBadResponseError(f"registry answer for subject {subject!r} has no schema id", loc)
        try:
            sid = SchemaId(self._schema_type, schema_id, guid, self._message_indexes())
        except ValueError as e:  # a GUID that is not a UUID
            raise RegistryBadResponseError(f"registry answer for subject {subject!r} has a bad GUID: {e}", loc) from e
        if self._framing == "prefix":
            return self._compile_encoder(sid.id_to_bytes(), written_with, loc)
        encode = encoder_of(self._compile_encoder(b"", written_with, loc))
        if self._framing == "header":
            if sid.guid is None:
                raise RegistryBadResponseError(
                    f"header framing needs a schema GUID and the registry gave none for subject {subject!r}", loc
                )
            return _headered(schema_id_header_name(ctx.field == MessageField.KEY), sid.guid_to_bytes(), encode)
        # framing "custom" means a user's schema.id.serializer is set
        framer = cast(Callable[[bytes, Any, Any], bytes], self._conf.schema_id_serializer)
        return _custom_framed(framer, sid, encode)

    def _compile_encoder(self, prefix: bytes, written_with: Optional[Schema], loc: RecordLocation) -> BuiltEncoder:
        try:
            return self._build_encoder(prefix, written_with)
        except SerdesError:
            raise
        except Exception as e:  # building an encoder reads nothing but the schema
            raise SchemaMismatchError(
                f"{type(self).__name__} cannot write with the schema: {type(e).__name__}: {e}", loc,
            ) from e

    def _register(self, subject: str, ctx: SerializationContext, loc: RecordLocation) -> Any:
        """Register (``auto.register.schemas``) or look up the serializer's schema under ``subject``."""
        schema = self._schema_to_register(ctx, loc)
        if schema is None:
            return None
        normalize = self._conf.normalize_schemas
        if self._conf.auto_register:
            return registry_call(
                f"registering the schema under subject {subject!r}",
                lambda: registry_of(self).register_schema_full_response(subject, schema, normalize_schemas=normalize),
                loc,
            )
        return registry_call(
            f"looking up the schema under subject {subject!r}",
            lambda: registry_of(self).lookup_schema(subject, schema, normalize_schemas=normalize),
            loc,
        )

    def _delegated(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        """confluent-kafka's own call, its failures typed (registry ones by status, a value it
        cannot encode as :class:`ValidationError`)."""
        try:
            return self._confluent_call(obj, ctx)
        except SerdesError as e:
            raise _located(e, ctx)  # noqa: B904 - the same exception, its location filled in
        except Exception as e:
            loc = RecordLocation.from_ctx(ctx)
            typed = classify_registry_error("serializing with confluent-kafka's serializer", e, loc)
            if typed is not None:
                raise typed from e
            if isinstance(e, self._value_errors):
                raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}", loc) from e
            raise

    def _remember(self, ctx: Optional[SerializationContext], key: Any, enc: Any) -> None:
        """Cache an encoder or step: the by-topic dicts of the fast path hold it as built, the
        ``(topic, field)`` dict the plain encoder."""
        bound = self._cache_size
        bounded_store(self._encoders, key, encoder_of(enc), bound)
        if ctx is not None:
            if ctx.field is _VALUE:
                bounded_store(self._value_encoders, ctx.topic, enc, bound)
            elif ctx.field is _KEY:
                bounded_store(self._key_encoders, ctx.topic, enc, bound)
        trim_parsed_schemas(self, bound)

    def clear_cache(self) -> None:
        """Forget every cached encoder and remembered miss; the next record of each subject asks the
        registry again."""
        self._encoders.clear()
        self._value_encoders.clear()
        self._key_encoders.clear()
        self._misses.clear()


_BATCH_ERRORS = ("raise", "collect")


def _collect(errors: str) -> bool:
    if errors not in _BATCH_ERRORS:
        raise ValueError(f"errors must be one of {_BATCH_ERRORS}, not {errors!r}")
    return errors == "collect"


def _run_batch(
    call: Callable[[Any, Optional[SerializationContext]], Any], items: Iterable[Any], ctx: Optional[SerializationContext]
) -> Tuple[List[Any], List[Tuple[int, BaseException]]]:
    """The pure-Python batch loop (the native ``batch`` does the same): every item attempted."""
    values: List[Any] = []
    failed: List[Tuple[int, BaseException]] = []
    append = values.append
    for i, item in enumerate(items):
        try:
            append(call(item, ctx))
        except Exception as e:  # a record's failure, reported by position; BaseException passes
            append(None)
            failed.append((i, e))
    return values, failed


def _batch_result(
    values: List[Any], failed: List[Tuple[int, BaseException]], collect: bool, verb: str,
    ctx: Optional[SerializationContext],
) -> List[Any]:
    if not failed:
        return values
    for i, e in failed:
        if not isinstance(e, SerdesError):
            # not a record's failure but a bug (serdes', or a caller's: a payload that is not
            # bytes): raised as is, never filed among the records' typed errors
            note = getattr(e, "add_note", None)
            if note is not None:
                note(f"raised by the record at index {i} of a batch of {len(values)} ({verb})")
            raise e
    if collect:
        for i, e in failed:
            values[i] = e
        return values
    for _, e in failed:
        if isinstance(e, SerdesError) and not isinstance(e, RecordError):
            # the environment's failure (a RegistryError): not the records', so not a BatchError,
            # which is a SerializationError a skip-the-bad-records handler would swallow
            raise e
    first_i, first = failed[0]
    why = first.reason if isinstance(first, SerdesError) else str(first)
    raise BatchError(
        f"{len(failed)} of {len(values)} records failed to {verb}; the first, at index {first_i}: "
        f"{type(first).__name__}: {why}",
        RecordLocation.from_ctx(ctx), None, failed, values,
    ) from first


def _located(e: SerdesError, ctx: Optional[SerializationContext]) -> SerdesError:
    """``e`` with the context's topic and field filled in where the raiser did not know them."""
    if ctx is not None and e.location.topic is None:
        e.at(topic=ctx.topic, field=ctx.field)
    return e


def _custom_framed(framer: Callable[[bytes, Any, Any], bytes], sid: Any, encode: Encoder) -> Encoder:
    """A user ``schema.id.serializer`` frames each payload (with the id resolved once)."""
    def encode_custom(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
        return framer(encode(obj, ctx), ctx, sid)

    return encode_custom


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
