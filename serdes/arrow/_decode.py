"""``deserialize_arrow``: framed records (or consumer messages) -> one Arrow record batch.

The batch has one schema, the *reader* schema's columns (:mod:`serdes.arrow._avro`, ``_protobuf``,
``_json``): the ``reader_schema`` given, else the deserializer's own reader (``schema_str``,
Protobuf's message class), else the latest schema registered under the records' subject (when the
topic is known: ``ctx`` or messages), else the writer schema when every record has the same one.
Every record is decoded to its reader-shaped value by serdes' per-record decoders, with the same
limits, then the values become columns; for Avro and Protobuf the native columnar decoders do
both at once when the extension is active (:mod:`serdes.arrow._native`, ``_native_protobuf``), with
the same result, and hand any list they do not take back to that path.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from confluent_kafka.serialization import MessageField, SerializationContext

from .._cache import bounded_store
from .._confluent import from_dict, message_class, own_schema, reader_schema, registry_of
from .._errors import (
    BatchError, ColumnValueError, RecordError, RecordLocation, SchemaMismatchError, SerdesError,
)
from .._serde import has_rules
from .._registry import checked_schema, fetch_writer_schema, registry_call
from .._wire import Frame
from .._writer_schema import frame_of
from ._avro import NoColumnarShape, avro_shape
from ._batch import METADATA, ArrowBatch, metadata_columns
from ._json import json_shape
from ._native import NativeAvroColumns, native_columns
from ._native_json import NativeJsonColumns, native_json_columns
from ._native_protobuf import NativeProtobufColumns, native_protobuf_columns
from ._protobuf import protobuf_shape
from ._shapes import ShapeError, Struct

__all__ = ["deserialize_arrow"]

#: reader views kept per deserializer (one per reader schema asked for)
_MAX_VIEWS = 16


class _View:
    """How one deserializer decodes records for one reader schema: ``shape`` (the columns),
    ``decode(payload, ctx)`` (one record's reader-shaped value; typed errors) and, for Avro,
    Protobuf and JSON Schema, ``native``: the columnar decoder that may take a whole list first (``_native_columns``)."""

    shape: Struct
    native: Union[NativeAvroColumns, NativeProtobufColumns, NativeJsonColumns, None] = None

    def decode(self, payload: Any, ctx: Optional[SerializationContext]) -> Any:  # pragma: no cover
        raise NotImplementedError


def _avro_writer(deser: Any, schema_id: Any, loc: RecordLocation) -> Any:
    """The parsed writer schema of ``schema_id``, checked as the per-record path checks it."""
    writer = fetch_writer_schema(registry_of(deser), schema_id, location=loc)
    deser._check_format(writer, "writer", schema_id, loc)
    if has_rules(writer):
        raise SchemaMismatchError(
            f"writer schema {schema_id} carries data-contract rules, which deserialize_arrow does not run "
            "(confluent-kafka runs them per record: decode these records one by one)", loc, schema_id)
    return deser._parse(writer, "writer")


def _with_native(view: _View, deser: Any, reader_parsed: Any) -> _View:
    """``view`` with the native columnar decoder of ``reader_parsed`` where it can apply: a record
    reader schema, writer schemas from a registry by the frame's prefix, no data-contract rules."""
    if (not view.shape.wrapped and registry_of(deser) is not None and not deser._custom_id_deserializer
            and not deser._uses_rules()):
        view.native = native_columns(deser, reader_parsed, view.shape.type)
    return view


class _Direct(_View):
    """The deserializer's own call gives the values (JSON; Avro and Protobuf read with their own
    reader schema and without a ``from_dict``)."""

    def __init__(self, deser: Any, shape: Struct, convert: Optional[Callable[[Any], Any]] = None) -> None:
        self._deser = deser
        self.shape = shape
        #: the deserializer's value -> the reader-shaped value (Protobuf: message -> dict)
        self.convert = convert

    def decode(self, payload: Any, ctx: Optional[SerializationContext]) -> Any:
        value = self._deser(payload, ctx)
        return self.convert(value) if self.convert is not None and value is not None else value


class _AvroReader(_View):
    """Avro records resolved to a reader schema the deserializer was not built with: one compiled
    decoder per writer schema (serdes' per-record decoders, same limits), bounded."""

    def __init__(self, deser: Any, reader_parsed: Any) -> None:
        self._deser = deser
        self._reader = reader_parsed
        self.shape = avro_shape(reader_parsed, deser._limits.max_schema_depth)
        self._decoders: Dict[Any, Any] = {}

    def decode(self, payload: Any, ctx: Optional[SerializationContext]) -> Any:
        from .._serde import _payload_error

        if payload is None:
            return None
        data = payload if payload.__class__ is bytes else bytes(payload)
        frame = frame_of(self._deser, data, ctx)
        dec = self._decoders.get(frame.schema_id)
        if dec is None:
            dec = self._build(frame, ctx)
        try:
            return dec(data, frame.offset, ctx)
        except Exception as e:
            raise _payload_error(e, data, ctx, frame.schema_id) from e

    def _build(self, frame: Frame, ctx: Optional[SerializationContext]) -> Any:
        from ..avro._deserializer import compile_avro_decoder

        deser = self._deser
        loc = RecordLocation.from_ctx(ctx)
        if registry_of(deser) is None:
            writer_parsed = reader_schema(deser)
        else:
            writer_parsed = _avro_writer(deser, frame.schema_id, loc)
        dec = compile_avro_decoder(writer_parsed, self._reader, False, None, frame.schema_id, deser._limits)
        bounded_store(self._decoders, frame.schema_id, dec, deser._cache_size)
        return dec


def _schema_text(reader: Any) -> str:
    if isinstance(reader, Schema):
        return str(reader.schema_str)
    if isinstance(reader, str):
        return reader
    return json.dumps(reader, sort_keys=True)


def _latest(deser: Any, ctx: Optional[SerializationContext]) -> Optional[Schema]:
    """The latest schema registered under the records' subject, or ``None`` when the subject is
    not known (no topic) or the deserializer has no registry client."""
    registry = registry_of(deser)
    if registry is None or ctx is None or ctx.topic is None:
        return None
    subject = deser._subject(ctx, None)
    if subject is None:
        return None
    loc = RecordLocation.from_ctx(ctx)
    latest = registry_call(f"fetching the latest schema of subject {subject!r}",
                           lambda: registry.get_latest_version(subject), loc)
    schema = checked_schema(f"the latest schema of subject {subject!r}", latest.schema, loc, latest.schema_id)
    deser._check_format(schema, "reader", latest.schema_id, loc)
    return schema


def _one_writer(deser: Any, payloads: Sequence[Any], ctxs: Sequence[Optional[SerializationContext]]) -> Schema:
    """The writer schema every record shares, when no reader schema is known."""
    refs = []
    for p, c in zip(payloads, ctxs, strict=True):
        if p is None:
            continue
        try:
            ref = frame_of(deser, p if p.__class__ is bytes else bytes(p), c).schema_id
        except SerdesError:
            continue  # a record without a frame fails on its own, as a row
        if ref not in refs:
            refs.append(ref)
            if len(refs) > 1:
                raise ValueError(
                    f"records of several writer schemas (ids {refs[0]!r}, {refs[1]!r}, ...) and no reader schema "
                    "to put them in one batch: pass reader_schema=, or a ctx (or messages) with the topic, whose "
                    "latest registered schema is then the reader")
    registry = registry_of(deser)
    if not refs or registry is None:
        raise ValueError("no reader schema: pass reader_schema= (no record names a writer schema)")
    return fetch_writer_schema(registry, refs[0])


def _avro_view(deser: Any, reader: Any, payloads: Sequence[Any], ctxs: Sequence[Any]) -> _View:
    if reader is None:
        own = reader_schema(deser)
        if own is not None and from_dict(deser) is None and not deser._subject_keyed:
            return _with_native(_Direct(deser, avro_shape(own, deser._limits.max_schema_depth)), deser, own)
        latest = _latest(deser, ctxs[0] if ctxs else None)
        reader = latest if latest is not None else _one_writer(deser, payloads, ctxs)
        # a reader the registry chose: its view is kept as a given one's is (by its text), so a
        # topic's batches share one view, its compiled decoders and its native decoder
        return _cached_view(deser, reader, payloads, ctxs)
    if not isinstance(reader, Schema):
        reader = Schema(_schema_text(reader), "AVRO")
    parsed = deser._parse(reader, "reader")
    return _with_native(_AvroReader(deser, parsed), deser, parsed)


def _json_view(deser: Any, reader: Any, payloads: Sequence[Any], ctxs: Sequence[Any]) -> _View:
    if from_dict(deser) is not None:
        raise ValueError("deserialize_arrow needs the records as dicts: this JSONDeserializer has a from_dict")
    if reader is None:
        reader = own_schema(deser)
    if reader is None:
        latest = _latest(deser, ctxs[0] if ctxs else None)
        reader = latest if latest is not None else _one_writer(deser, payloads, ctxs)
    text = _schema_text(reader)
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise SchemaMismatchError(f"the reader JSON Schema does not parse: {e}") from None
    view = _Direct(deser, json_shape(parsed, deser._limits.max_schema_depth))
    if not view.shape.wrapped:
        view.native = native_json_columns(deser, text, view.shape.type)
    return view


def _protobuf_view(deser: Any, reader: Any, payloads: Sequence[Any], ctxs: Sequence[Any]) -> _View:
    from ..protobuf._todict import dict_converter

    if deser._output != "message":
        raise ValueError("deserialize_arrow reads messages: build the ProtobufDeserializer with output='message'")
    cls = reader if reader is not None else (deser._fixed_class or message_class(deser))
    if cls is None:
        raise ValueError("a dynamic ProtobufDeserializer: pass reader_schema= (the message class of the columns)")
    desc = cls.DESCRIPTOR
    to_dict = dict_converter(desc, unwrap_wrappers=True, max_depth=deser._limits.max_depth)

    def convert(msg: Any) -> Any:
        if msg.DESCRIPTOR is not desc:
            # another version (or class) of the message: read into the reader's class, Protobuf's
            # own evolution (fields by number; unknown fields kept aside)
            if msg.DESCRIPTOR.full_name != desc.full_name:
                raise SchemaMismatchError(
                    f"a {msg.DESCRIPTOR.full_name} record in a batch of {desc.full_name} columns")
            msg = cls.FromString(msg.SerializeToString())
        return to_dict(msg)

    view = _Direct(deser, protobuf_shape(desc, deser._limits.max_schema_depth), convert)
    view.native = native_protobuf_columns(deser, desc, view.shape.type)
    return view


def _view(deser: Any, reader: Any, payloads: Sequence[Any], ctxs: Sequence[Any]) -> _View:
    kind = deser._schema_type
    if kind == "AVRO":
        return _avro_view(deser, reader, payloads, ctxs)
    if kind == "JSON":
        return _json_view(deser, reader, payloads, ctxs)
    return _protobuf_view(deser, reader, payloads, ctxs)


def _cached_view(deser: Any, reader: Any, payloads: Sequence[Any], ctxs: Sequence[Any]) -> _View:
    """The view of a given reader schema is kept on the deserializer (its decoders compile once),
    and so is an Avro or Protobuf deserializer's view of its own reader schema (message class), and
    a JSON deserializer's of its ``schema_str``; the others depend on the records and the registry,
    and are built per call."""
    if reader is None:
        own: Optional[_View] = deser.__dict__.get("_arrow_own_view")
        if own is not None:
            return own
        own = _view(deser, reader, payloads, ctxs)
        if isinstance(own, _Direct) and (deser._schema_type in ("AVRO", "PROTOBUF") or (
                deser._schema_type == "JSON" and own_schema(deser) is not None)):
            # (a JSON deserializer's own schema_str: its view depends on nothing else)
            deser.__dict__["_arrow_own_view"] = own
        return own
    views: Dict[Any, _View] = deser.__dict__.setdefault("_arrow_views", {})
    key = reader if not isinstance(reader, (dict, Schema)) else _schema_text(reader)
    view = views.get(key)
    if view is None:
        view = _view(deser, reader, payloads, ctxs)
        bounded_store(views, key, view, _MAX_VIEWS)
    return view


def _mixed(items: List[Any]) -> bool:
    """Whether ``items`` holds both consumer messages and frames (a ``None`` is a frame)."""
    return len({_is_message_type(t) for t in set(map(type, items))}) > 1


def _is_message_type(t: type) -> bool:
    """Whether values of type ``t`` are consumer messages (anything with a ``value()``), not frames."""
    return not issubclass(t, (bytes, bytearray, memoryview)) and callable(getattr(t, "value", None))


def _located_row(e: BaseException, msg: Any) -> BaseException:
    if isinstance(e, SerdesError) and msg is not None:
        e.at(topic=msg.topic(), partition=msg.partition(), offset=msg.offset())
    return e


def deserialize_arrow(
    deser: Any,
    frames: Iterable[Any],
    ctx: Optional[SerializationContext] = None,
    *,
    reader_schema: Any = None,
    errors: str = "raise",
    metadata: Sequence[str] = (),
    threads: int = 1,
) -> ArrowBatch:
    """See :meth:`serdes.avro.AvroDeserializer.deserialize_arrow` (every deserializer has it)."""
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    if type(threads) is not int or threads < 1:
        raise ValueError(f"threads must be a positive int, not {threads!r}")
    items = frames if type(frames) is list else list(frames)
    if not items:
        return _empty_batch(deser, reader_schema, metadata)
    # consumer messages or framed bytes, as the first record says; a mix raises -- checked here for
    # messages, and for frames where a value is not bytes (the native decoder scans them anyway)
    first = items[0] if items and items[0] is not None else next((x for x in items if x is not None), None)
    by_message = first is not None and _is_message_type(type(first))
    messages: List[Any] = items if by_message else [None] * len(items)
    if by_message:
        if _mixed(items):
            raise TypeError("give deserialize_arrow framed bytes or consumer messages, not both")
        payloads = [m.value() for m in items]
        ctxs: List[Optional[SerializationContext]] = [
            SerializationContext(m.topic(), MessageField.VALUE, m.headers()) for m in items]
    else:
        if metadata:
            raise ValueError(f"metadata columns {list(metadata)} need consumer messages, not bytes")
        payloads = items
        ctxs = [ctx] * len(items)
    unknown = [m for m in metadata if m not in METADATA]
    if unknown:
        raise ValueError(f"unknown metadata columns {unknown}: choose from {METADATA}")
    view = _cached_view(deser, reader_schema, payloads, ctxs)
    shape = view.shape
    clash = sorted(set(metadata) & {n for n, _, _ in shape.fields})
    if clash:
        raise ValueError(f"metadata columns {clash} have the names of value columns")

    columns = _native_columns(view, deser, payloads, ctxs, by_message, threads)
    if columns is not None:
        batch = pa.RecordBatch.from_arrays(
            [columns.field(i) for i in range(columns.type.num_fields)],
            schema=pa.schema([pa.field(f.name, f.type, True) for f in shape.type]))
        if metadata:
            batch = _with_metadata(batch, metadata, messages)
        return ArrowBatch(batch, [], None)
    if not by_message and _mixed(items):
        raise TypeError("give deserialize_arrow framed bytes or consumer messages, not both")

    values: List[Any] = []
    rows: List[int] = []  # input index of each value
    failed: List[Tuple[int, BaseException]] = []
    if isinstance(view, _Direct) and not by_message:
        # one context for all: the deserializer's own batch call (one crossing into native code)
        raw, raw_failed = deser._batch(payloads, ctx)
        for i, e in raw_failed:
            _record_failure(failed, i, e, messages[i], len(items))
        bad = {i for i, _ in raw_failed}
        convert = view.convert
        for i, v in enumerate(raw):
            if i in bad:
                continue
            if convert is not None and v is not None:
                try:
                    v = convert(v)
                except Exception as e:  # a record's failure; BaseException passes
                    _record_failure(failed, i, e, messages[i], len(items))
                    continue
            values.append(v)
            rows.append(i)
        failed.sort(key=lambda f: f[0])
    else:
        decode = view.decode
        for i, (p, c) in enumerate(zip(payloads, ctxs, strict=True)):
            try:
                v = decode(p, c)
            except Exception as e:  # a record's failure, reported by position; BaseException passes
                _record_failure(failed, i, e, messages[i], len(items))
                continue
            values.append(v)
            rows.append(i)
    if shape.wrapped:
        values = [None if v is None else {"value": v} for v in values]
    array, bad_rows = _build(shape, values, [ctxs[i] for i in rows])
    if bad_rows:
        keep = [j for j in range(len(rows)) if j not in bad_rows]
        failed.extend((rows[j], _located_row(bad_rows[j], messages[rows[j]])) for j in bad_rows)
        failed.sort(key=lambda f: f[0])
        rows = [rows[j] for j in keep]
    _raise_failures(failed, errors == "collect", len(items))
    batch = _record_batch(shape, array)
    if metadata:
        batch = _with_metadata(batch, metadata, [messages[i] for i in rows])
    return ArrowBatch(batch, failed, rows)


def _empty_batch(deser: Any, reader_schema: Any, metadata: Sequence[str]) -> ArrowBatch:
    """No records (an empty poll): the reader schema's columns when one is known without records
    (given, or the deserializer's own), else none; and the metadata columns asked for."""
    unknown = [m for m in metadata if m not in METADATA]
    if unknown:
        raise ValueError(f"unknown metadata columns {unknown}: choose from {METADATA}")
    try:
        shape: Optional[Struct] = _cached_view(deser, reader_schema, [], []).shape
    except ValueError:  # the reader would come from the records (their writer schema)
        shape = None
    if shape is None:
        batch = pa.RecordBatch.from_arrays([], names=[])
    else:
        batch = _record_batch(shape, shape.build([], ""))
    if metadata:
        batch = _with_metadata(batch, metadata, [])
    return ArrowBatch(batch, [], None)


def _record_failure(failed: List[Tuple[int, BaseException]], i: int, e: Exception, msg: Any, total: int) -> None:
    """File record ``i``'s typed error; anything else is not the record's fault and is raised."""
    if not isinstance(e, SerdesError):
        note = getattr(e, "add_note", None)
        if note is not None:
            note(f"raised by the record at index {i} of a batch of {total} (deserialize_arrow)")
        raise e
    failed.append((i, _located_row(e, msg)))


def _native_columns(view: _View, deser: Any, payloads: List[Any], ctxs: List[Optional[SerializationContext]],
                    by_message: bool, threads: int) -> Optional[pa.StructArray]:
    """Every record decoded at once by the native columnar decoder, or ``None`` (then the
    per-record path decodes them): see :mod:`serdes.arrow._native` for what it takes."""
    native = view.native
    if native is None or not payloads:
        return None
    if deser._reads_headers and any(c is not None and c.headers for c in ({*ctxs} if by_message else ctxs[:1])):
        return None  # a schema-id header would name the writer, not the frame's prefix
    if isinstance(native, NativeJsonColumns):
        return native.decode(payloads, deser, ctxs[0])
    if isinstance(native, NativeProtobufColumns):
        return native.decode(payloads, threads)
    loc = RecordLocation.from_ctx(ctxs[0])
    return native.decode(payloads, lambda sid: _avro_writer(deser, sid, loc), threads)


def _build(shape: Struct, values: List[Any], ctxs: List[Optional[SerializationContext]]
           ) -> Tuple[pa.StructArray, Dict[int, BaseException]]:
    """The struct array of ``values``; a value the columns cannot hold is found (one row at a time,
    only when the whole batch failed) and left out, with its :class:`ColumnValueError`."""
    try:
        return shape.build(values, ""), {}
    except ShapeError:
        pass
    bad: Dict[int, BaseException] = {}
    for j, v in enumerate(values):
        try:
            shape.build([v], "")
        except ShapeError as e:
            bad[j] = ColumnValueError(e.reason, RecordLocation.from_ctx(ctxs[j]), column=e.path)
    good = [v for j, v in enumerate(values) if j not in bad]
    return shape.build(good, ""), bad


def _record_batch(shape: Struct, array: pa.StructArray) -> pa.RecordBatch:
    # Top-level columns are nullable: a tombstone (a None record) is a row of nulls.
    schema = pa.schema([pa.field(f.name, f.type, True) for f in shape.type])
    # Built column by column (Struct.build), a tombstone's slots are already null in every child;
    if shape.plain or shape.strict:
        # built by pyarrow.array (a strict JSON object whose rows all hold declared properties is
        # too): a null row's children hold placeholders, nulled by flatten() (no unions in a plain
        # tree or a JSON one, which flatten() cannot take)
        return pa.RecordBatch.from_arrays(array.flatten(), schema=schema)
    return pa.RecordBatch.from_arrays([array.field(i) for i in range(array.type.num_fields)], schema=schema)


def _with_metadata(batch: pa.RecordBatch, names: Sequence[str], msgs: List[Any]) -> pa.RecordBatch:
    cols = metadata_columns(names, msgs)
    arrays = list(batch.columns) + [a for _, a in cols]
    fields = list(batch.schema) + [pa.field(n, a.type, True) for n, a in cols]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _raise_failures(failed: List[Tuple[int, BaseException]], collect: bool, total: int) -> None:
    if not failed or collect:
        return
    for _, e in failed:
        if isinstance(e, SerdesError) and not isinstance(e, RecordError):
            raise e  # the environment's failure (a RegistryError): not the records'
    first_i, first = failed[0]
    why = first.reason if isinstance(first, SerdesError) else str(first)
    loc = first.location if isinstance(first, SerdesError) else None
    raise BatchError(
        f"{len(failed)} of {total} records failed to decode into columns; the first, at index {first_i}: {why}",
        loc, getattr(first, "schema_id", None), errors=failed,
    ) from first


__all__ += ["NoColumnarShape"]
