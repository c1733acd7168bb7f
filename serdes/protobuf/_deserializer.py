"""ProtobufDeserializer: confluent-kafka's constructor and call, a dict hit and ``FromString``.

Two modes:

* **generated** (``message_type`` given, as with confluent-kafka): every record decodes into that
  class, whatever message index the frame names -- exactly confluent-kafka's behaviour -- but the
  indexes are still checked against the writer schema once per distinct index path.
* **dynamic** (``message_type=None``): the message class is built from the writer schema the
  registry holds (plus its references), or from a user-supplied ``descriptor_set=`` /
  ``message_descriptor=``; the frame's message indexes pick the message. No generated code.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Optional, Tuple, Union

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as _ConfluentProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass

from .._confluent import registry_of, set_message_class
from .._errors import CorruptPayloadError, RecordLocation, SchemaMismatchError, SerdesError, TruncatedFrameError
from .._limits import split_limits_conf
from .._serde import Built, Decoder, FastDeserializer, ParseStep
from .._wire import Frame, decode_message_indexes, find_schema_id_header, parse_frame, parse_header_value
from ._descriptor_sets import pool_from_set as _pool_from_set
from ._schemas import build_pool, fetch_schema, first_message_name, message_at
from ._todict import dict_converter

__all__ = ["ProtobufDeserializer"]

# The protobuf runtime (upb and pure Python alike) refuses messages nested deeper than 100 levels
# with a bare "Error parsing message"; say so, since that is Limits.max_depth's Protobuf bound.
_PARSE_HINT = "malformed, or nested deeper than the protobuf runtime's recursion limit of 100"

_OUTPUTS = ("message", "dict")


class ProtobufDeserializer(FastDeserializer, _ConfluentProtobufDeserializer):
    """Decodes Confluent-framed Protobuf into message objects (or dicts).

    Same positional/keyword arguments, configuration keys and defaults as
    ``confluent_kafka.schema_registry.protobuf.ProtobufDeserializer`` (unknown ``conf`` keys raise
    ``ValueError`` as there). serdes-only options are keyword arguments:

    Args:
        message_type: the generated message class, or ``None`` for dynamic decoding (the class is
            built from the registry schema; requires ``schema_registry_client``).
        message_descriptor: a message ``Descriptor`` to decode every record into, instead of a
            generated class (dynamic, no registry schema parsing).
        descriptor_set: a ``FileDescriptorSet`` (message or serialized bytes, e.g. from
            ``protoc --include_imports --descriptor_set_out``); with ``message_name`` every record
            decodes into that message, without it the writer message's full name (from the
            registry schema and the frame's message indexes) is looked up in the set.
        message_name: full name of the message in ``descriptor_set``.
        output: ``"message"`` (default) or ``"dict"`` (plain Python values: nested dicts, lists,
            enum names, ``None`` for unset fields with presence).
        from_dict: ``from_dict(dict, ctx)`` applied to each record's dict (``output="dict"``
            implied), e.g. :func:`serdes.typed.from_dict` of a dataclass (docs/typed.md).
    """

    _protobuf = True
    _schema_type = "PROTOBUF"
    _confluent_kind = "protobuf.deserializer"

    def __init__(
        self,
        message_type: Any = None,
        conf: Optional[Dict[str, Any]] = None,
        schema_registry_client: Any = None,
        rule_conf: Optional[Dict[str, Any]] = None,
        rule_registry: Any = None,
        *,
        message_descriptor: Optional[Descriptor] = None,
        descriptor_set: Union[descriptor_pb2.FileDescriptorSet, bytes, None] = None,
        message_name: Optional[str] = None,
        output: str = "message",
        from_dict: Optional[Callable[[Any, Any], Any]] = None,
    ) -> None:
        if output not in _OUTPUTS:
            raise ValueError(f"output must be one of {_OUTPUTS}, not {output!r}")
        if from_dict is not None:
            output = "dict"
        fixed_class: Any = None
        self._set_pool: Optional[descriptor_pool.DescriptorPool] = None
        if message_type is not None:
            if message_descriptor is not None or descriptor_set is not None:
                raise ValueError("give message_type, message_descriptor or descriptor_set, not several")
            fixed_class = message_type
        elif message_descriptor is not None:
            if descriptor_set is not None:
                raise ValueError("give message_descriptor or descriptor_set, not both")
            fixed_class = GetMessageClass(message_descriptor)
        elif descriptor_set is not None:
            self._set_pool = _pool_from_set(descriptor_set)
            if message_name is not None:
                try:
                    fixed_class = GetMessageClass(self._set_pool.FindMessageTypeByName(message_name))
                except KeyError:
                    raise ValueError(f"message {message_name!r} is not in descriptor_set") from None
        if message_name is not None and descriptor_set is None:
            raise ValueError("message_name needs descriptor_set")
        conf, self._limits = split_limits_conf(conf)  # serdes.* keys (docs/security.md)
        # confluent-kafka's constructor insists on a message type: give it a placeholder in dynamic
        # mode (its conf checks, subject strategy and rule setup still run as usual).
        placeholder: Any = empty_pb2.Empty
        super().__init__(
            fixed_class if fixed_class is not None else placeholder,
            conf,
            schema_registry_client,
            rule_conf,
            rule_registry,
        )
        self._dynamic = fixed_class is None
        if self._dynamic:
            if schema_registry_client is None:
                raise ValueError("dynamic decoding (message_type=None) needs schema_registry_client")
            set_message_class(self, None)
        self._fixed_class = fixed_class
        self._output = output
        self._record_from_dict = from_dict
        self._init_fast()

    # -- confluent-kafka delegation (schemas with rules, custom schema.id.deserializer) -----------
    def _confluent_call(self, data: Any, ctx: Optional[SerializationContext]) -> Any:
        if not self._dynamic:
            return self._convert_out(_ConfluentProtobufDeserializer.__call__(self, data, ctx), ctx)
        # Dynamic mode: confluent-kafka decodes into ``self._msg_class``; use a shallow copy bound to
        # the writer's class so concurrent calls for other schemas are not affected.
        frame = self._frame_of(data, ctx)
        cls = self._dynamic_class(frame)
        clone = copy.copy(self)
        set_message_class(clone, cls)
        return self._convert_out(_ConfluentProtobufDeserializer.__call__(clone, data, ctx), ctx)

    def _frame_of(self, data: Any, ctx: Optional[SerializationContext]) -> Frame:
        loc = RecordLocation.from_ctx(ctx)
        if ctx is not None and ctx.headers:
            hv = find_schema_id_header(ctx.headers, ctx.field == MessageField.KEY)
            if hv is not None:
                return parse_header_value(hv, True, loc)
        return parse_frame(data, True, loc)

    def _dynamic_class(self, frame: Frame) -> Any:
        writer = fetch_schema(registry_of(self), frame.schema_id)
        _, fd, _ = build_pool(registry_of(self), writer, schema_id=frame.schema_id, limits=self._limits)
        return GetMessageClass(self._resolve_desc(message_at(fd, frame.message_indexes or [0])))

    def _convert_out(self, msg: Any, ctx: Optional[SerializationContext]) -> Any:
        if self._output == "dict" and msg is not None:
            value = dict_converter(msg.DESCRIPTOR)(msg)
            return value if self._record_from_dict is None else self._record_from_dict(value, ctx)
        return msg

    # -- slow path ----------------------------------------------------------------------------------
    def _build_for_frame(self, frame: Frame, ctx: Optional[SerializationContext], loc: RecordLocation) -> Built:
        if registry_of(self) is None:
            # No client (confluent-kafka's documented ``ProtobufDeserializer(User, conf)``): every
            # record parses with the given class, whatever its id and message indexes (there is no
            # writer schema to check them against): one decoder for every frame.
            return self._shared_decoder(frame, ctx)
        # Fetch the writer schema with format=serialized before the shared miss path asks without a
        # format: the registry client caches one schema per id whatever the format, and
        # confluent-kafka's own Protobuf deserializers on the same client need the serialized form.
        fetch_schema(registry_of(self), frame.schema_id, loc)
        return super()._build_for_frame(frame, ctx, loc)

    def _record_name(self, writer: Schema) -> Optional[str]:
        return first_message_name(writer.schema_str)

    def _resolve_desc(self, desc: Descriptor) -> Descriptor:
        """With a descriptor_set, the user's descriptor of the same full name replaces the registry's."""
        if self._set_pool is not None:
            try:
                return self._set_pool.FindMessageTypeByName(desc.full_name)
            except KeyError:
                pass
        return desc

    def _build_decoder(
        self, writer: Optional[Schema], reader: Optional[Schema], frame: Frame, ctx: Optional[SerializationContext]
    ) -> Built:
        """A :class:`ParseStep` for prefix framing -- the root message's ``FromString`` (and the dict
        conversion with ``output="dict"``), run by the shared fast path for frames whose index
        array is ``[0]`` -- whose fallback decodes every index path; a decoder for header framing."""
        loc = RecordLocation.from_ctx(ctx)
        schema_id = frame.schema_id
        fd = None
        try:
            if writer is not None:
                _, fd, _ = build_pool(registry_of(self), writer, loc, schema_id, self._limits)
        except SchemaMismatchError:
            if self._dynamic:
                raise
            # Generated mode decodes with the user's class regardless; index checks are best-effort.
        reader_fd = None
        if reader is not None and self._dynamic:
            _, reader_fd, _ = build_pool(registry_of(self), reader, loc, schema_id, self._limits)

        converters: Dict[Any, Callable[[Any], Any]] = {}
        as_dict = self._output == "dict"
        typed = self._record_from_dict

        def typed_out(decode: Decoder) -> Decoder:
            """``decode`` followed by ``from_dict`` (when given)."""
            if typed is None:
                return decode

            def decode_then_convert(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
                return typed(decode(data, offset, ctx), ctx)

            return decode_then_convert
        fixed = self._fixed_class
        dynamic = self._dynamic
        resolve_desc = self._resolve_desc

        def class_for(indexes: Tuple[int, ...]) -> Any:
            if fd is not None:
                try:
                    desc = message_at(fd, indexes)
                except CorruptPayloadError as e:
                    e.schema_id = schema_id
                    e.args = (e._format(),)
                    raise
            else:
                desc = None
            if not dynamic:
                return fixed
            assert desc is not None
            if reader_fd is not None:
                # like confluent-kafka: the reader message with the writer's name, else the first
                by_name = reader_fd.message_types_by_name
                desc = by_name.get(desc.name) or message_at(reader_fd, [0])
            return GetMessageClass(resolve_desc(desc))

        classes: Dict[Tuple[int, ...], Any] = {}

        def cls_of(indexes: Tuple[int, ...]) -> Any:
            cls = classes.get(indexes)
            if cls is None:
                cls = classes[indexes] = class_for(indexes)
            return cls

        def converter(cls: Any) -> Optional[Callable[[Any], Any]]:
            if not as_dict:
                return None
            conv = converters.get(cls)
            if conv is None:
                conv = converters[cls] = dict_converter(cls.DESCRIPTOR)
            return conv

        def finish(cls: Any) -> Callable[[bytes], Any]:
            parse: Callable[[bytes], Any] = cls.FromString
            conv = converter(cls)
            if conv is None:
                return parse

            def parse_to_dict(b: bytes) -> Any:
                return conv(parse(b))

            return parse_to_dict

        def corrupt(e: Exception, data: Any, where: str, ctx: Optional[SerializationContext]) -> SerdesError:
            return CorruptPayloadError(
                f"Protobuf payload of {len(data)} bytes {where}does not parse ({_PARSE_HINT}): {e}",
                RecordLocation.from_ctx(ctx), schema_id,
            )

        if frame.offset == 0:
            # Header framing: the indexes are in the header value (part of the cache key); the
            # record value is the bare payload.
            parse_fixed = finish(cls_of(tuple(frame.message_indexes or (0,))))

            def decode_headered(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
                try:
                    return parse_fixed(data)
                except DecodeError as e:
                    raise corrupt(e, data, "(header framing) ", ctx) from e

            return typed_out(decode_headered)

        root_cls = cls_of((0,))
        root_parse = finish(root_cls)
        register = self._step_registrar(frame)

        def step_of(cls: Any) -> ParseStep:
            conv = converter(cls)
            convert: Optional[Callable[[Any, Any], Any]] = None
            if conv is not None and typed is not None:
                convert = lambda msg, ctx: typed(conv(msg), ctx)  # noqa: E731
            elif conv is not None:
                convert = lambda msg, ctx: conv(msg)  # noqa: E731
            return ParseStep(cls.FromString, None, convert, decode_typed)

        parsers: Dict[Tuple[int, ...], Callable[[bytes], Any]] = {(0,): root_parse}

        # Non-root paths: a dict keyed by the raw index bytes, assuming one byte per index (count
        # and indexes < 64, i.e. every real schema); the key's length comes from the count byte, so
        # a hit is exactly a previously parsed and checked index array.
        by_bytes: Dict[bytes, Callable[[bytes], Any]] = {}

        def decode_indexed(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            indexes, pos = decode_message_indexes(data, offset)
            if fd is None:
                # no writer schema: every index path parses with the given class, and none is
                # cached (the paths a frame can name are unbounded without a schema)
                try:
                    return root_parse(data[pos:])
                except DecodeError as e:
                    raise corrupt(e, data, f"(message indexes {indexes}) ", ctx) from e
            key = tuple(indexes)
            parse = parsers.get(key)
            if parse is None:
                parse = parsers[key] = finish(cls_of(key))
            if pos == offset + 1 + len(indexes):
                index_bytes = bytes(data[offset:pos])
                by_bytes[index_bytes] = parse
                if register is not None:  # the native dispatcher's fast path for this message too
                    register(index_bytes, step_of(cls_of(key)))
            try:
                return parse(data[pos:])
            except DecodeError as e:
                raise corrupt(e, data, f"(message indexes {indexes}) ", ctx) from e

        def decode(data: Any, offset: int, ctx: Optional[SerializationContext]) -> Any:
            try:
                first = data[offset]
            except IndexError:
                raise TruncatedFrameError(
                    f"record of {len(data)} bytes ends before the Protobuf message-index array",
                    RecordLocation.from_ctx(ctx), schema_id,
                ) from None
            if first == 0:  # message indexes [0]: the first message of the file
                try:
                    return root_parse(data[offset + 1:])
                except DecodeError as e:
                    raise corrupt(e, data, "", ctx) from e
            end = offset + 1 + (first >> 1)
            parse = by_bytes.get(data[offset:end])
            if parse is not None:
                try:
                    return parse(data[end:])
                except DecodeError as e:
                    raise corrupt(e, data, "", ctx) from e
            return decode_indexed(data, offset, ctx)

        decode_typed = typed_out(decode)
        return step_of(root_cls)
