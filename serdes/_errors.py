"""The exception hierarchy: one root, split by whose fault a failure is.

Every error serdes raises is a :class:`SerdesError`. Below it:

* :class:`RecordError` -- the record's fault (its bytes, its value, the schema it names): framing,
  unknown schema id, schema mismatch, corrupt payload, validation, a batch's records. These are
  also ``confluent_kafka.serialization.SerializationError``s, so the usual skip-the-bad-record
  handler (``except SerializationError``) catches exactly what confluent-kafka's serdes raise it
  for, and code written for confluent-kafka keeps working (``DeserializingConsumer`` wraps them in
  ``ValueDeserializationError``).
* everything else -- the environment's fault: the registry (:class:`RegistryError`: unreachable,
  401/403, 429, an answer that is not a Schema Registry answer; confluent-kafka raises its
  ``SchemaRegistryError``, not a ``SerializationError``, for these), an installed dependency whose
  private API changed (:class:`ConfluentAPIError`, :class:`PyFlinkAPIError`), a missing connector
  jar or tool, a job or test server that failed. These are *not* ``SerializationError``s: a
  handler that skips bad records must not skip every record of a broken installation.

Each error says what was wrong and where: the topic and field (key/value) when a
``SerializationContext`` was given, and the partition and offset when the caller knows them (the
Flink sources do; a plain ``(data, ctx)`` call cannot).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from confluent_kafka.serialization import SerializationError

__all__ = [
    "SerdesError",
    "RecordError",
    "FramingError",
    "InvalidMagicByteError",
    "TruncatedFrameError",
    "UnknownSchemaError",
    "RegistryError",
    "RegistryUnavailableError",
    "RegistryAuthError",
    "RegistryRateLimitedError",
    "RegistryBadResponseError",
    "SchemaMismatchError",
    "CorruptPayloadError",
    "ValidationError",
    "RecordLocation",
]


class RecordLocation:
    """Where a record came from: topic, key/value field, partition and offset (each optional)."""

    __slots__ = ("topic", "field", "partition", "offset")

    def __init__(
        self,
        topic: Optional[str] = None,
        field: Optional[str] = None,
        partition: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> None:
        self.topic = topic
        self.field = field
        self.partition = partition
        self.offset = offset

    @classmethod
    def from_ctx(cls, ctx: Any) -> "RecordLocation":
        """Build a location from a confluent-kafka ``SerializationContext`` (or ``None``)."""
        if ctx is None:
            return cls()
        return cls(
            topic=getattr(ctx, "topic", None),
            field=getattr(ctx, "field", None),
            partition=getattr(ctx, "partition", None),
            offset=getattr(ctx, "offset", None),
        )

    def __str__(self) -> str:
        parts = []
        if self.topic is not None:
            parts.append(f"topic={self.topic!r}")
        if self.field is not None:
            parts.append(f"field={self.field}")
        if self.partition is not None:
            parts.append(f"partition={self.partition}")
        if self.offset is not None:
            parts.append(f"offset={self.offset}")
        return ", ".join(parts) if parts else "unknown location"

    def __repr__(self) -> str:
        return f"RecordLocation({self})"


class SerdesError(Exception):
    """Base class of every serdes error (the record's, :class:`RecordError`, and the environment's).

    Attributes:
        reason: what was wrong, without the location.
        location: where the record came from (:class:`RecordLocation`).
        schema_id: the schema id or GUID of the record, when it was read.
    """

    def __init__(
        self,
        reason: str,
        location: Optional[RecordLocation] = None,
        schema_id: Any = None,
    ) -> None:
        self.reason = reason
        self.location = location if location is not None else RecordLocation()
        self.schema_id = schema_id
        super().__init__(self._format())

    def _format(self) -> str:
        where = str(self.location)
        sid = f", schema id {self.schema_id}" if self.schema_id is not None else ""
        return f"{self.reason} ({where}{sid})"

    def at(
        self,
        topic: Optional[str] = None,
        partition: Optional[int] = None,
        offset: Optional[int] = None,
        field: Optional[str] = None,
    ) -> "SerdesError":
        """Fill in coordinates the raiser did not know; returns ``self`` for ``raise err.at(...)``."""
        loc = self.location
        if topic is not None:
            loc.topic = topic
        if partition is not None:
            loc.partition = partition
        if offset is not None:
            loc.offset = offset
        if field is not None:
            loc.field = field
        self.args = (self._format(),)
        return self

    def __str__(self) -> str:
        return self._format()

    def __reduce__(self) -> Any:
        # Errors cross process boundaries in PyFlink; keep them picklable with their location and
        # every attribute a subclass adds (e.g. RegistryError.http_status), restored as state.
        extra = {k: v for k, v in self.__dict__.items() if k not in _BASE_ATTRS}
        return (
            _rebuild,
            (type(self), self.reason, self.location.topic, self.location.field,
             self.location.partition, self.location.offset, self.schema_id),
            extra or None,
        )


_BASE_ATTRS = frozenset(("reason", "location", "schema_id"))


def _rebuild(cls: "type[SerdesError]", reason: str, topic: Any, field: Any, partition: Any, offset: Any, schema_id: Any) -> SerdesError:
    err = cls.__new__(cls)
    SerdesError.__init__(err, reason, RecordLocation(topic, field, partition, offset), schema_id)
    return err


class RecordError(SerdesError, SerializationError):
    """The record's fault: its bytes, its value or the schema it names cannot be used. Also a
    ``confluent_kafka.serialization.SerializationError`` (what confluent-kafka's serdes raise for a
    bad record); the same record fails again whatever the environment does, so skipping or
    dead-lettering it is safe."""


class FramingError(RecordError):
    """The bytes do not carry a valid Confluent wire-format frame."""


class InvalidMagicByteError(FramingError):
    """The first byte is neither 0 (4-byte schema id) nor 1 (16-byte schema GUID)."""


class TruncatedFrameError(FramingError):
    """The record ends inside the frame header (magic byte, schema id/GUID or message indexes)."""


class UnknownSchemaError(RecordError):
    """The registry answered, and does not know the schema id, GUID or subject version."""


class RegistryError(SerdesError):
    """The registry did not give a usable answer: the failure is the registry's (or the client's
    credentials'), not the record's. The same record decodes once the registry answers again, so
    consumers retry or fail on it and never dead-letter it.

    Attributes:
        http_status: the HTTP status of the registry's answer (``None`` when there was none).
    """

    def __init__(
        self,
        reason: str,
        location: Optional[RecordLocation] = None,
        schema_id: Any = None,
        http_status: Optional[int] = None,
    ) -> None:
        self.http_status = http_status
        super().__init__(reason, location, schema_id)


class RegistryUnavailableError(RegistryError):
    """The registry could not be reached (connection refused, timeout, 5xx after retries)."""


class RegistryAuthError(RegistryError):
    """The registry refused the client's credentials (HTTP 401) or their permissions (HTTP 403)."""


class RegistryRateLimitedError(RegistryError):
    """The registry kept answering HTTP 429 (too many requests) after the client's retries."""


class RegistryBadResponseError(RegistryError):
    """The registry answered, but not with a Schema Registry answer: an HTML page (a proxy or
    login page), a JSON body without ``schema``, or an HTTP status the API does not use."""


class SchemaMismatchError(RecordError):
    """The writer schema cannot be read with the reader schema, or a registry schema cannot be used."""


class CorruptPayloadError(RecordError):
    """The frame is valid but the payload does not decode with the writer schema."""


class ValidationError(RecordError, ValueError):
    """A value does not conform to its schema (JSON Schema validation, or an Avro/Protobuf value
    that cannot be encoded with the schema)."""


# -- batch calls (deserialize_batch / serialize_batch) -----------------------------------------

__all__ += ["BatchError"]


class BatchError(RecordError):
    """Records of a batch failed (``deserialize_batch`` / ``serialize_batch`` with the default
    ``errors="raise"``). Every record was attempted; nothing is dropped.

    Attributes:
        errors: ``[(index, error), ...]`` in input order: each failed record's position in the batch
            and its typed error (the one a single call would have raised: ``CorruptPayloadError``,
            ``ValidationError``, a ``FramingError``, a ``RegistryError``, ...).
        values: the batch's results, one per input, ``None`` at each failed position.

    The first failure is also the exception's ``__cause__``.
    """

    def __init__(
        self,
        reason: str,
        location: Optional[RecordLocation] = None,
        schema_id: Any = None,
        errors: Optional[List[Tuple[int, BaseException]]] = None,
        values: Optional[List[Any]] = None,
    ) -> None:
        super().__init__(reason, location, schema_id)
        self.errors: List[Tuple[int, BaseException]] = list(errors) if errors is not None else []
        self.values: List[Any] = list(values) if values is not None else []


# -- change data capture (serdes.cdc, serdes.flink.read_debezium) -------------------------------

__all__ += ["MalformedEnvelopeError", "UnsupportedChangeError"]


class MalformedEnvelopeError(ValidationError):
    """A decoded change-data-capture record is not a valid Debezium envelope: ``op`` missing or
    unknown, ``after`` missing on a create/read/update, ``before`` missing on an update or delete
    that needs it, or a part of the envelope of the wrong type."""


class UnsupportedChangeError(RecordError):
    """A valid Debezium event that the configured consumer cannot express, e.g. a truncate
    (``op == "t"``) in a Flink changelog stream with ``on_truncate="fail"``."""


__all__ += ["ColumnValueError"]


class ColumnValueError(ValidationError):
    """A decoded column value that its Flink column type cannot hold (``read_debezium``): an
    integer outside BIGINT/INT/SMALLINT/TINYINT, a decimal beyond its declared precision, a string
    that is not valid Unicode, a value of another type, a null list element ...  Raised inside
    serdes' decode operator, so it follows ``on_error`` like any bad record.  Also raised by
    ``serdes.cdc.SemanticTypes`` for a column value its Debezium/Connect semantic type cannot
    map (an unknown semantic type, ``time '24:00'``, a placeholder where a value is required).

    Attributes:
        column: the column, with the path inside it for nested values (``address.zip``,
            ``tags[2]``).
    """

    def __init__(self, reason: str, location: Optional[RecordLocation] = None, schema_id: Any = None,
                 column: Optional[str] = None) -> None:
        self.column = column
        super().__init__(reason, location, schema_id)


# -- errors without a record: jobs, environments, tools ----------------------------------------
#
# These are raised about a job, a jar or a server rather than about one record, so they carry no
# location unless the raiser knew one (their message is the reason alone), and are not
# ``SerializationError``s (the environment's fault). They keep the built-in base users caught
# before they joined the hierarchy (``RuntimeError``) through multiple inheritance, so
# ``except RuntimeError`` code keeps working. (``KeyFieldMismatchError`` and ``RecordDecodeError``,
# listed here with the Flink errors, are about one record: :class:`RecordError`\ s.)

__all__ += [
    "RecordDecodeError",
    "StateSchemaIncompatibleError",
    "FlinkJobError",
    "ConnectorJarError",
    "PackedRecordError",
    "KeyFieldMismatchError",
    "JobGraphError",
    "ThreadModeError",
    "StrictTypeError",
    "ServerStartError",
    "MissingToolError",
    "FlinkSubmitError",
    "FlinkJobFailed",
]


class _UnlocatedError(SerdesError):
    """A serdes error whose message is its reason, with the location only when one is known."""

    def _format(self) -> str:
        where = str(self.location)
        if where == "unknown location":
            return self.reason
        return f"{self.reason} ({where})"


class KeyFieldMismatchError(RecordError):
    """A record's decoded key field is not the key it was keyed by.

    ``read_kafka_keyed(key_by="field")`` on Protobuf reads the key field from the record's bytes in
    Java, before the shuffle; the keyed operator decodes the record and checks its field against
    that key. They differ only for bytes the Java reader cannot read as the message class would
    (corrupt or unusual encodings); such a record goes through ``on_error`` and never reaches the
    user's function under a wrong key."""


class RecordDecodeError(RecordError):
    """A record could not be decoded (wraps a non-serdes error with the record's coordinates)."""


class StateSchemaIncompatibleError(_UnlocatedError):
    """Restored keyed state was written with a protobuf schema the job's class cannot read.

    Attributes: ``state`` (state name), ``message`` (root type), ``result``
    (:class:`~serdes.protobuf.compat.CompatibilityResult`), ``reasons`` (``"path: [rule] detail"``
    strings).
    """

    def __init__(self, reason: str, state: Optional[str] = None, message: Optional[str] = None,
                 result: Any = None) -> None:
        super().__init__(reason)
        self.state = state
        self.message = message
        self.result = result
        self.reasons = [str(r) for r in result.reasons] if result is not None else []


class FlinkJobError(_UnlocatedError, RuntimeError):
    """A Flink job failed because a record could not be decoded/encoded.

    Carries the serdes error type name (``error_type``), its message and the record's coordinates
    (``topic``, ``partition``, ``offset``; also in ``location``) parsed from the job's failure cause
    (``cause_text``; the original exception object lives in the Python worker).
    """

    def __init__(self, message: str, error_type: str, topic: Optional[str], partition: Optional[int],
                 offset: Optional[int], cause_text: str = "") -> None:
        super().__init__(message, RecordLocation(topic, None, partition, offset))
        self.error_type = error_type
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.cause_text = cause_text

    def _format(self) -> str:
        return self.reason  # the message already names the coordinates


class ConnectorJarError(_UnlocatedError, RuntimeError):
    """The Flink Kafka connector jar is not available and could not be fetched."""


class PackedRecordError(_UnlocatedError, ValueError):
    """A packed record between serdes' Java shim and its Python operators does not match its own
    lengths, or a topic or header name in it is not UTF-8: the shim jar was built from other sources
    than this serdes (``serdes/flink/_packed.py``)."""


class JobGraphError(_UnlocatedError, RuntimeError):
    """The Flink job as built does not meet a requirement of its environment.

    ``operators`` lists ``(operator name, detail)`` for every offending operator.
    """

    def __init__(self, message: str, operators: List[Tuple[str, str]]) -> None:
        super().__init__(message)
        self.operators = operators


class ThreadModeError(JobGraphError):
    """``execution_mode="thread"`` was asked for, but a Python operator would run in process mode."""


class StrictTypeError(JobGraphError):
    """``strict_types=True``: an operator's output or state type falls back to pickled bytes."""


class ServerStartError(_UnlocatedError, RuntimeError):
    """A test server (serdes.testing) did not become ready; the message includes the tail of its log."""


class MissingToolError(_UnlocatedError, RuntimeError):
    """``java`` or ``mvn`` is not on PATH."""


class FlinkSubmitError(_UnlocatedError, RuntimeError):
    """``flink run`` failed; the message holds its output and the client log tail."""


class FlinkJobFailed(_UnlocatedError, RuntimeError):
    """A job on a serdes.testing Flink cluster reached FAILED (or another terminal state than the
    awaited one)."""

    def __init__(self, message: str, job_id: str, state: str, exception_text: str = "") -> None:
        super().__init__(message)
        self.job_id = job_id
        self.state = state
        self.exception_text = exception_text


# -- format-specific errors (re-exported by their format packages) ------------------------------

__all__ += ["WrongMessageTypeError", "RemoteRefRefused"]


class WrongMessageTypeError(ValidationError, ValueError):
    """The value is not an instance of the Protobuf serializer's message class (a ``ValueError``
    too, as confluent-kafka raises)."""


class RemoteRefRefused(SchemaMismatchError):
    """A JSON Schema ``$ref`` points outside the schema and its registry references, and remote
    references are not enabled (``serdes.allow.remote.refs``), or its scheme is never fetched."""

    def __init__(self, uri: str, allowed: bool) -> None:
        self.uri = uri
        self.allowed = allowed
        if allowed:
            why = "only http(s):// targets are fetched with serdes.allow.remote.refs"
        else:
            why = "set serdes.allow.remote.refs=true to fetch http(s):// targets"
        super().__init__(f"JSON Schema $ref {uri!r} is neither in the schema nor a registry reference; refusing it ({why})")


# -- the seam to confluent-kafka's private API (serdes/_confluent.py) ----------------------------

__all__ += ["ConfluentAPIError"]


class ConfluentAPIError(_UnlocatedError, TypeError):
    """The installed confluent-kafka lacks a private attribute or method serdes relies on.

    ``attribute`` is its name, ``owner`` the class (or module) it was read from, ``version`` the
    installed confluent-kafka version. Raised when a serializer or deserializer is constructed.
    """

    def __init__(self, attribute: str, owner: str, version: Optional[str] = None) -> None:
        if version is None:
            import importlib.metadata

            version = importlib.metadata.version("confluent-kafka")
        self.attribute = attribute
        self.owner = owner
        self.version = version
        super().__init__(
            f"{owner} has no attribute {attribute!r} on confluent-kafka {version}: serdes reads it "
            f"to match confluent-kafka's behaviour and cannot run without it (serdes/_confluent.py "
            f"lists what it needs)"
        )


__all__ += ["ConfluentVersionError"]


class ConfluentVersionError(ConfluentAPIError):
    """The installed confluent-kafka (inside serdes' supported range) predates a feature serdes
    builds on: a builder class, ``confluent_kafka.aio``'s consumer, a helper of a newer release.

    ``feature`` names it, ``required`` the first confluent-kafka release that has it (``"2.16"``),
    ``version`` the installed one. Raised when the serde (or builder, or consumer) is constructed,
    never while records flow. A :class:`ConfluentAPIError`: ``attribute`` is ``feature`` and
    ``owner`` ``"confluent-kafka"``.
    """

    def __init__(self, feature: str, required: str, version: Optional[str] = None) -> None:
        if version is None:
            import importlib.metadata

            version = importlib.metadata.version("confluent-kafka")
        self.attribute = feature
        self.owner = "confluent-kafka"
        self.version = version
        self.feature = feature
        self.required = required
        _UnlocatedError.__init__(
            self,
            f"{feature} needs confluent-kafka {required} or newer; {version} is installed "
            f"(pip install 'confluent-kafka>={required}')",
        )


# -- the seam to PyFlink's private API (serdes/flink/_pyflink.py) --------------------------------

__all__ += ["PyFlinkAPIError"]


class PyFlinkAPIError(_UnlocatedError, TypeError):
    """The installed PyFlink (apache-flink) lacks a private attribute serdes.flink relies on.

    ``attribute`` is its name, ``owner`` the class (or module) it was read from, ``version`` the
    installed apache-flink version. Raised when the part of serdes.flink that needs it runs
    (building a source or sink, keying a stream, building the job graph, opening typed state).
    """

    def __init__(self, attribute: str, owner: str, version: str) -> None:
        self.attribute = attribute
        self.owner = owner
        self.version = version
        super().__init__(
            f"{owner} has no attribute {attribute!r} on apache-flink {version}: serdes.flink reads "
            f"it to reach PyFlink's Java objects and cannot run without it (serdes/flink/_pyflink.py "
            f"lists what it needs; serdes[flink] pins the apache-flink release it was verified with)"
        )
