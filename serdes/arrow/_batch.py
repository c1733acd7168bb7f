"""The result of a columnar decode: one Arrow record batch, the rows' input positions, and the
records that failed (``errors="collect"``), exported through the Arrow PyCapsule interface."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import pyarrow as pa

__all__ = ["ArrowBatch", "METADATA", "metadata_columns"]

#: the Kafka coordinates a batch of consumer messages can carry as extra columns
METADATA = ("topic", "partition", "offset", "timestamp", "key", "headers")

_HEADERS = pa.list_(pa.field("item", pa.struct([pa.field("key", pa.utf8(), False),
                                                 pa.field("value", pa.binary(), True)]), False))


class ArrowBatch:
    """Decoded records as Arrow columns.

    Any Arrow consumer reads it through the PyCapsule interface without a copy:
    ``pyarrow.record_batch(batch)``, ``pyarrow.table(batch)`` (tested), or any other library that
    takes ``__arrow_c_stream__`` / ``__arrow_c_array__`` objects.

    Attributes:
        errors: ``[(index, error), ...]``: each record that did not decode (only with
            ``errors="collect"``; with ``"raise"`` a failure raises), by its position in the input,
            with its typed error. Those records are not rows of the batch.
        rows: for each row, the position of its record in the input (``list(range(n))`` when
            every record decoded).
    """

    __slots__ = ("_batch", "errors", "_rows")

    def __init__(self, batch: pa.RecordBatch, errors: List[Tuple[int, BaseException]],
                 rows: Optional[List[int]]) -> None:
        self._batch = batch
        self.errors = errors
        self._rows = rows  # None: every record is a row, in input order

    @property
    def rows(self) -> List[int]:
        if self._rows is None:
            self._rows = list(range(self._batch.num_rows))
        return self._rows

    @property
    def num_rows(self) -> int:
        return int(self._batch.num_rows)

    @property
    def schema(self) -> pa.Schema:
        return self._batch.schema

    def to_pyarrow(self) -> pa.RecordBatch:
        """The batch as a ``pyarrow.RecordBatch`` (no copy)."""
        return self._batch

    def __len__(self) -> int:
        return self.num_rows

    def __arrow_c_schema__(self) -> Any:
        return self._batch.schema.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: Optional[Any] = None) -> Tuple[Any, Any]:
        capsules: Tuple[Any, Any] = self._batch.__arrow_c_array__(requested_schema)
        return capsules

    def __arrow_c_stream__(self, requested_schema: Optional[Any] = None) -> Any:
        return pa.Table.from_batches([self._batch]).__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        failed = f", {len(self.errors)} failed" if self.errors else ""
        return f"<ArrowBatch {self.num_rows} rows{failed}: {self._batch.schema.names}>"


def metadata_columns(names: Sequence[str], msgs: Sequence[Any]) -> List[Tuple[str, pa.Array]]:
    """The Kafka coordinate columns of ``msgs`` (consumer messages), in the order asked."""
    out: List[Tuple[str, pa.Array]] = []
    for name in names:
        if name == "topic":
            out.append((name, pa.array([m.topic() for m in msgs], pa.utf8()).dictionary_encode()))
        elif name == "partition":
            out.append((name, pa.array([m.partition() for m in msgs], pa.int32())))
        elif name == "offset":
            out.append((name, pa.array([m.offset() for m in msgs], pa.int64())))
        elif name == "timestamp":
            # (type, ms since the epoch); type 0 (TIMESTAMP_NOT_AVAILABLE) is a null
            ts = [m.timestamp() for m in msgs]
            out.append((name, pa.array([t[1] if t[0] else None for t in ts], pa.timestamp("ms", "UTC"))))
        elif name == "key":
            out.append((name, pa.array([m.key() for m in msgs], pa.binary())))
        elif name == "headers":
            hs = [m.headers() for m in msgs]
            out.append((name, pa.array(
                [None if h is None else [{"key": k, "value": v} for k, v in h] for h in hs], _HEADERS)))
    return out
