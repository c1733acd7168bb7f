"""Arrow batches as comparable Python rows, for the columnar tests and the fuzzer."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, List

import pyarrow as pa


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with its timestamps and durations as int64 (their counts): pyarrow gives nanosecond
    ones to Python only through pandas, which the wheel check does not install."""
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, storage_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", storage_type(t.key_type), False),
                       pa.field("value", storage_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, storage_type(t.value_type), t.value_field.nullable))
    return t


def storage_rows(batch: Any) -> List[Any]:
    """The rows of ``batch`` (anything ``pyarrow.record_batch`` takes) as Python values, with
    timestamps and durations as their int64 counts."""
    rb = pa.record_batch(batch)
    schema = pa.schema([pa.field(f.name, storage_type(f.type), f.nullable) for f in rb.schema])
    return list(pa.Table.from_batches([rb]).cast(schema).to_pylist())


@contextmanager
def panic_armed(native_module: Any, calls: int = 1) -> Iterator[None]:
    """The native extension's test hook armed: its ``calls``-th decode from now panics."""
    native_module._arm_panic(calls)
    try:
        yield
    finally:
        native_module._arm_panic(0)
