"""Deserializing consumers whose ``consume(num_messages, timeout)`` works, poison pills included.

confluent-kafka's ``DeserializingConsumer.consume`` raises ``NotImplementedError``, and its
``poll`` raises ``KeyDeserializationError`` / ``ValueDeserializationError`` for a record that does
not decode. A batch cannot raise for one record without losing the others, so here every message
comes back, in order:

* a message that decoded is confluent-kafka's ``Message`` with the decoded key and value set, as
  ``poll`` returns it;
* a message that did not decode is an :class:`UndecodableMessage`: the same accessors, the raw
  key and value bytes untouched, and ``error()`` returning a :class:`DeserializationKafkaError` --
  a ``KafkaError`` with code ``_KEY_DESERIALIZATION`` / ``_VALUE_DESERIALIZATION`` (the codes of
  confluent-kafka's exceptions) whose ``exception`` is the typed serdes error, located at topic,
  partition and offset. ``error().to_exception()`` gives the ``ValueDeserializationError`` that
  ``poll`` would have raised. So the usual ``if msg.error(): ...`` check sees it;
* a message the broker reported an error for is returned as it came (``error()`` set), as
  confluent-kafka's asyncio consumer does.

Values of consecutive messages of one topic without headers are decoded with the deserializer's
``deserialize_batch`` (serdes' batch path); if that raises, the run is decoded record by record so
that only the failing records carry errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generator, List, Optional, Sequence, Tuple

from confluent_kafka import DeserializingConsumer as _ConfluentDeserializingConsumer
from confluent_kafka import KafkaError
from confluent_kafka.cimpl import Consumer as _RawConsumer
from confluent_kafka.error import KeyDeserializationError, ValueDeserializationError
from confluent_kafka.serialization import MessageField, SerializationContext

from ._confluent import FEATURE_SINCE, consumer_deserializers, newer_class
from ._drive import Call, Plan, drive, drive_async
from ._errors import SerdesError

if TYPE_CHECKING:
    from confluent_kafka import Message

__all__ = ["DeserializingConsumer", "AsyncDeserializingConsumer", "UndecodableMessage", "DeserializationKafkaError"]


class DeserializationKafkaError(KafkaError):
    """``msg.error()`` of a message whose key or value did not decode.

    ``code()`` is ``KafkaError._KEY_DESERIALIZATION`` or ``KafkaError._VALUE_DESERIALIZATION``;
    ``exception`` is the deserializer's error (a :class:`serdes.SerdesError` subclass for serdes'
    deserializers, with the record's topic, partition and offset filled in); ``kafka_message`` is the
    raw message.
    """

    exception: Exception
    kafka_message: Any

    def to_exception(self) -> Exception:
        """The ``KeyDeserializationError`` / ``ValueDeserializationError`` ``poll()`` raises for it."""
        cls = KeyDeserializationError if self.code() == KafkaError._KEY_DESERIALIZATION else ValueDeserializationError
        return cls(exception=self.exception, kafka_message=self.kafka_message)


def _failure(code: int, exc: Exception, msg: Any) -> DeserializationKafkaError:
    if isinstance(exc, SerdesError):
        exc.at(topic=msg.topic(), partition=msg.partition(), offset=msg.offset())
    err = DeserializationKafkaError(code, f"{type(exc).__name__}: {exc}")
    err.exception = exc
    err.kafka_message = msg
    return err


class UndecodableMessage:
    """A consumed message whose key or value did not decode: raw bytes kept, ``error()`` set."""

    __slots__ = ("message", "_error")

    def __init__(self, message: Any, error: DeserializationKafkaError) -> None:
        self.message: Message[Any, Any] = message  # the raw confluent_kafka Message (e.g. to produce to a dead-letter topic)
        self._error = error

    def error(self) -> DeserializationKafkaError:
        return self._error

    def topic(self) -> Optional[str]:
        return self.message.topic()

    def partition(self) -> Optional[int]:
        return self.message.partition()

    def offset(self) -> Optional[int]:
        return self.message.offset()

    def key(self) -> Any:
        return self.message.key()

    def value(self) -> Any:
        return self.message.value()

    def headers(self) -> Any:
        return self.message.headers()

    def timestamp(self) -> Tuple[int, int]:
        return self.message.timestamp()

    def leader_epoch(self) -> Optional[int]:
        return self.message.leader_epoch()

    def latency(self) -> Optional[float]:
        return self.message.latency()

    def __len__(self) -> int:
        return len(self.message)

    def __repr__(self) -> str:
        return (f"<UndecodableMessage topic={self.topic()!r} partition={self.partition()} "
                f"offset={self.offset()} error={self._error.str()!r}>")


def _runs(msgs: Sequence[Any]) -> List[Tuple[int, int]]:
    """[start, end) index ranges of consecutive error-free messages of one topic without headers."""
    runs: List[Tuple[int, int]] = []
    start = None
    topic = None
    for i, m in enumerate(msgs):
        batchable = m.error() is None and not m.headers()
        if batchable and start is not None and m.topic() == topic:
            continue
        if start is not None:
            runs.append((start, i))
            start = None
        if batchable:
            start, topic = i, m.topic()
    if start is not None:
        runs.append((start, len(msgs)))
    return runs


class DeserializingConsumer(_ConfluentDeserializingConsumer):
    """confluent-kafka's ``DeserializingConsumer`` (same configuration, ``poll`` unchanged) plus a
    working :meth:`consume`.

    ``consume(num_messages, timeout)`` returns every message of the batch: decoded ones as
    ``poll`` returns them, undecodable ones as :class:`UndecodableMessage` whose ``error()`` is a
    :class:`DeserializationKafkaError` carrying the typed error (see :mod:`serdes._consumer`).
    """

    def consume(self, num_messages: int = 1, timeout: float = -1) -> List[Any]:
        """Consume up to ``num_messages`` and decode them; a record that fails carries its error."""
        msgs = _RawConsumer.consume(self, num_messages, timeout)
        return _decode_batch(msgs, *consumer_deserializers(self))


_CODES = {MessageField.KEY: KafkaError._KEY_DESERIALIZATION, MessageField.VALUE: KafkaError._VALUE_DESERIALIZATION}


def _plan(msgs: List[Any], key_deser: Any, value_deser: Any) -> Plan[List[Any]]:
    """One decoding plan for both consumers (a :mod:`serdes._drive` plan): it yields each
    deserializer call and returns the batch; ``drive`` runs it for the sync consumer,
    ``drive_async`` (which also awaits an async deserializer's result) for the asyncio one."""
    failed: List[Optional[DeserializationKafkaError]] = [None] * len(msgs)
    keys: List[Any] = [m.key() if m.error() is None else None for m in msgs]
    values: List[Any] = [m.value() if m.error() is None else None for m in msgs]
    # keys before values, record by record (a key deserializer may stash state for the value one)
    if key_deser is not None:
        yield from _one_by_one(msgs, key_deser, MessageField.KEY, keys, failed, [False] * len(msgs))
    if value_deser is not None:
        done = [False] * len(msgs)
        batch = getattr(value_deser, "deserialize_batch", None)
        if batch is not None:
            for start, end in _runs(msgs):
                if any(failed[i] is not None for i in range(start, end)):
                    continue
                ok, out = yield batch, ([m.value() for m in msgs[start:end]],
                                        SerializationContext(msgs[start].topic(), MessageField.VALUE, None))
                if not ok:
                    continue  # decoded record by record below, so only the bad records fail
                values[start:end] = out
                for i in range(start, end):
                    done[i] = True
        yield from _one_by_one(msgs, value_deser, MessageField.VALUE, values, failed, done)
    return _assemble(msgs, keys, values, failed)


def _one_by_one(msgs: List[Any], deser: Any, field: MessageField, raw: List[Any], failed: List[Any],
                done: List[bool]) -> Generator[Call, Tuple[bool, Any], None]:
    """Decode ``raw[i]`` (message i's key or value) in place, or set ``failed[i]``, for every
    message without a broker error, an earlier failure or a ``done`` decoding."""
    for i, m in enumerate(msgs):
        if done[i] or failed[i] is not None or m.error() is not None:
            continue
        ok, out = yield deser, (raw[i], SerializationContext(m.topic(), field, m.headers()))
        if ok:
            raw[i] = out
        else:
            failed[i] = _failure(_CODES[field], out, m)


def _decode_batch(msgs: List[Any], key_deser: Any, value_deser: Any) -> List[Any]:
    return drive(_plan(msgs, key_deser, value_deser))


async def _decode_batch_async(msgs: List[Any], key_deser: Any, value_deser: Any) -> List[Any]:
    return await drive_async(_plan(msgs, key_deser, value_deser))


def _assemble(msgs: List[Any], keys: List[Any], values: List[Any], failed: List[Any]) -> List[Any]:
    result: List[Any] = []
    for m, k, v, f in zip(msgs, keys, values, failed, strict=False):
        if m.error() is not None:
            result.append(m)
        elif f is not None:
            result.append(UndecodableMessage(m, f))
        else:
            m.set_key(k)
            m.set_value(v)
            result.append(m)
    return result


if TYPE_CHECKING:
    from confluent_kafka.aio import AsyncDeserializingConsumer as _ConfluentAsyncDeserializingConsumer
else:
    # confluent-kafka 2.16 added confluent_kafka.aio.AsyncDeserializingConsumer: on an older release
    # constructing serdes' raises serdes.ConfluentVersionError naming 2.16
    _ConfluentAsyncDeserializingConsumer = newer_class(
        "confluent_kafka.aio", "AsyncDeserializingConsumer", FEATURE_SINCE["async consumer"], "serdes.AsyncDeserializingConsumer",
    )


class AsyncDeserializingConsumer(_ConfluentAsyncDeserializingConsumer):
    """confluent-kafka's ``confluent_kafka.aio.AsyncDeserializingConsumer`` (``consumer = await
    AsyncDeserializingConsumer(conf)``, ``poll`` unchanged) whose ``await consume(n, timeout)``
    returns every message: an undecodable one as :class:`UndecodableMessage` instead of raising
    for the whole batch. Deserializers may be asyncio (``AsyncAvroDeserializer``, ...) or sync.
    """

    async def consume(self, num_messages: int = 1, timeout: float = -1) -> List[Any]:
        """Consume up to ``num_messages`` and decode them; a record that fails carries its error."""
        # AIOConsumer's consume (the raw messages), past confluent-kafka's, which decodes and raises
        msgs = await super(_ConfluentAsyncDeserializingConsumer, self).consume(num_messages, timeout)
        return await _decode_batch_async(msgs, *consumer_deserializers(self))
