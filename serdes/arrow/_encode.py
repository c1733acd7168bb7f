"""``serialize_arrow``: Arrow rows -> one framed value per row, each the bytes the serializer's
per-record call writes for that row.

The columns are the serializer's own schema's (:mod:`serdes.arrow._avro`, ``_protobuf``,
``_json``); the data is cast to them (a safe cast: ``int64`` data for an ``int`` column must fit),
turned back into the Python values the serializer takes (dicts; Protobuf messages), and written
by the serializer's batch path -- so the bytes are per-record serialization's by construction.
For Avro, the native columnar encoder (:mod:`serdes.arrow._native_encoder`) writes the same bytes
straight from the columns when it takes the schema and the call; else the per-record path runs.
"""

from __future__ import annotations

import json
from typing import Any, List, Optional

import pyarrow as pa
from confluent_kafka.serialization import SerializationContext

from .._confluent import message_class, own_parsed_schema, own_schema, to_dict
from .._errors import ColumnValueError
from ._avro import avro_shape
from ._json import json_shape
from ._native_encoder import check_errors, first_valid, native_rows
from ._protobuf import message_from_dict, protobuf_shape
from ._shapes import Struct

__all__ = ["serialize_arrow", "serializer_shape"]


def serializer_shape(ser: Any) -> Struct:
    """The columns a serializer's records have (its own schema's)."""
    limits = getattr(ser, "_limits", None)
    depth = limits.max_schema_depth if limits is not None else 64
    kind = ser._schema_type
    if kind == "PROTOBUF":
        if getattr(ser, "_record_to_dict", None) is not None:
            raise ValueError("serialize_arrow writes the rows as messages: this ProtobufSerializer has a to_dict")
        return protobuf_shape(message_class(ser).DESCRIPTOR, depth)
    if to_dict(ser) is not None:
        raise ValueError(f"serialize_arrow writes the rows as dicts: this {type(ser).__name__} has a to_dict")
    if kind == "AVRO":
        return avro_shape(own_parsed_schema(ser), depth)
    parsed = own_parsed_schema(ser)
    if parsed is None:
        schema = own_schema(ser)
        parsed = json.loads(schema.schema_str)
    return json_shape(parsed, depth)


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)])
    raise TypeError(f"serialize_arrow takes Arrow data (a pyarrow Table or RecordBatch, or any object with "
                    f"__arrow_c_stream__ / __arrow_c_array__), not {type(data).__name__}")


def _columns(shape: Struct, data: Any) -> pa.Table:
    """``data`` as a table of exactly the shape's columns, in order, each of the shape's type."""
    table = _as_table(data)
    names = [n for n, _, _ in shape.fields]
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise ValueError(f"the data has no column {missing[0]!r} (the schema's columns: {names})")
    target = pa.schema([pa.field(n, s.type, True) for n, s, _ in shape.fields])
    table = table.select(names)
    try:
        # only columns of another type are cast (a cast re-checks nullability, which an Arrow
        # producer need not have declared; null values of a non-nullable field are refused per row)
        if any(f.type != t.type for f, t in zip(table.schema, target, strict=True)):
            table = pa.Table.from_arrays(
                [c if c.type == t.type else c.cast(t.type, safe=True) for c, t in zip(table.columns, target, strict=True)],
                schema=target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ColumnValueError(f"the data does not cast to the schema's columns: {e}") from None
    return table


def _python_rows(shape: Struct, table: pa.Table) -> List[Any]:
    """The Python value of each row of ``table`` (of the shape's columns): what the serializer takes."""
    rows: List[Any] = []
    for batch in table.to_batches():
        # (the batch's length: a record without fields has rows but no columns)
        struct = batch.to_struct_array()
        rows.extend(shape.to_python(struct))
    if shape.wrapped:
        rows = [r["value"] for r in rows]
    return rows


def _first_value(shape: Struct, table: pa.Table) -> Any:
    """The Python value of the first row that has one (``None``: no row has)."""
    if not shape.wrapped:
        return _python_rows(shape, table.slice(0, 1))[0]
    at = first_valid(table.column(0))
    if at < 0:
        return None
    value = _python_rows(shape, table.slice(at, 1))[0]
    if value is None:  # a null the validity bitmap does not show (a dictionary's null value)
        value = next((v for v in _python_rows(shape, table.slice(at)) if v is not None), None)
    return value


def serialize_arrow(ser: Any, data: Any, ctx: Optional[SerializationContext] = None, *, errors: str = "raise"
                    ) -> List[Any]:
    """See :meth:`serdes.avro.AvroSerializer.serialize_arrow` (every serializer has it)."""
    shape = serializer_shape(ser)
    table = _columns(shape, data)
    native = native_rows(ser, shape) if table.num_rows else None
    if native is not None:
        check_errors(errors)
        # the native columnar encoder (Avro), or None: the per-record path below decides
        found = native.encode(ser, table, ctx, lambda: _first_value(shape, table))
        if found is not None:
            return found
    rows = _python_rows(shape, table)
    if ser._schema_type == "PROTOBUF":
        cls = message_class(ser)
        rows = [message_from_dict(cls, r) for r in rows]
    return list(ser.serialize_batch(rows, ctx, errors=errors))
