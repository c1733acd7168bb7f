"""The native columnar Avro encoder (``rust/src/arrow_encode/``): the rows of Arrow data written
as framed Avro values in one call, with the GIL released -- for ``serialize_arrow`` of an
``AvroSerializer``.

It is a shortcut with the per-record path as its reference: a call it takes gives, row for row,
the bytes ``serializer(row, ctx)`` writes for the Python value the per-record path makes of that
row (:meth:`serdes.arrow._shapes.Shape.to_python`), and any call it does not take goes to the
per-record path, which gives the bytes or each bad row's typed error. So a call never fails here
that would not fail there, and never succeeds here with another result.

The schema reaches the extension as a program (:func:`lower`), one per serializer: the
serializer's own schema walked beside its Arrow columns (:func:`serdes.arrow._avro.avro_shape`),
every decision taken here through the functions the per-record encoders take it with
(:mod:`serdes.avro._encgen`: named references, ``["null", T]`` branch bytes, enum indexes, fixed
sizes, which logical types fastavro converts). A node is lowered only where the Arrow type fixes
the per-record bytes: records, primitives, ``["null", T]``, arrays, maps, enums, fixed, and the
logical types whose fastavro prepare function is fastavro's own and gives bytes the Arrow value
fixes (date, time-millis/micros, timestamp-millis/micros and their local forms, decimal on bytes
or a fixed of 1-16 bytes, uuid) plus Avro ``duration`` (``month_day_nano_interval``). A general
union, a schema written raw (``"bytes"``) or anything else makes :func:`lower` decline the schema:
its calls take the per-record path. Within a schema it takes, the extension refuses a call at the
first row whose bytes the Arrow value does not fix (rust/src/arrow_encode/write.rs: a null where
the schema has none, an enum value that is not a symbol, a decimal beyond its precision, a map
with a key twice, a date or time Python's ``datetime`` does not hold, ...): the per-record path
then encodes the whole call.

The frame prefix is the serializer's own, for the (topic, field): the call takes it from the
serializer's per-record encoder of that (topic, field) -- established, when it is not yet, by
encoding the call's first value on the per-record path, so registration, subject naming and the
registry's answers are exactly the per-record path's. Only an encoder of serdes' native Avro
encoder built from the serializer's own schema is taken (prefix framing, no data-contract rules,
no ``use.latest.version`` / ``use.schema.id``): anything else -- header or custom framing,
rules, no ``ctx``, pure Python -- goes to the per-record path.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka.serialization import SerializationContext
from fastavro.write import LOGICAL_WRITERS

from .. import _native
from .._confluent import own_parsed_schema
from .._serde import _collect
from ..avro._encgen import enum_indexes, fixed_size, is_reference, logical_writer, named_definition, null_branch
from ..avro._generator import Unsupported, is_raw_bytes, named_types, type_of
from ..avro._native_encoder import is_native_encoder
from ._shapes import AvroDuration, Enum, ListOf, MapOf, Shape, Struct, Uuid

__all__ = ["NativeAvroRows", "lower", "native_rows"]

#: the native encoder for ``serialize_arrow`` when the extension is built; off: every call takes
#: the per-record path (the tests compare the two)
NATIVE_ROWS = True

#: fastavro's logical writers whose result the Arrow value fixes: writer key -> (fastavro's
#: function name, the program's node kind, the column's Arrow type)
_LOGICAL: Dict[str, Tuple[str, str, Optional[pa.DataType]]] = {
    "int-date": ("prepare_date", "date", pa.date32()),
    "int-time-millis": ("prepare_time_millis", "time-millis", pa.time32("ms")),
    "long-time-micros": ("prepare_time_micros", "time-micros", pa.time64("us")),
    "long-timestamp-millis": ("prepare_timestamp_millis", "timestamp-millis", pa.timestamp("ms", "+00:00")),
    "long-timestamp-micros": ("prepare_timestamp_micros", "timestamp-micros", pa.timestamp("us", "+00:00")),
    "long-local-timestamp-millis": ("prepare_local_timestamp_millis", "local-timestamp-millis", pa.timestamp("ms")),
    "long-local-timestamp-micros": ("prepare_local_timestamp_micros", "local-timestamp-micros", pa.timestamp("us")),
    "string-uuid": ("prepare_uuid", "uuid", pa.binary(16)),
    "bytes-decimal": ("prepare_bytes_decimal", "decimal", None),  # decimal128(p, s): checked below
    "fixed-decimal": ("prepare_fixed_decimal", "decimal", None),
}

#: an Avro primitive and the Arrow type of its column
_PRIMITIVES = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "string": pa.utf8(), "bytes": pa.binary(),
}


def _fastavros_own(key: str) -> bool:
    """Whether fastavro's logical writer ``key`` is fastavro's own function (one registered in its
    place converts values as it likes: the per-record path calls it)."""
    fn = LOGICAL_WRITERS.get(key)
    return (getattr(fn, "__name__", None) == _LOGICAL[key][0]
            and str(getattr(fn, "__module__", "")).startswith("fastavro."))


class _Lowering:
    """One schema's program: ``nodes``, children before their parents (rust/src/arrow_encode/program.rs)."""

    def __init__(self, parsed: Any) -> None:
        self.named: Dict[str, Any] = {}
        named_types(parsed, self.named, {})
        self.nodes: List[Tuple[Any, ...]] = []

    def add(self, node: Tuple[Any, ...]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def lower(self, s: Any, shape: Shape) -> int:
        """The node of schema node ``s`` whose column is ``shape``'s (``avro_shape`` of ``s``)."""
        t = type_of(s)
        if isinstance(s, list):
            null_idx = null_branch(s)
            if null_idx is None:
                # a general union: the per-record rule is the first branch that holds the value
                raise Unsupported("a union other than [null, T]")
            other = self.lower(s[1 - null_idx], shape)
            return self.add(("nullable", null_idx * 2, (1 - null_idx) * 2, other))
        if not isinstance(t, str):
            raise Unsupported("a nested type")
        if is_reference(t):
            return self.lower(named_definition(t, self.named), shape)
        if isinstance(s, str):
            return self.primitive(t, shape)
        found = logical_writer(s)
        if found is not None:
            return self.logical(s, found[0], shape)
        if isinstance(shape, AvroDuration):
            return self.add(("duration",))
        if t in _PRIMITIVES:
            return self.primitive(t, shape)
        if t in ("record", "error"):
            if not isinstance(shape, Struct) or len(shape.fields) != len(s["fields"]):
                raise Unsupported("a record whose columns are not its fields")
            fields = [self.lower(f["type"], fshape)
                      for f, (name, fshape, _) in zip(s["fields"], shape.fields, strict=True) if f["name"] == name]
            if len(fields) != len(shape.fields):
                raise Unsupported("a record whose columns are not its fields")
            return self.add(("record", fields))
        if t == "enum" and isinstance(shape, Enum):
            return self.add(("enum", list(enum_indexes(s["symbols"]).items())))
        if t == "fixed" and shape.type == pa.binary(fixed_size(s)):
            return self.add(("fixed", fixed_size(s)))
        if t == "array" and isinstance(shape, ListOf):
            return self.add(("array", self.lower(s["items"], shape.item)))
        if t == "map" and isinstance(shape, MapOf):
            return self.add(("map", self.lower(s["values"], shape.value)))
        raise Unsupported(f"a {t} as {shape.type}")

    def primitive(self, t: str, shape: Shape) -> int:
        if _PRIMITIVES.get(t) != shape.type:
            raise Unsupported(f"a {t} as {shape.type}")
        return self.add((t,))

    def logical(self, s: Any, key: str, shape: Shape) -> int:
        if key not in _LOGICAL or not _fastavros_own(key):
            raise Unsupported(f"the logical type {key}")
        _, kind, arrow_type = _LOGICAL[key]
        if kind == "decimal":
            precision, scale = s.get("precision"), s.get("scale", 0)
            size = fixed_size(s) if key == "fixed-decimal" else None
            if (not pa.types.is_decimal128(shape.type) or shape.type.precision != precision
                    or shape.type.scale != scale or size is not None and not 1 <= size <= 16):
                raise Unsupported(f"a decimal as {shape.type}")
            return self.add(("decimal", precision, scale, size))
        if (kind == "uuid" and not isinstance(shape, Uuid)) or shape.type != arrow_type:
            raise Unsupported(f"{key} as {shape.type}")
        return self.add((kind,))


def lower(parsed: Any, shape: Struct) -> Tuple[List[Tuple[Any, ...]], int, bool]:
    """The program of a serializer's parsed schema whose columns are ``shape``
    (:func:`serdes.arrow._avro.avro_shape`): ``(nodes, root, wrapped)``. Raises
    :class:`~serdes.avro._generator.Unsupported` for a schema the native encoder leaves to the
    per-record path."""
    if is_raw_bytes(parsed):
        raise Unsupported("a bytes schema (written raw)")
    low = _Lowering(parsed)
    if shape.wrapped:
        return low.nodes, low.lower(parsed, shape.fields[0][1]), True
    return low.nodes, low.lower(parsed, shape), False


class NativeAvroRows:
    """The native encoder of one serializer's schema (``encoder``: the extension's
    ``AvroArrowEncoder``), with what it did for the tests and measurements."""

    def __init__(self, encoder: Any) -> None:
        self._enc = encoder
        #: calls written here, and calls handed to the per-record path
        self.taken = 0
        self.declined = 0
        #: (row or None, reason) of the last call this encoder refused
        self.refused: Optional[Tuple[Optional[int], str]] = None

    def encode(self, ser: Any, table: pa.Table, ctx: Optional[SerializationContext],
               first_value: Callable[[], Any]) -> Optional[List[Any]]:
        """One frame per row of ``table`` (columns of the serializer's shape), or ``None``: the
        per-record path encodes the call. ``first_value()``: the Python value of the first row
        that has one (``None`` when none has), which establishes the (topic, field)'s encoder."""
        found = self._frames(ser, table, ctx, first_value)
        if found is None:
            self.declined += 1
        else:
            self.taken += 1
        return found

    def _frames(self, ser: Any, table: pa.Table, ctx: Optional[SerializationContext],
                first_value: Callable[[], Any]) -> Optional[List[Any]]:
        if ctx is None or not ser._writes_own_schema():
            # no context: confluent-kafka's own call; use.latest.version / use.schema.id: the
            # registry's schema, not the columns' (the per-record path writes with it)
            self.refused = (None, "no ctx, or a registry schema chosen per subject")
            return None
        key = (ctx.topic, ctx.field)
        enc = ser._encoders.get(key)
        if enc is None:
            try:
                value = first_value()
            except Exception:  # noqa: BLE001 - a row pyarrow cannot convert: the per-record path's error
                self.refused = (None, "the first value does not convert")
                return None
            if value is None:
                return None  # every row is None: the per-record path has nothing to ask either
            try:
                ser(value, ctx)  # the per-record path resolves the (topic, field)
            except Exception:  # noqa: BLE001 - the per-record path raises it again, typed, per row
                self.refused = (None, "the first value does not encode on the per-record path")
                return None
            enc = ser._encoders.get(key)
        if not is_native_encoder(enc):
            # header or custom framing, data-contract rules, a schema the native per-record
            # encoder leaves to the pure one, pure Python
            self.refused = (None, "the (topic, field) is not written by the native Avro encoder")
            return None
        batches = [b.__arrow_c_array__() for b in table.to_batches() if b.num_rows]
        values, row, why = self._enc.encode(enc.prefix, batches)
        if values is None:
            self.refused = (row, why)
            return None
        return values  # type: ignore[no-any-return]


def native_rows(ser: Any, shape: Struct) -> Optional[NativeAvroRows]:
    """The native encoder of ``ser``'s own schema (``shape``: its columns), built once per
    serializer, or ``None`` when the extension is not built or the schema is not one it takes."""
    mod = _native.native
    if not NATIVE_ROWS or mod is None or not hasattr(mod, "AvroArrowEncoder") or ser._schema_type != "AVRO":
        return None
    cache = ser.__dict__
    if "_arrow_native_rows" not in cache:
        found: Optional[NativeAvroRows] = None
        try:
            nodes, root, wrapped = lower(own_parsed_schema(ser), shape)
            found = NativeAvroRows(mod.AvroArrowEncoder(nodes, root, wrapped))
        # Unsupported: a schema the native encoder leaves to the per-record path; KeyError /
        # TypeError / ValueError: a schema shape the lowering does not expect (the per-record
        # path is still right for it); RecursionError: deeper than this thread's stack lets the
        # lowering go
        except (Unsupported, KeyError, TypeError, ValueError, RecursionError):
            found = None
        cache["_arrow_native_rows"] = found
    return cache["_arrow_native_rows"]  # type: ignore[no-any-return]


def first_valid(column: Any) -> int:
    """The index of the first non-null value of ``column`` (-1: none)."""
    return int(pc.index(column.is_valid(), True).as_py())


def check_errors(errors: str) -> None:
    """``errors`` is one of serialize_batch's modes (its ValueError otherwise)."""
    _collect(errors)
