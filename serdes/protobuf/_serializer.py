"""ProtobufSerializer: confluent-kafka's constructor and call, then a cached prefix + SerializeToString."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as _ConfluentProtobufSerializer
from confluent_kafka.serialization import SerializationContext
from google.protobuf.message import EncodeError

from .._confluent import message_class, message_indexes, own_schema, resolve_dependencies
from .._errors import RecordLocation, ValidationError, WrongMessageTypeError
from .._registry import registry_call
from .._limits import split_limits_args
from .._serde import BuiltEncoder, EncodeStep, FastSerializer

__all__ = ["ProtobufSerializer", "WrongMessageTypeError"]


class ProtobufSerializer(FastSerializer, _ConfluentProtobufSerializer):
    """Encodes Protobuf messages with Confluent Schema Registry framing.

    Same constructor arguments (``msg_type, schema_registry_client, conf=None, rule_conf=None,
    rule_registry=None``), configuration keys and defaults as
    ``confluent_kafka.schema_registry.protobuf.ProtobufSerializer``. The first record of each
    ``(topic, field)`` goes through confluent-kafka (subject resolution, reference registration,
    schema registration/lookup); the frame it wrote -- magic byte, id or GUID, message indexes --
    becomes a cached prefix, and later records are ``prefix + msg.SerializeToString()``.

    serdes' addition: ``to_dict=`` (keyword; e.g. :func:`serdes.typed.to_dict` of a dataclass)
    takes objects of another type: ``msg_type(**to_dict(obj, ctx))`` is the message written (nested
    dicts and lists build nested and repeated messages, enum names their values, ``None`` leaves a
    field unset); a value the message does not take raises :class:`serdes.ValidationError`.
    """

    _protobuf = True
    _schema_type = "PROTOBUF"
    _confluent_kind = "protobuf.serializer"
    _reader_schema_fmt = "serialized"  # as confluent-kafka's ProtobufSerializer asks
    _value_errors = FastSerializer._value_errors + (EncodeError,)

    def __init__(self, *args: Any, to_dict: Optional[Callable[[Any, Any], Any]] = None, **kwargs: Any) -> None:
        # serdes.* keys (docs/security.md) leave the conf before confluent-kafka checks it
        args, kwargs, self._limits = split_limits_args(args, kwargs, 2)
        super().__init__(*args, **kwargs)
        # serdes' addition: objects of another type (serdes.typed.to_dict(cls)) -> a dict -> the message
        self._record_to_dict = to_dict
        self._init_fast()

    def _to_message(self, obj: Any, ctx: Optional[SerializationContext]) -> Any:
        """The message ``to_dict`` gives for ``obj`` (serdes' addition; ``obj`` itself without it)."""
        if self._record_to_dict is None or obj is None:
            return obj
        value = self._record_to_dict(obj, ctx)
        try:
            return self._message_class()(**value)
        except (TypeError, ValueError) as e:  # protobuf's words for a field or value it does not take
            raise ValidationError(
                f"to_dict's value does not build a {self._message_class().DESCRIPTOR.full_name}: {e}",
                RecordLocation.from_ctx(ctx),
            ) from e

    def _message_class(self) -> Any:
        """The generated message class (confluent-kafka's ``_msg_class``)."""
        return message_class(self)

    def _subject_record_name(self) -> Optional[str]:
        name: str = self._message_class().DESCRIPTOR.full_name
        return name

    def _message_indexes(self) -> Optional[List[int]]:
        return message_indexes(self)

    def _schema_to_register(self, ctx: SerializationContext, loc: RecordLocation) -> Optional[Schema]:
        # the references (imports) are registered / looked up first, as confluent-kafka does; the
        # schema with them is a local value (confluent-kafka stores it on the instance)
        refs = registry_call(
            "registering or looking up the schema's references",
            lambda: resolve_dependencies(self, ctx, self._message_class().DESCRIPTOR.file),
            loc,
        )
        schema = own_schema(self)
        return Schema(schema.schema_str, schema.schema_type, refs)

    def _confluent_call(self, obj: Any, ctx: Optional[SerializationContext]) -> Optional[bytes]:
        obj = self._to_message(obj, ctx)
        if obj is not None and not isinstance(obj, self._message_class()):
            raise self._wrong_type(obj, ctx)
        written: Optional[bytes] = _ConfluentProtobufSerializer.__call__(self, obj, ctx)
        return written

    def _wrong_type(self, obj: Any, ctx: Optional[SerializationContext]) -> WrongMessageTypeError:
        return WrongMessageTypeError(
            f"message must be of type {self._message_class()} not {type(obj)}", RecordLocation.from_ctx(ctx)
        )

    def _build_encoder(self, prefix: bytes, written_with: Optional[Schema]) -> BuiltEncoder:
        """For prefix framing an :class:`EncodeStep` -- the class check and the message class'
        ``SerializeToString`` -- that the shared fast path runs; its fallback (``encode``) raises
        the typed errors (a message of another class, proto2 required fields unset)."""
        # With use.latest.version / use.schema.id confluent-kafka still serializes the caller's
        # message as is (the registry schema only matters for rules, which are delegated), so the
        # payload is the same; only the prefix (id, indexes) comes from that schema.
        msg_class = self._message_class()
        wrong_type = self._wrong_type
        to_message = self._to_message if self._record_to_dict is not None else None

        def encode(obj: Any, ctx: Optional[SerializationContext]) -> bytes:
            if to_message is not None:
                obj = to_message(obj, ctx)
            if obj.__class__ is not msg_class and not isinstance(obj, msg_class):
                raise wrong_type(obj, ctx)
            try:
                payload: bytes = obj.SerializeToString()
                return prefix + payload
            except EncodeError as e:  # proto2 message with required fields unset
                raise ValidationError(
                    f"cannot serialize {msg_class.DESCRIPTOR.full_name}: {e}", RecordLocation.from_ctx(ctx)
                ) from e

        if not prefix or to_message is not None:
            return encode
        # msg_class.__instancecheck__ is isinstance(obj, msg_class) without a Python frame; the
        # unbound SerializeToString serializes any message, hence the check
        is_instance: Callable[[Any], bool] = msg_class.__instancecheck__
        return EncodeStep(prefix, is_instance, msg_class.SerializeToString, None, encode)
