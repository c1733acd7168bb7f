"""quixstreams serializers on serdes' fast path (install ``serdes[quix]``; docs/quix.md).

Each class here is the quixstreams class of the same name (``quixstreams.models.serializers``),
with the same constructor, the same ``(value, ctx)`` call and the same exceptions, so swapping the
import is the whole change::

    from serdes.quix import AvroDeserializer, AvroSerializer   # was: quixstreams.models.serializers

With a registry (``schema_registry_client_config``, or a ``schema_registry_client`` of your own)
the Confluent wire format is written and read by serdes' serializers (:mod:`serdes.avro`,
:mod:`serdes.protobuf`, :mod:`serdes.json`) where quixstreams uses confluent-kafka's. Without one
they are quixstreams' schemaless serializers, unchanged (serdes adds nothing there).

Errors: as in quixstreams, a failure to serialize or deserialize -- the record's, or the
registry's -- is a ``quixstreams.models.serializers.SerializationError``; its ``__cause__`` is the
typed serdes error (a :class:`serdes.RecordError` for the record's fault, a
:class:`serdes.RegistryError` for the registry's), so a handler can tell a bad record from an
outage.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Mapping, NoReturn, Optional, Tuple, Type, TypeVar, Union, cast

try:
    from quixstreams.models.serializers import avro as _quix_avro
    from quixstreams.models.serializers import json as _quix_json
    from quixstreams.models.serializers import protobuf as _quix_protobuf
    from quixstreams.models.serializers.exceptions import SerializationError
    from quixstreams.models.serializers.schema_registry import (
        SchemaRegistryClientConfig,
        SchemaRegistrySerializationConfig,
    )
    from quixstreams.utils.json import dumps as _quix_dumps
    from quixstreams.utils.json import loads as _quix_loads
except ImportError as e:  # quixstreams is the optional extra's
    raise ImportError(f"serdes.quix needs quixstreams: pip install serdes[quix] ({e})") from e

from confluent_kafka.schema_registry import SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.serialization import SerializationContext
from confluent_kafka.serialization import SerializationError as _ConfluentSerializationError
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import DecodeError, Message

from ._errors import SerdesError
from .avro import AvroDeserializer as _SerdesAvroDeserializer
from .avro import AvroSerializer as _SerdesAvroSerializer
from .json import JSONDeserializer as _SerdesJSONDeserializer
from .json import JSONSerializer as _SerdesJSONSerializer
from .protobuf import ProtobufDeserializer as _SerdesProtobufDeserializer
from .protobuf import ProtobufSerializer as _SerdesProtobufSerializer

if TYPE_CHECKING:
    from jsonschema.validators import _Validator

__all__ = [
    "AvroSerializer",
    "AvroDeserializer",
    "ProtobufSerializer",
    "ProtobufDeserializer",
    "JSONSerializer",
    "JSONDeserializer",
    "SchemaRegistryClientConfig",
    "SchemaRegistrySerializationConfig",
    "SerializationError",
]

# The conf keys each quixstreams serializer passes from SchemaRegistrySerializationConfig to
# confluent-kafka's (quixstreams 3.28): the same keys reach serdes', so both register and look up
# the same subjects and versions.
_AVRO_JSON_CONF_KEYS = {"auto_register_schemas", "normalize_schemas", "use_latest_version", "subject_name_strategy"}
_DEPRECATED_FORMAT_KEY = {"use_deprecated_format"}

# What a serdes serializer raises for a value, a payload or the registry; the built-in exceptions
# each quixstreams class also converts are added per class.
_SERDES_FAILURES: Tuple[Type[BaseException], ...] = (SerdesError, SchemaRegistryError, _ConfluentSerializationError)
_AVRO_WRITE_FAILURES = _SERDES_FAILURES + (ValueError,)
_AVRO_READ_FAILURES = _SERDES_FAILURES + (EOFError,)
_PROTOBUF_READ_FAILURES = _SERDES_FAILURES + (DecodeError,)
# quixstreams' default ``loads``, typed as its JSONDeserializer's parameter (the function is
# annotated as taking bytes only, and reads a bytearray as well)
_QUIX_LOADS = cast(Callable[[Union[bytes, bytearray]], Any], _quix_loads)


def _client(
    config: Optional[SchemaRegistryClientConfig], client: Optional[SchemaRegistryClient]
) -> Optional[SchemaRegistryClient]:
    """The registry client: the caller's, else one built from the config as quixstreams builds it."""
    if client is not None:
        return client
    if config is None:
        return None
    return SchemaRegistryClient(config.as_dict(plaintext_secrets=True))


def _json_client(schema: Optional[Mapping[str, Any]], config: Optional[SchemaRegistryClientConfig],
                 client: Optional[SchemaRegistryClient]) -> Optional[SchemaRegistryClient]:
    """The JSON classes' registry client; with one, a schema is required (quixstreams' check and
    message, which names the serialization config for the deserializer too)."""
    found = _client(config, client)
    if found is not None and not schema:
        raise ValueError("If `schema_registry_serialization_config` is provided, `schema` must also be set.")
    return found


def _serialization_conf(config: Optional[SchemaRegistrySerializationConfig], keys: Optional[set[str]]) -> Dict[str, Any]:
    if config is None:
        return {}
    conf: Dict[str, Any] = config.as_dict(include=keys)
    return conf


def _reraise(exc: BaseException) -> NoReturn:
    # quixstreams' message (str of the cause), the typed serdes error kept as __cause__
    raise SerializationError(str(exc)) from exc


T = TypeVar("T")


def _run(serde: Callable[[Any, SerializationContext], T], value: Any, ctx: SerializationContext,
         failures: Tuple[Type[BaseException], ...] = _SERDES_FAILURES) -> T:
    """``serde(value, ctx)``, its failures re-raised as quixstreams' (:func:`_reraise`)."""
    try:
        return serde(value, ctx)
    except failures as exc:
        _reraise(exc)


# quixstreams' AvroDeserializer builds confluent-kafka's deserializer when given a client config;
# serdes.quix passes this one only to get past its "schema or registry" check and drops the
# deserializer it builds (SchemaRegistryClient connects lazily: nothing is sent to this URL)
_PLACEHOLDER_CLIENT_CONFIG = SchemaRegistryClientConfig(url="http://serdes-quix.invalid")


class AvroSerializer(_quix_avro.AvroSerializer):
    """quixstreams' ``AvroSerializer``; with a registry, serdes' :class:`serdes.avro.AvroSerializer` writes."""

    def __init__(
        self,
        schema: Any,
        strict: bool = False,
        strict_allow_default: bool = False,
        disable_tuple_notation: bool = False,
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'; ``schema_registry_client`` (serdes') is a client to use
        instead of one built from ``schema_registry_client_config``."""
        if schema_registry_serialization_config and not (schema_registry_client_config or schema_registry_client):
            raise ValueError(
                "If `schema_registry_serialization_config` is provided "
                "`schema_registry_client_config` must also be set."
            )
        super().__init__(schema, strict, strict_allow_default, disable_tuple_notation)
        client = _client(schema_registry_client_config, schema_registry_client)
        self._serdes: Optional[_SerdesAvroSerializer] = None
        if client is not None:
            conf = _serialization_conf(schema_registry_serialization_config, _AVRO_JSON_CONF_KEYS)
            self._serdes = _SerdesAvroSerializer(client, json.dumps(schema), conf=conf)

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if self._serdes is None:
            out: bytes = super().__call__(value, ctx)
            return out
        written = _run(self._serdes, value, ctx, _AVRO_WRITE_FAILURES)
        assert written is not None  # a None value is not serialized: quixstreams skips it
        return written


class AvroDeserializer(_quix_avro.AvroDeserializer):
    """quixstreams' ``AvroDeserializer``; with a registry, serdes' :class:`serdes.avro.AvroDeserializer` reads."""

    def __init__(
        self,
        schema: Any = None,
        reader_schema: Any = None,
        return_record_name: bool = False,
        return_record_name_override: bool = False,
        return_named_type: bool = False,
        return_named_type_override: bool = False,
        handle_unicode_errors: str = "strict",
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'; ``schema_registry_client`` as for :class:`AvroSerializer`."""
        client = _client(schema_registry_client_config, schema_registry_client)
        if not schema and client is None:
            raise ValueError("Either `schema` or `schema_registry_client_config` must be provided.")
        # quixstreams' class needs a schema or a registry config: with the registry (serdes'), it
        # keeps the schema-less decoding settings only
        super().__init__(
            schema, reader_schema, return_record_name, return_record_name_override, return_named_type,
            return_named_type_override, handle_unicode_errors,
            schema_registry_client_config=None if schema else _PLACEHOLDER_CLIENT_CONFIG,
        )
        self._serdes: Optional[_SerdesAvroDeserializer] = None
        if client is not None:
            self._serdes = _SerdesAvroDeserializer(
                client, json.dumps(schema) if schema else None, return_record_name=return_record_name
            )

    def __call__(self, value: bytes, ctx: SerializationContext) -> Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any]]:
        if self._serdes is None:
            out: Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any]] = super().__call__(value, ctx)
            return out
        decoded: Mapping[Any, Any] = _run(self._serdes, value, ctx, _AVRO_READ_FAILURES)
        return decoded


class ProtobufSerializer(_quix_protobuf.ProtobufSerializer):
    """quixstreams' ``ProtobufSerializer``; with a registry, serdes' :class:`serdes.protobuf.ProtobufSerializer` writes."""

    def __init__(
        self,
        msg_type: Type[Message],
        deterministic: bool = False,
        ignore_unknown_fields: bool = False,
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'; ``schema_registry_client`` as for :class:`AvroSerializer`."""
        super().__init__(msg_type, deterministic, ignore_unknown_fields)
        self._message_class = msg_type
        self._lenient = ignore_unknown_fields
        client = _client(schema_registry_client_config, schema_registry_client)
        self._serdes: Optional[_SerdesProtobufSerializer] = None
        if client is not None:
            # quixstreams passes every key of the config, or only use.deprecated.format by default
            conf = (
                _serialization_conf(schema_registry_serialization_config, None)
                if schema_registry_serialization_config
                else _serialization_conf(SchemaRegistrySerializationConfig(), _DEPRECATED_FORMAT_KEY)
            )
            self._serdes = _SerdesProtobufSerializer(msg_type, client, conf)

    def __call__(self, value: Union[Dict[Any, Any], Message], ctx: SerializationContext) -> Union[str, bytes]:
        if self._serdes is None:
            out: Union[str, bytes] = super().__call__(value, ctx)
            return out
        msg = value if isinstance(value, self._message_class) else self._from_dict(value)
        written = _run(self._serdes, msg, ctx)
        assert written is not None
        return written

    def _from_dict(self, value: Any) -> Message:
        # quixstreams' conversion of a dict value, with its messages
        try:
            msg: Message = ParseDict(value, self._message_class(), ignore_unknown_fields=self._lenient)
        except TypeError as exc:
            raise SerializationError(
                f"Value to serialize must be of type `{self._message_class}` or dict, not `{type(value)}`."
            ) from exc
        except ParseError as exc:
            _reraise(exc)
        return msg


class ProtobufDeserializer(_quix_protobuf.ProtobufDeserializer):
    """quixstreams' ``ProtobufDeserializer``; with a registry, serdes' :class:`serdes.protobuf.ProtobufDeserializer`
    reads the frame and the message (``to_dict`` converts it as quixstreams does, with ``MessageToDict``)."""

    def __init__(
        self,
        msg_type: Type[Message],
        use_integers_for_enums: bool = False,
        preserving_proto_field_name: bool = False,
        to_dict: bool = True,
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'. As quixstreams' (confluent-kafka's), the deserializer reads
        with ``msg_type`` and asks the registry nothing; ``schema_registry_client`` only switches the
        Confluent framing on, as a config does."""
        super().__init__(msg_type, use_integers_for_enums, preserving_proto_field_name, to_dict)
        self._as_dict = to_dict
        self._int_enums = use_integers_for_enums
        self._proto_names = preserving_proto_field_name
        self._serdes: Optional[_SerdesProtobufDeserializer] = None
        if schema_registry_client_config is not None or schema_registry_client is not None:
            conf = (schema_registry_serialization_config or SchemaRegistrySerializationConfig()).as_dict(
                include=_DEPRECATED_FORMAT_KEY
            )
            self._serdes = _SerdesProtobufDeserializer(msg_type, conf)

    def __call__(
        self, value: bytes, ctx: SerializationContext
    ) -> Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any], Message]:
        if self._serdes is None:
            out: Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any], Message] = super().__call__(value, ctx)
            return out
        msg: Message = _run(self._serdes, value, ctx, _PROTOBUF_READ_FAILURES)
        if not self._as_dict:
            return msg
        # quixstreams' conversion
        as_dict: Dict[str, Any] = MessageToDict(
            msg, always_print_fields_with_no_presence=True, use_integers_for_enums=self._int_enums,
            preserving_proto_field_name=self._proto_names,
        )
        return as_dict


class JSONSerializer(_quix_json.JSONSerializer):
    """quixstreams' ``JSONSerializer``; with a registry, serdes' :class:`serdes.json.JSONSerializer`
    validates and writes."""

    def __init__(
        self,
        dumps: Callable[[Any], Union[str, bytes]] = _quix_dumps,
        schema: Optional[Mapping[str, Any]] = None,
        validator: Optional[_Validator] = None,
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'; ``schema_registry_client``
        as for :class:`AvroSerializer`."""
        client = _json_client(schema, schema_registry_client_config, schema_registry_client)
        super().__init__(dumps, schema, validator)
        self._serdes: Optional[_SerdesJSONSerializer] = None
        if client is not None:
            conf = _serialization_conf(schema_registry_serialization_config, _AVRO_JSON_CONF_KEYS)
            self._serdes = _SerdesJSONSerializer(json.dumps(schema), client, conf=conf)

    def __call__(self, value: Any, ctx: SerializationContext) -> Union[str, bytes]:
        if self._serdes is None:
            out: Union[str, bytes] = super().__call__(value, ctx)
            return out
        written = _run(self._serdes, value, ctx)
        assert written is not None
        return written


class JSONDeserializer(_quix_json.JSONDeserializer):
    """quixstreams' ``JSONDeserializer``; with a registry, serdes' :class:`serdes.json.JSONDeserializer`
    reads and validates."""

    def __init__(
        self,
        loads: Callable[[Union[bytes, bytearray]], Any] = _QUIX_LOADS,
        schema: Optional[Mapping[str, Any]] = None,
        validator: Optional[_Validator] = None,
        schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
        *,
        schema_registry_client: Optional[SchemaRegistryClient] = None,
    ) -> None:
        """The arguments are quixstreams'; ``schema_registry_client``
        as for :class:`AvroSerializer`."""
        client = _json_client(schema, schema_registry_client_config, schema_registry_client)
        super().__init__(loads, schema, validator)
        self._serdes: Optional[_SerdesJSONDeserializer] = None
        if client is not None:
            self._serdes = _SerdesJSONDeserializer(json.dumps(schema), schema_registry_client=client)

    def __call__(self, value: bytes, ctx: SerializationContext) -> Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any]]:
        if self._serdes is None:
            out: Union[Iterable[Mapping[Any, Any]], Mapping[Any, Any]] = super().__call__(value, ctx)
            return out
        decoded: Mapping[Any, Any] = _run(self._serdes, value, ctx)
        return decoded
