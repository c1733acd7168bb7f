"""What travels between the Java record shim and serdes' Python operators.

The row source shim emits :data:`RECORD_ROW_TYPE` rows (a Kafka record's coordinates, raw key and
value, headers: ``read_records``); the row sink shim consumes :data:`PRODUCER_ROW_TYPE` rows.
serdes' own operators exchange the same records packed into one ``byte[]`` (:data:`BYTES`,
``_packed.py``).  Records that fail to decode leave as :data:`DEAD_LETTER_ROW_TYPE` rows on
:data:`DEAD_LETTER_TAG`. :class:`KafkaRecord`
is a decoded record with its coordinates, :class:`FlinkSerializationContext` the context serdes'
deserializers are called with (it also carries partition and offset, for error locations).

The classes give pickles (a ``KafkaRecord`` in pickled state or in flight) the package as their
module (``_pickling.py``); ``serdes.flink._kafka``, where earlier releases defined them, still
holds them for the pickles those wrote.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, cast

from confluent_kafka.serialization import SerializationContext
from pyflink.common import Types
from pyflink.common.typeinfo import RowTypeInfo, TypeInformation
from pyflink.datastream import OutputTag

from ._pickling import PICKLE_MODULE

__all__ = [
    "BYTES", "HEADERS", "RECORD_ROW_TYPE", "PRODUCER_ROW_TYPE", "DEAD_LETTER_ROW_TYPE", "DEAD_LETTER_TAG",
    "KafkaRecord", "FlinkSerializationContext", "PICKLE_MODULE", "bytes_type", "row_named",
]


def bytes_type() -> TypeInformation:
    """``byte[]`` (``Types.PRIMITIVE_ARRAY(Types.BYTE())``, which PyFlink leaves unannotated)."""
    return cast(TypeInformation, Types.PRIMITIVE_ARRAY(Types.BYTE()))


def row_named(names: List[str], types: List[TypeInformation]) -> RowTypeInfo:
    """``Types.ROW_NAMED(names, types)`` (which PyFlink leaves unannotated)."""
    return cast(RowTypeInfo, Types.ROW_NAMED(names, types))


BYTES = bytes_type()
HEADERS = Types.MAP(Types.STRING(), BYTES)

#: What the source shim emits.
RECORD_ROW_TYPE = row_named(
    ["topic", "partition", "offset", "timestamp", "key", "value", "headers"],
    [Types.STRING(), Types.INT(), Types.LONG(), Types.LONG(), BYTES, BYTES, HEADERS],
)
#: What the sink shim consumes.
PRODUCER_ROW_TYPE = row_named(
    ["topic", "key", "value", "headers"], [Types.STRING(), BYTES, BYTES, HEADERS]
)
#: A record that failed to decode: raw bytes, coordinates and the reason.
DEAD_LETTER_ROW_TYPE = row_named(
    ["topic", "partition", "offset", "timestamp", "key", "value", "headers", "reason", "error_type"],
    [Types.STRING(), Types.INT(), Types.LONG(), Types.LONG(), BYTES, BYTES, HEADERS,
     Types.STRING(), Types.STRING()],
)
DEAD_LETTER_TAG = OutputTag("serdes-dead-letter", DEAD_LETTER_ROW_TYPE)


class KafkaRecord(NamedTuple):
    """A decoded record with its coordinates (``include_metadata=True``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: Optional[Dict[str, Optional[bytes]]]  # a null header value is None


KafkaRecord.__module__ = PICKLE_MODULE


class FlinkSerializationContext(SerializationContext):
    """confluent-kafka ``SerializationContext`` that also carries partition and offset."""

    __module__ = PICKLE_MODULE
    __slots__ = ("partition", "offset")

    def __init__(self, topic: str, field: Any, headers: Any = None, partition: Optional[int] = None,
                 offset: Optional[int] = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers
        self.partition = partition
        self.offset = offset
