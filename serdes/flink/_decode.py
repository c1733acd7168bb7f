"""The decode operator: shim rows -> decoded values, with poison-pill handling.

Registry deserializers are built once per worker in ``open()`` (never pickled with the job).
A record that does not decode follows ``on_error`` -- unless the registry failed, which is never
the record's fault (:func:`poison_pill`). :class:`DecodingFunction` is what every serdes operator
that decodes Kafka records shares (this module's :class:`DecodeFunction` and the Debezium one).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Tuple

from confluent_kafka.serialization import MessageField
from pyflink.common import Row
from pyflink.datastream import ProcessFunction, RuntimeContext

from serdes._errors import KeyFieldMismatchError, RecordDecodeError, RecordLocation, RegistryError, SerdesError

from ._codecs import SerdeSpec, create_in_worker
from ._metrics import BatchedCounter, batched, flush_all
from ._packed import unpack_record
from ._records import DEAD_LETTER_TAG, PICKLE_MODULE, FlinkSerializationContext, KafkaRecord

__all__ = [
    "ON_ERROR_FAIL", "ON_ERROR_DEAD_LETTER", "ON_ERROR_SKIP", "check_on_error", "poison_pill",
    "DecodingFunction", "DecodeFunction",
]

ON_ERROR_FAIL = "fail"
ON_ERROR_DEAD_LETTER = "dead_letter"
ON_ERROR_SKIP = "skip"


def check_on_error(on_error: str) -> None:
    if on_error not in (ON_ERROR_FAIL, ON_ERROR_DEAD_LETTER, ON_ERROR_SKIP):
        raise ValueError(f"on_error must be 'fail', 'dead_letter' or 'skip', not {on_error!r}")


def _locate(err: BaseException, topic: str, partition: int, offset: int, field: str) -> SerdesError:
    if isinstance(err, SerdesError):
        return err.at(topic=topic, partition=partition, offset=offset, field=field)
    reason = f"{type(err).__name__}: {err}"
    return RecordDecodeError(reason, RecordLocation(topic, field, partition, offset))


def _dead_letter_row(row: Any, err: BaseException) -> Row:
    reason = getattr(err, "reason", None) or str(err)
    return Row(row[0], row[1], row[2], row[3], row[4], row[5], row[6], str(reason), type(err).__name__)


def poison_pill(on_error: str, failed: Any, registry_failures: Any, exc: BaseException, row: Any, topic: str,
                partition: int, offset: int, field: str) -> Optional[Tuple[Any, Row]]:
    """A record that does not decode: apply ``on_error`` to it, unless the registry failed.

    A :class:`serdes.RegistryError` (unreachable, 401/403, 429, a bad answer) is the registry's
    failure, not the record's: the same record decodes once the registry answers. It is counted in
    ``registry_failures`` and always raised -- never dead-lettered or skipped -- so the operator
    fails and Flink's restart strategy retries from the last checkpoint. Any other failure is
    counted in ``failed``; ``"fail"`` raises the located error, ``"dead_letter"`` returns the
    ``(DEAD_LETTER_TAG, row)`` output to emit, ``"skip"`` returns None.
    """
    if isinstance(exc, RegistryError):
        registry_failures.inc()
        raise exc.at(topic=topic, partition=partition, offset=offset, field=field)
    failed.inc()
    err = _locate(exc, topic, partition, offset, field)
    if on_error == ON_ERROR_FAIL:
        raise err from exc
    if on_error == ON_ERROR_DEAD_LETTER:
        return DEAD_LETTER_TAG, _dead_letter_row(row, err)
    return None


class DecodingFunction(ProcessFunction):
    """What the operators that decode shim rows share: the value (and key) deserializer recipes,
    ``on_error``, the deserializers built in :meth:`open` and the counters ``serdes_decoded``,
    ``serdes_failed``, ``serdes_tombstones`` and ``serdes_registry_failures`` of the operator's
    metric group.

    Subclasses set ``value_spec``, ``key_spec`` and ``on_error`` (checked with
    :func:`check_on_error`) in their constructor; the order they set attributes in is the order
    their pickles (job graphs) list them.
    """

    __module__ = PICKLE_MODULE

    value_spec: SerdeSpec
    key_spec: Optional[SerdeSpec]
    on_error: str
    _value_de: Callable[[Any, Any], Any]  # built in open()
    _key_de: Optional[Callable[[Any, Any], Any]]

    def open(self, runtime_context: RuntimeContext) -> None:
        self._value_de, self._key_de = create_in_worker(self.value_spec, self.key_spec)
        group = runtime_context.get_metrics_group()
        self._batched: List[BatchedCounter] = []
        # counted per record: batched (``_metrics.py``); failures and the rest are counted at once
        self._decoded = batched(self._batched, group.counter("serdes_decoded"))
        self._failed = group.counter("serdes_failed")
        self._tombstones = group.counter("serdes_tombstones")
        self._registry_failures = group.counter("serdes_registry_failures")

    def close(self) -> None:
        flush_all(getattr(self, "_batched", ()))  # type: ignore[arg-type]  # () before open()

    def _reject(self, exc: BaseException, row: Any, field: str) -> Tuple[Tuple[Any, Row], ...]:
        """:func:`poison_pill` with this operator's ``on_error`` and counters: the outputs to emit
        for the record (its dead letter, or none); raises for ``"fail"`` and registry failures."""
        dead = poison_pill(self.on_error, self._failed, self._registry_failures, exc, row, row[0], row[1], row[2],
                           field)
        return () if dead is None else (dead,)


#: :meth:`DecodeFunction.decode`'s "nothing to emit" (tombstone or skipped record).
NOTHING = object()


class DecodeFunction(DecodingFunction):
    """Decodes shim rows with registry deserializers built once per worker in :meth:`open`.

    ``on_error``: ``"fail"`` raises a :class:`serdes.SerdesError` naming topic/partition/offset
    (the job fails); ``"dead_letter"`` emits a :data:`DEAD_LETTER_ROW_TYPE` row on
    :data:`DEAD_LETTER_TAG`; ``"skip"`` drops the record.  A :class:`serdes.RegistryError`
    (registry unreachable, HTTP 401/403/429, a bad answer) is not the record's fault: whatever
    ``on_error`` says, it fails the operator (Flink's restart strategy retries), so an auth outage
    never dead-letters or skips good records.  Counters ``serdes_decoded``, ``serdes_failed``,
    ``serdes_tombstones`` and ``serdes_registry_failures`` are registered in the operator's
    metric group.

    ``emit``: optional callable turning the decoded output (value or :class:`KafkaRecord`)
    into what goes downstream (e.g. a typed encoder for ``ProtobufTypeInformation``).
    """

    __module__ = PICKLE_MODULE

    def __init__(
        self,
        value: SerdeSpec,
        key: Optional[SerdeSpec] = None,
        on_error: str = ON_ERROR_FAIL,
        include_metadata: bool = False,
        skip_tombstones: bool = True,
        emit: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        check_on_error(on_error)
        self.value_spec = value
        self.key_spec = key
        self.on_error = on_error
        self.include_metadata = include_metadata
        self.skip_tombstones = skip_tombstones
        self.emit = emit
        self._value_de = None  # type: ignore[assignment]  # built in open(); None while pickled with the job
        self._key_de = None

    def process_element(self, row: Any, ctx: Any) -> Iterator[Any]:
        out = self.decode(row)
        if out is not NOTHING:
            yield out

    def decode(self, row: Any, key_check: Optional[Tuple[Callable[[Any], Any], Any]] = None) -> Any:
        """One record -> what ``process_element`` emits: the decoded output, a dead-letter
        ``(DEAD_LETTER_TAG, row)``, or :data:`NOTHING` (tombstone, skipped record). A plain call,
        for operators that decode inside their own ``process_element`` (no generator per record).

        ``row``: a packed record (``bytes``, ``_packed.py``: what serdes' sources emit) or a
        :data:`RECORD_ROW_TYPE` row / 7-tuple (``read_records``).

        ``key_check``: ``(key_of, key)``: the record fails like a poison pill
        (:class:`~serdes.flink.KeyFieldMismatchError`) unless ``key_of(decoded value) == key``;
        the keyed operator of ``read_kafka_keyed(key_by="field")`` passes the key the record was
        shuffled by."""
        if type(row) is bytes:
            row = unpack_record(row)
        topic, partition, offset, ts, raw_key, raw_value, headers = row
        if raw_value is None and self.skip_tombstones:
            self._tombstones.inc()
            return NOTHING
        field = MessageField.VALUE
        try:
            value = self._value_de(
                raw_value, FlinkSerializationContext(topic, MessageField.VALUE, headers, partition, offset)
            )
            key = raw_key
            if self._key_de is not None and raw_key is not None:
                field = MessageField.KEY
                key = self._key_de(
                    raw_key, FlinkSerializationContext(topic, MessageField.KEY, headers, partition, offset)
                )
            if key_check is not None and value is not None:  # a kept tombstone has no field to check
                field = MessageField.VALUE
                got = key_check[0](value)
                if got != key_check[1]:
                    raise KeyFieldMismatchError(
                        f"the record was keyed by {repr(key_check[1])[:200]}, read from its bytes before the "
                        f"shuffle, but its decoded key field is {repr(got)[:200]}")
        except Exception as exc:  # noqa: BLE001 - registry failures raise, the rest are poison pills
            rejected = self._reject(exc, row, field)
            return rejected[0] if rejected else NOTHING
        self._decoded.inc()
        out = KafkaRecord(topic, partition, offset, ts, key, value, headers) if self.include_metadata else value
        if self.emit is not None:
            out = self.emit(out)
        return out
