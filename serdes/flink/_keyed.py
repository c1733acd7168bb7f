"""Keyed Kafka jobs with one Python operator after the shuffle: decode + user function (+ encode).

The two-operator shape PyFlink users write (``read_kafka(...).key_by(fn).process(f)``) runs
[decode + Python key extraction] -> hash shuffle -> [keyed function + encode]: every record
enters and leaves the Python worker twice.  :func:`read_kafka_keyed` keys the raw records
before any Python code runs:

* ``key_by=None`` (default): the key is the Kafka record key, selected in Java by the keyed
  record shim (``serdes.flink.KafkaKeyedPackedDeserializationSchema``); the only Python operator
  is the keyed one, which decodes each record, calls the user's ``KeyedProcessFunction`` with its
  state and, fused with :func:`~serdes.flink.write_kafka`'s encoder, encodes the output.  One
  crossing per record.
* ``key_by=fn``: the key is a field of the decoded value: the decode operator emits
  ``Row(key, packed record)`` (the key typed with ``key_type``, the record as the shim packed it,
  no pickling) and Java keys by field 0; the keyed operator decodes the record again (a serdes decode
  is a few microseconds, cheaper than pickling the decoded value across the shuffle) and runs the
  user's function.  Two crossings, no extra key-selector operator.
* ``key_by="name"`` on a Protobuf value with a generated class (a singular string or integer
  field): the field is read from the record's bytes in Java
  (``serdes.flink.KafkaProtobufKeyedPackedDeserializationSchema``), so the job has the Kafka-key
  shape: one crossing.  The keyed operator checks each decoded value's field against the key the
  record was shuffled by (``DecodeFunction.decode``'s ``key_check``).  Other values with a field
  name are keyed like ``key_by=fn`` (:class:`FieldKey`).

Records cross the JVM boundary packed, one ``byte[]`` each (``_packed.py``): PyFlink builds a
Python ``Row`` object per row it hands over, which for the nested record row was the largest
single cost of a keyed record in the Python worker.

Poison pills are handled where a record is decoded (``on_error`` as in ``read_kafka``); the
dead-letter rows of both operators are in :meth:`KafkaKeyedStream.dead_letters`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.typeinfo import TypeInformation
from pyflink.datastream import (
    DataStream,
    DataStreamSink,
    KeyedProcessFunction,
    KeyedStream,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer
from pyflink.datastream.state import StateDescriptor

from .._errors import StrictTypeError
from . import _pyflink
from ._codecs import SerdeSpec
from ._connectors import kafka_record_sink, record_source
from ._decode import NOTHING, ON_ERROR_FAIL, DecodeFunction
from ._encode import EncodeFunction
from ._env import configure
from ._graph import ATTR_CHECKS, keyed_by_field0
from ._metrics import BatchedCounter  # noqa: F401  (earlier home of the class)
from ._records import BYTES, DEAD_LETTER_TAG, KafkaRecord
from ._pickling import PICKLE_MODULE
from ._shim import (
    KEYED_PACKED_DESERIALIZER_CLASS,
    PACKED_DESERIALIZER_CLASS,
    PACKED_SERIALIZER_CLASS,
    PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS,
)
from ._typed_state import get_typed_state
from ._typed_stream import TypedStream
from ._typeinfo import BytesCodecTypeInfo

def _kafka_key_encoding(key_type: TypeInformation) -> str:
    """The shim's key encoding for a ``key_type`` (the Java key is always a String)."""
    if key_type == Types.STRING():
        return "utf8"
    if key_type == Types.PRIMITIVE_ARRAY(Types.BYTE()):
        return "raw"
    raise ValueError(
        "key_by_kafka_key supports key_type=Types.STRING() (UTF-8 text keys) or "
        f"Types.PRIMITIVE_ARRAY(Types.BYTE()) (any bytes, state keyed by their latin-1 string), not {key_type!r}")


class FieldKey:
    """``key_by="name"``: the field ``name`` of the decoded value (a message attribute, or the item
    of a mapping such as a decoded Avro or JSON record), also when the operator hands it a
    :class:`~serdes.flink.KafkaRecord` (``include_metadata=True``). Picklable, unlike a lambda
    defined in a job."""

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __call__(self, value: Any) -> Any:
        if type(value) is KafkaRecord:
            value = value.value
        if isinstance(value, Mapping):
            return value[self.field]
        return getattr(value, self.field)

    def __reduce__(self) -> Any:
        return FieldKey, (self.field,)

    def __repr__(self) -> str:
        return f"FieldKey({self.field!r})"


#: Protobuf field types whose key the Java shim reads (``ProtobufKeyField``), by name
_PROTOBUF_KEY_KINDS = {
    "TYPE_STRING": "string", "TYPE_INT64": "int64", "TYPE_INT32": "int32", "TYPE_UINT32": "uint32",
    "TYPE_SINT64": "sint64", "TYPE_SINT32": "sint32",
}


def protobuf_key_field(value: SerdeSpec, field: str) -> Optional[Tuple[int, str, TypeInformation]]:
    """``(field number, kind, key type)`` when ``value`` decodes into a generated Protobuf class whose
    top-level field ``field`` the Java shim can read (a singular string or 32/64-bit signed or
    32-bit unsigned integer field), else ``None`` (the key is then read in a Python operator).
    A class without that field is a ``ValueError``."""
    if value.format != "protobuf" or value.role != "de":
        return None
    message_type = value.kwargs.get("message_type")
    descriptor = getattr(message_type, "DESCRIPTOR", None)
    if descriptor is None:
        return None
    fd = descriptor.fields_by_name.get(field)
    if fd is None:
        raise ValueError(f"key_by={field!r}: {descriptor.full_name} has no field {field!r} "
                         f"(fields: {', '.join(sorted(descriptor.fields_by_name))})")
    from google.protobuf.descriptor import FieldDescriptor

    from serdes.protobuf._todict import is_repeated

    kinds = {getattr(FieldDescriptor, name): kind for name, kind in _PROTOBUF_KEY_KINDS.items()}
    kind = kinds.get(fd.type)
    if kind is None or is_repeated(fd):
        return None
    return fd.number, kind, Types.STRING() if kind == "string" else Types.LONG()


def _pickled_in(type_info: Optional[TypeInformation], path: str = "") -> Optional[str]:
    """Where a (composite) PyFlink ``TypeInformation`` contains pickled bytes, or ``None``."""
    from pyflink.common.typeinfo import PickledBytesTypeInfo

    if isinstance(type_info, PickledBytesTypeInfo):
        return path or "the value"
    for label, child in _pyflink.type_info_children(type_info):
        found = _pickled_in(child, f"{path}.{label}" if path else label)
        if found:
            return found
    return None


class _StrictStateContext:
    """Runtime-context proxy: typed protobuf states, and no pickled state under ``strict_types``."""

    def __init__(self, ctx: RuntimeContext, strict: bool, operator: str) -> None:
        self._ctx, self._strict, self._operator = ctx, strict, operator

    def _check(self, descriptor: StateDescriptor) -> None:
        if not self._strict:
            return
        where = _pickled_in(getattr(descriptor, "type_info", None))
        if where is not None:
            name = descriptor.get_name()
            raise StrictTypeError(
                f"strict_types=True and operator {self._operator!r} asks for keyed state {name!r} "
                f"whose type falls back to pickled bytes (at {where}); declare its type (e.g. "
                "Types.LONG(), Types.TUPLE([...]), a ProtobufValueStateDescriptor)",
                [(self._operator, f"state {name!r}")])

    def get_state(self, descriptor: StateDescriptor) -> Any:
        self._check(descriptor)
        return get_typed_state(self._ctx, descriptor)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ctx, name)
        if name.startswith("get_") and name.endswith("_state") and callable(attr):
            def checked(descriptor: StateDescriptor, _get: Callable[[StateDescriptor], Any] = attr) -> Any:
                self._check(descriptor)
                return _get(descriptor)
            return checked
        return attr


class KafkaKeyedProcess(KeyedProcessFunction):
    """The keyed operator: decodes ``Row(topic, ..., value, headers)``, calls ``fn`` with the value.

    Decoding (and ``on_error``, dead letters, the ``serdes_*`` counters) is
    :class:`~serdes.flink.DecodeFunction`'s; ``fn`` is the user's ``KeyedProcessFunction`` and sees
    the decoded value (or :class:`~serdes.flink.KafkaRecord` with ``include_metadata``), its
    ``ctx.get_current_key()`` is the key, its state is keyed by it.  Outputs are encoded with
    ``encode`` when given (a typed output) or turned into Kafka producer rows by ``sink_encoder``
    (an :class:`~serdes.flink.EncodeFunction`, opened with the operator); side outputs pass unchanged.
    """

    __module__ = PICKLE_MODULE

    def __init__(self, fn: KeyedProcessFunction, decode: DecodeFunction,
                 encode: Optional[Callable[[Any], Any]] = None, strict_types: bool = False,
                 operator_name: str = "serdes-keyed", sink_encoder: Optional[EncodeFunction] = None,
                 key_check: Optional[Callable[[Any], Any]] = None) -> None:
        self.fn = fn
        self.decode = decode
        self.encode = encode
        self.strict_types = strict_types
        self.operator_name = operator_name
        self.sink_encoder = sink_encoder
        self.key_check = key_check  # key_by="field" read in Java: every decoded key is checked

    def open(self, runtime_context: RuntimeContext) -> None:
        _pyflink.speed_up_key_changes(runtime_context)  # process mode: PyFlink's key change, cheaper
        _pyflink.speed_up_records(self, runtime_context)  # process mode: PyFlink's per-record wrapper, leaner
        self.decode.open(runtime_context)  # its serdes_decoded is batched (_metrics.py)
        if self.sink_encoder is not None:
            self.sink_encoder.open(runtime_context)
            self.encode = self.sink_encoder.pack
        self._decode_one = self.decode.decode
        self._key_check = getattr(self, "key_check", None)  # None in job graphs pickled before it existed
        self._user = self.fn.process_element
        if hasattr(self.fn, "open"):
            # the proxy is a RuntimeContext by delegation (__getattr__), not by subclassing: as a subclass
            # it would be abstract, and RuntimeContext's methods would bypass the forwarding
            self.fn.open(_StrictStateContext(runtime_context, self.strict_types,  # type: ignore[arg-type]
                                             self.operator_name))

    def close(self) -> None:
        self.decode.close()  # flushes its batched counters
        if self.sink_encoder is not None:
            self.sink_encoder.close()
        if hasattr(self.fn, "close"):
            self.fn.close()

    def process_element(self, row: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        # one plain decode call, no generator per record (this runs for every record of the job)
        check = self._key_check
        value = self._decode_one(row) if check is None else self._decode_one(row, (check, ctx.get_current_key()))
        if value is NOTHING:
            return
        if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
            yield value  # dead letter
            return
        outputs = self._user(value, ctx)
        if outputs is None:
            return
        encode = self.encode
        if encode is None:
            yield from outputs
            return
        for out in outputs:
            if type(out) is tuple and len(out) == 2 and isinstance(out[0], OutputTag):
                yield out
            else:
                yield encode(out)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterator[Any]:
        outputs = self.fn.on_timer(timestamp, ctx)
        if outputs is None:
            return
        for out in outputs:
            if self.encode is None or (type(out) is tuple and len(out) == 2 and isinstance(out[0], OutputTag)):
                yield out
            else:
                yield self.encode(out)


#: the field names of the value-keyed decode operator's ``Row(key, record)`` output
KEYED_ROW_FIELDS = ["key", "record"]


class KeyByDecodedField(ProcessFunction):
    """Decode operator of the value-keyed shape: emits ``Row(key_by(value), raw record row)``."""

    __module__ = PICKLE_MODULE

    def __init__(self, decode: DecodeFunction, key_by: Callable[[Any], Any]) -> None:
        self.decode = decode
        self.key_by = key_by

    def open(self, runtime_context: RuntimeContext) -> None:
        _pyflink.speed_up_records(self, runtime_context)  # process mode: PyFlink's per-record wrapper, leaner
        self.decode.open(runtime_context)
        if hasattr(self.key_by, "open"):
            self.key_by.open(runtime_context)
        self._get_key: Callable[[Any], Any] = getattr(self.key_by, "get_key", self.key_by)

    def close(self) -> None:
        self.decode.close()
        if hasattr(self.key_by, "close"):
            self.key_by.close()

    def process_element(self, packed: bytes, ctx: ProcessFunction.Context) -> Iterator[Any]:
        value = self.decode.decode(packed)
        if value is NOTHING:
            return
        if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
            yield value
        else:
            # named as the output type's row coder names its fields: encoded without a raising hasattr
            yield _pyflink.new_row([self._get_key(value), packed], KEYED_ROW_FIELDS)


class KafkaKeyedStream:
    """Records of a Kafka topic keyed before any user code runs; see :func:`read_kafka_keyed`."""

    def __init__(self, keyed: KeyedStream, decode: DecodeFunction, key_type: TypeInformation,
                 key_operator: Optional[DataStream] = None, strict_types: bool = False,
                 key_check: Optional[Callable[[Any], Any]] = None) -> None:
        self.keyed_stream = keyed
        self.key_type = key_type
        self._decode = decode
        self._key_operator = key_operator  # value-keyed shape: the decode + key operator
        self._strict_types = strict_types
        self._key_check = key_check  # key field read in Java: the keyed operator checks it
        self._outputs: List[DataStream] = []

    def process(self, fn: KeyedProcessFunction, output_type: Optional[TypeInformation] = None,
                name: str = "serdes-keyed") -> Union[DataStream, TypedStream]:
        """Run ``fn`` (a ``KeyedProcessFunction``) on the decoded values; returns its output stream.

        ``output_type`` as for PyFlink's ``process`` (default: pickled objects; fused with a
        following :func:`~serdes.flink.write_kafka` no coder runs); a
        :class:`~serdes.flink.ProtobufTypeInformation` returns a ``TypedStream``.
        """
        if not isinstance(fn, KeyedProcessFunction):
            raise TypeError(f"process() needs a KeyedProcessFunction, not {type(fn).__name__}")
        encode = output_type.encoder() if isinstance(output_type, BytesCodecTypeInfo) else None
        op = KafkaKeyedProcess(fn, self._decode, encode, strict_types=self._strict_types, operator_name=name,
                               key_check=self._key_check)
        out = self.keyed_stream.process(op, output_type=output_type).name(name)
        self._outputs.append(out)
        if isinstance(output_type, BytesCodecTypeInfo):
            return TypedStream(out, output_type)
        return out

    def process_to_kafka(self, fn: KeyedProcessFunction, bootstrap_servers: str, topic: str, value: SerdeSpec,
                         key: Optional[SerdeSpec] = None, key_fn: Optional[Callable[[Any], Any]] = None,
                         value_fn: Optional[Callable[[Any], Any]] = None,
                         topic_fn: Optional[Callable[[Any], str]] = None,
                         delivery_guarantee: Optional[DeliveryGuarantee] = None,
                         properties: Optional[Dict[str, str]] = None,
                         transactional_id_prefix: Optional[str] = None, name: str = "serdes-keyed") -> DataStreamSink:
        """``fn`` and :func:`~serdes.flink.write_kafka`'s encoding in ONE operator, then the Kafka sink.

        Same arguments as ``write_kafka``.  Unlike ``process(fn)`` + ``write_kafka`` (fused by
        PyFlink only when the keyed operator has no other consumer: not with ``on_error=
        "dead_letter"``, a side output of ``fn`` or ``create_env(chaining=False)``), this never
        adds a second Python operator.  Returns the sink's ``DataStreamSink``.
        """
        if not isinstance(fn, KeyedProcessFunction):
            raise TypeError(f"process_to_kafka() needs a KeyedProcessFunction, not {type(fn).__name__}")
        encoder = EncodeFunction(topic, value, key, key_fn, value_fn, topic_fn)
        op = KafkaKeyedProcess(fn, self._decode, strict_types=self._strict_types, operator_name=name,
                               sink_encoder=encoder, key_check=self._key_check)
        rows = self.keyed_stream.process(op, output_type=BYTES).name(name)
        self._outputs.append(rows)
        sink = kafka_record_sink(bootstrap_servers, topic, delivery_guarantee or DeliveryGuarantee.AT_LEAST_ONCE,
                                 properties, transactional_id_prefix, serializer_class=PACKED_SERIALIZER_CLASS)
        return rows.sink_to(sink).name(f"kafka-sink:{topic}")

    def dead_letters(self) -> DataStream:
        """Dead-letter rows (``DEAD_LETTER_ROW_TYPE``) of the decode operator(s) of this stream."""
        streams = [s.get_side_output(DEAD_LETTER_TAG) for s in
                   ([self._key_operator] if self._key_operator is not None else []) + self._outputs]
        if not streams:
            raise ValueError("no operator decodes this stream yet: call process() first")
        return streams[0] if len(streams) == 1 else streams[0].union(*streams[1:])


def read_kafka_keyed(
    env: StreamExecutionEnvironment,
    bootstrap_servers: str,
    topics: Union[str, Sequence[str]],
    value: SerdeSpec,
    key_type: Optional[TypeInformation] = None,
    key_by: Union[None, str, Callable[[Any], Any]] = None,
    key: Optional[SerdeSpec] = None,
    on_error: str = ON_ERROR_FAIL,
    include_metadata: bool = False,
    group_id: Optional[str] = None,
    starting_offsets: Optional[KafkaOffsetsInitializer] = None,
    bounded: bool = False,
    properties: Optional[Dict[str, str]] = None,
    name: Optional[str] = None,
    skip_tombstones: bool = True,
) -> KafkaKeyedStream:
    """Kafka topic(s) keyed for one Python keyed operator; ``.process(fn)`` runs ``fn`` per value.

    ``key_by=None``: keyed by the Kafka record key in Java (``key_type`` ``Types.STRING()``, the
    default, for UTF-8 text keys; ``Types.PRIMITIVE_ARRAY(Types.BYTE())`` for any bytes: the state
    key is then their latin-1 string).  A record without a key is keyed by ``""``.

    ``key_by=fn``: keyed by ``fn(decoded value)`` (``fn`` gets what the keyed function gets: the
    value, or the :class:`~serdes.flink.KafkaRecord` with ``include_metadata``; a ``KeySelector`` works
    too) of type ``key_type`` (required, a hashable Flink type such as ``Types.STRING()`` or
    ``Types.LONG()``).

    ``key_by="name"``: keyed by the field ``name`` of the decoded value. For a Protobuf value with a
    generated class and a singular ``string``, ``int32``, ``int64``, ``uint32``, ``sint32`` or
    ``sint64`` field, the field is read from the record's bytes in Java
    (``KafkaProtobufKeyedPackedDeserializationSchema``): no Python operator before the shuffle, one
    crossing per record, as with the Kafka key.  ``key_type`` is then ``Types.STRING()`` or
    ``Types.LONG()`` (inferred when omitted), and the keyed operator checks each decoded value's
    field against the key it was shuffled by (a mismatch is a
    :class:`~serdes.flink.KeyFieldMismatchError`, handled by ``on_error``).  Any other value
    (Avro, JSON Schema, dynamic Protobuf, other field types) is keyed as with
    ``key_by=fn`` (``key_type`` required), the field read as an attribute or a mapping item.

    ``key`` (a key deserializer) only decodes ``KafkaRecord.key`` for ``include_metadata=True``.
    Other arguments as for :func:`~serdes.flink.read_kafka`.
    """
    java_field: Optional[Tuple[int, str, TypeInformation]] = None
    if isinstance(key_by, str):
        java_field = protobuf_key_field(value, key_by)
        if java_field is not None:
            if key_type is not None and key_type != java_field[2]:
                raise ValueError(f"key_by={key_by!r} is a {java_field[1]} field, keyed as {java_field[2]!r}; "
                                 f"key_type={key_type!r} does not match (omit key_type)")
            key_type = java_field[2]
        key_by = FieldKey(key_by)
    if key_by is None:
        key_type = key_type or Types.STRING()
    elif key_type is None:
        raise ValueError("key_by= needs key_type= (e.g. Types.STRING()): a pickled key cannot be "
                         "hashed consistently across Python workers")
    encoding = _kafka_key_encoding(key_type) if key_by is None else None
    configure(env)
    strict = getattr(env, ATTR_CHECKS, (False, False))[1]
    topics_label = ",".join([topics] if isinstance(topics, str) else topics)
    source_name = name or f"kafka:{topics_label}"
    decode = DecodeFunction(value, key, on_error, include_metadata, skip_tombstones)
    if key_by is None:
        source = record_source(bootstrap_servers, topics,
                               _pyflink.new_java_object(KEYED_PACKED_DESERIALIZER_CLASS, encoding),
                               group_id, starting_offsets, bounded, properties)
        rows = env.from_source(source, WatermarkStrategy.no_watermarks(), source_name)
        keyed = keyed_by_field0(rows, Types.STRING(), BYTES)
        stream = KafkaKeyedStream(keyed, decode, key_type, strict_types=strict)
    elif java_field is not None:
        number, kind, _ = java_field
        source = record_source(bootstrap_servers, topics,
                               _pyflink.new_java_object(PROTOBUF_KEYED_PACKED_DESERIALIZER_CLASS, number, kind),
                               group_id, starting_offsets, bounded, properties)
        rows = env.from_source(source, WatermarkStrategy.no_watermarks(), source_name)
        keyed = keyed_by_field0(rows, key_type, BYTES)
        stream = KafkaKeyedStream(keyed, decode, key_type, strict_types=strict, key_check=key_by)
    else:
        source = record_source(bootstrap_servers, topics, _pyflink.new_java_object(PACKED_DESERIALIZER_CLASS),
                               group_id, starting_offsets, bounded, properties)
        rows = env.from_source(source, WatermarkStrategy.no_watermarks(), source_name)
        keyed_rows = rows.process(KeyByDecodedField(decode, key_by),
                                  output_type=Types.ROW_NAMED(list(KEYED_ROW_FIELDS), [key_type, BYTES]))
        keyed_rows.name("serdes-decode-key")
        keyed = keyed_by_field0(keyed_rows, key_type, BYTES)
        stream = KafkaKeyedStream(keyed, decode, key_type, key_operator=keyed_rows, strict_types=strict)
    return stream

