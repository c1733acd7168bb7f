"""Column shapes: one Arrow type and one column builder per schema node.

A :class:`Shape` is built once per reader schema (by :mod:`serdes.arrow._avro`, ``_protobuf`` and
``_json``) and then turns the per-record Python values of a batch -- what the format's deserializer
returns for each record -- into one Arrow array (:meth:`Shape.build`), and Arrow values back into
the Python values the format's serializer takes (:meth:`Shape.to_python`).

Most subtrees are *plain*: ``pyarrow.array(values, type=...)`` converts their Python values exactly
(ints, floats, str, bytes, Decimal, date/time/datetime, nested dicts and lists of those), in C++.
The others need a rule of their own, and only they are walked in Python: enums (a dictionary of the
schema's symbols, in the schema's order, whatever values the batch holds), UUIDs (16 bytes), Avro
durations, dense unions, Protobuf's well-known Timestamp/Duration, and strict structs (JSON
objects, whose undeclared properties are an error rather than a silently dropped key).

A value the column type cannot hold raises :class:`ShapeError` naming the column path; the batch
decoders turn it into a per-row :class:`~serdes.ColumnValueError`.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Shape", "Plain", "Struct", "ListOf", "MapOf", "Enum", "Uuid", "AvroDuration", "Union", "Converted",
    "ShapeError",
]


class ShapeError(ValueError):
    """A value the column's Arrow type cannot hold; ``path`` names the column (``a.b[2]``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"column {path or '<value>'}: {reason}")


def _plain_array(values: Sequence[Any], typ: pa.DataType, path: str) -> pa.Array:
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise ShapeError(path, f"{type(e).__name__}: {e}") from None


class Shape:
    """One schema node: its Arrow ``type``, whether ``pyarrow.array`` converts it as is
    (``plain``), and the conversions both ways."""

    type: pa.DataType
    #: ``pyarrow.array(values, type)`` builds it from the Python values as they are
    plain = True
    #: ``to_pylist()`` gives the values the serializer takes (a map's are (key, value) pairs)
    plain_out = True

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        """The Arrow array of ``values`` (``None`` is null)."""
        return _plain_array(values, self.type, path)

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is of this node's Python type (how a union's branch is told apart)."""
        return True

    def to_python(self, arr: pa.Array) -> List[Any]:
        """The Python values of ``arr`` (of this node's type) that the format's serializer takes."""
        return list(arr.to_pylist())


class Plain(Shape):
    """A node ``pyarrow.array`` converts both ways; ``kinds`` are the Python types it holds."""

    def __init__(self, typ: pa.DataType, kinds: Tuple[type, ...] = (), check: Optional[Callable[[Any], bool]] = None
                 ) -> None:
        self.type = typ
        self._kinds = kinds
        self._check = check

    def accepts(self, value: Any) -> bool:
        if self._kinds and not isinstance(value, self._kinds):
            return False
        return self._check is None or self._check(value)


class Struct(Shape):
    """A record / message / object: fields in order, each ``(name, shape, nullable)``.

    ``strict``: a value's keys must be among the fields (JSON objects); Avro records and Protobuf
    messages decode to exactly their fields. ``wrapped``: see the attribute."""

    def __init__(self, fields: Sequence[Tuple[str, Shape, bool]], strict: bool = False, wrapped: bool = False,
                 omit_null: Sequence[str] = ()) -> None:
        self.fields = list(fields)
        self.strict = strict
        #: fields whose null :meth:`to_python` leaves out of the dict (a JSON object's optional
        #: properties: absent in the record, null in the column)
        self.omit_null = frozenset(omit_null)
        #: the columns of a schema that is not a record: its one column ``value`` holds the value
        self.wrapped = wrapped
        self.plain = not strict and all(s.plain for _, s, _ in self.fields)
        # never: a struct is converted column by column (pyarrow's StructArray.to_pylist builds
        # each row through a scalar's Mapping protocol, about 3x slower for a 10-field record)
        self.plain_out = False
        self.type = pa.struct([pa.field(n, s.type, nullable) for n, s, nullable in self.fields])
        self._names = frozenset(n for n, _, _ in self.fields)
        self._strict_plain = strict and all(s.plain for _, s, _ in self.fields)

    def accepts(self, value: Any) -> bool:
        # deep, as fastavro's writer validates a union branch: a dict is the record whose fields
        # all hold its values -- all of them present, as decoded records have them (a JSON
        # object's optional properties may be absent)
        if not isinstance(value, dict):
            return False
        keys = value.keys()
        if not (keys <= self._names if self.strict else keys == self._names):
            return False
        return all(
            (nullable if value.get(n) is None else shape.accepts(value[n])) for n, shape, nullable in self.fields)

    def children(self, values: Sequence[Any], path: str) -> List[pa.Array]:
        """The field arrays of ``values`` (dicts or ``None``)."""
        if self.strict:
            for v in values:
                if v is not None:
                    if not isinstance(v, dict):
                        raise ShapeError(path, f"expected an object, got {type(v).__name__}")
                    extra = set(v) - self._names
                    if extra:
                        raise ShapeError(path, f"properties not in the schema: {sorted(extra)[:5]}")
        arrays = []
        for name, shape, nullable in self.fields:
            sub = f"{path}.{name}" if path else name
            col = [None if v is None else v.get(name) for v in values]
            arr = shape.build(col, sub)
            if not nullable and arr.null_count:
                for v, c in zip(values, col, strict=True):
                    if v is not None and c is None:
                        raise ShapeError(sub, "null in a column that is not nullable")
            arrays.append(arr)
        return arrays

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        if self.plain:
            return _plain_array(values, self.type, path)
        if self._strict_plain and all(v is None or (v.__class__ is dict and self._names.issuperset(v))
                                      for v in values):
            # strict, but every key declared: pyarrow converts the dicts at once; a null in a
            # column that is not nullable sends the batch down the path below, which names it
            arr = _plain_array(values, self.type, path)
            if not any(_nulls_in_valid_rows(arr, i) for i, (_, _, nullable) in enumerate(self.fields)
                       if not nullable):
                return arr
        for v in values:
            if v is not None and not isinstance(v, dict):
                raise ShapeError(path, f"expected a record, got {type(v).__name__}")
        mask = pa.array([v is None for v in values], type=pa.bool_())
        return pa.StructArray.from_arrays(self.children(values, path), fields=list(self.type), mask=mask)

    def to_python(self, arr: pa.Array) -> List[Any]:
        cols = [shape.to_python(_field(arr, i)) for i, (_, shape, _) in enumerate(self.fields)]
        names = [n for n, _, _ in self.fields]
        valid = arr.is_valid().to_pylist()
        by_row = zip(*cols, strict=True) if cols else ((),) * len(valid)
        rows = [dict(zip(names, row, strict=True)) if ok else None for ok, row in zip(valid, by_row, strict=True)]
        omit = self.omit_null
        if omit:
            rows = [None if r is None else {k: v for k, v in r.items() if v is not None or k not in omit}
                    for r in rows]
        return rows


def _nulls_in_valid_rows(arr: pa.StructArray, i: int) -> bool:
    """Whether field ``i`` of ``arr`` is null in a row where the struct itself is not."""
    child = arr.field(i)
    if not child.null_count:
        return False
    return bool(pc.any(pc.and_(child.is_null(), arr.is_valid())).as_py())


class ListOf(Shape):
    def __init__(self, item: Shape, item_nullable: bool) -> None:
        self.item = item
        self._item_nullable = item_nullable
        self.plain = item.plain
        self.plain_out = item.plain_out
        self.type = pa.list_(pa.field("item", item.type, item_nullable))

    def accepts(self, value: Any) -> bool:
        return isinstance(value, list) and all(
            self._item_nullable if v is None else self.item.accepts(v) for v in value)

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        if self.plain:
            return _plain_array(values, self.type, path)
        offsets = [0]
        flat: List[Any] = []
        for v in values:
            if v is not None:
                if not isinstance(v, (list, tuple)):
                    raise ShapeError(path, f"expected a list, got {type(v).__name__}")
                flat.extend(v)
            offsets.append(len(flat))
        items = self.item.build(flat, path + "[]")
        mask = pa.array([v is None for v in values], type=pa.bool_())
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=self.type, mask=mask)

    def to_python(self, arr: pa.Array) -> List[Any]:
        if self.plain_out:
            return list(arr.to_pylist())
        return _regroup(self.item.to_python(arr.flatten()), _lengths(arr), list)


class MapOf(Shape):
    """A map with string keys (Avro maps, JSON objects of ``additionalProperties``, Protobuf maps of
    any scalar key: ``key`` gives the key's shape)."""

    def __init__(self, key: Shape, value: Shape, value_nullable: bool) -> None:
        self.key = key
        self.value = value
        self._value_nullable = value_nullable
        self.plain = key.plain and value.plain
        self.plain_out = False  # Arrow gives a map as (key, value) pairs
        self.type = pa.map_(pa.field("key", key.type, False), pa.field("value", value.type, value_nullable))

    def accepts(self, value: Any) -> bool:
        return isinstance(value, dict) and all(
            self.key.accepts(k) and (self._value_nullable if v is None else self.value.accepts(v))
            for k, v in value.items())

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        for v in values:
            if v is not None and not isinstance(v, dict):
                raise ShapeError(path, f"expected a map, got {type(v).__name__}")
        if self.plain:
            return _plain_array(values, self.type, path)
        # a null map: a null start offset (MapArray.from_arrays takes no mask in pyarrow 16)
        offsets: List[Optional[int]] = [0]
        keys: List[Any] = []
        items: List[Any] = []
        for i, v in enumerate(values):
            if v is None:
                offsets[i] = None
            else:
                keys.extend(v.keys())
                items.extend(v.values())
            offsets.append(len(keys))
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), self.key.build(keys, path + ".key"),
                                       self.value.build(items, path + ".value"), type=self.type)

    def to_python(self, arr: pa.Array) -> List[Any]:
        # the entries of this (possibly sliced) array's maps: offsets are positions in the children
        offsets = arr.offsets
        start = offsets[0].as_py()
        n = offsets[len(offsets) - 1].as_py() - start
        keys, items = arr.keys.slice(start, n), arr.items.slice(start, n)
        pairs = list(zip(self.key.to_python(keys), self.value.to_python(items), strict=True))
        # a null map's entries (a producer may leave some behind one) are skipped, as
        # ListArray.flatten() skips a null list's items
        offsets_list = offsets.to_pylist()
        out: List[Any] = []
        for ok, a, b in zip(arr.is_valid().to_pylist(), offsets_list, offsets_list[1:], strict=False):
            out.append(dict(pairs[a - start:b - start]) if ok else None)
        return out


class Enum(Shape):
    """An enum: ``dictionary<int32, utf8>`` whose dictionary is the schema's symbols in order."""

    plain = plain_out = False

    def __init__(self, symbols: Sequence[str]) -> None:
        self.symbols = list(symbols)
        self._index = {s: i for i, s in enumerate(self.symbols)}
        self.type = pa.dictionary(pa.int32(), pa.utf8())

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self._index

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        index = self._index
        codes: List[Optional[int]] = []
        for v in values:
            if v is None:
                codes.append(None)
                continue
            code = index.get(v) if isinstance(v, str) else None
            if code is None:
                raise ShapeError(path, f"{v!r} is not a symbol of the enum")
            codes.append(code)
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(self.symbols, pa.utf8()))


class Uuid(Shape):
    """A UUID (``uuid.UUID`` values): ``fixed_size_binary(16)``, the UUID's 16 bytes."""

    plain = plain_out = False
    type = pa.binary(16)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, uuid.UUID)

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        out: List[Optional[bytes]] = []
        for v in values:
            if v is None or isinstance(v, uuid.UUID):
                out.append(None if v is None else v.bytes)
            else:
                raise ShapeError(path, f"expected a UUID, got {type(v).__name__}")
        return pa.array(out, self.type)

    def to_python(self, arr: pa.Array) -> List[Any]:
        return [None if v is None else uuid.UUID(bytes=v) for v in arr.to_pylist()]


class AvroDuration(Shape):
    """Avro's ``duration`` (12 bytes: months, days, milliseconds, little-endian u32 each):
    ``month_day_nano_interval``."""

    plain = plain_out = False
    type = pa.month_day_nano_interval()

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bytes) and len(value) == 12

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        out: List[Any] = []
        for v in values:
            if v is None:
                out.append(None)
            elif isinstance(v, bytes) and len(v) == 12:
                out.append((int.from_bytes(v[0:4], "little"), int.from_bytes(v[4:8], "little"),
                            int.from_bytes(v[8:12], "little") * 1_000_000))
            else:
                raise ShapeError(path, f"expected a 12-byte duration, got {type(v).__name__}")
        return pa.array(out, self.type)

    def to_python(self, arr: pa.Array) -> List[Any]:
        out: List[Any] = []
        for v in arr.to_pylist():
            if v is None:
                out.append(None)
            else:
                months, days, nanos = v.months, v.days, v.nanoseconds
                out.append(months.to_bytes(4, "little") + days.to_bytes(4, "little")
                           + (nanos // 1_000_000).to_bytes(4, "little"))
        return out


class Union(Shape):
    """A union of several non-null branches: a dense union whose type codes are the branch indexes
    and whose child names are ``names``. A value's branch is the one fastavro's writer chooses
    (:meth:`branch_of`: the first that :meth:`Shape.accepts` it, but for records and floats);
    ``None`` is the null branch."""

    plain = plain_out = False

    def __init__(self, branches: Sequence[Tuple[str, Optional[Shape]]]) -> None:
        # (name, shape); shape None is the null branch
        self.branches = list(branches)
        self.type = pa.dense_union(
            [pa.field(n, s.type if s is not None else pa.null()) for n, s in self.branches],
            list(range(len(self.branches))),
        )
        self._null = next((i for i, (_, s) in enumerate(self.branches) if s is None), None)

    def accepts(self, value: Any) -> bool:
        return value is None and self._null is not None or any(
            s is not None and s.accepts(value) for _, s in self.branches)

    def branch_of(self, value: Any, path: str) -> int:
        if value is None:
            # Without a null branch a None is the slot of a null parent (a tombstone, a null
            # record): a null in the first branch's child. (The parent struct refuses a None of a
            # record that is there: the union column is not nullable.)
            return self._null if self._null is not None else 0
        # fastavro's write_union, which chose the branch the value was written in: the first
        # branch that holds it, except that a record is only the best so far (the one with most
        # fields, kept unless a later branch of another kind holds the value) and a float gives
        # way to a later double
        best, most, could_be_float = None, -1, False
        for i, (_, s) in enumerate(self.branches):
            if s is None:
                continue
            if could_be_float:
                if s.type == pa.float64():
                    return i
                continue
            if not s.accepts(value):
                continue
            if isinstance(s, Struct):
                fields = len(s._names.intersection(value))
                if fields > most:
                    best, most = i, fields
            elif s.type == pa.float32():
                best, could_be_float = i, True
            else:
                return i
        if best is not None:
            return best
        raise ShapeError(path, f"a {type(value).__name__} matches no branch of the union")

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        per_branch: List[List[Any]] = [[] for _ in self.branches]
        type_ids: List[int] = []
        offsets: List[int] = []
        for v in values:
            b = self.branch_of(v, path)
            type_ids.append(b)
            offsets.append(len(per_branch[b]))
            per_branch[b].append(v)
        children = [
            s.build(vals, f"{path}<{name}>") if s is not None else pa.nulls(len(vals))
            for (name, s), vals in zip(self.branches, per_branch, strict=True)
        ]
        return pa.UnionArray.from_dense(
            pa.array(type_ids, pa.int8()), pa.array(offsets, pa.int32()), children,
            [n for n, _ in self.branches], list(range(len(self.branches))),
        )

    def to_python(self, arr: pa.Array) -> List[Any]:
        children = [s.to_python(arr.field(i)) if s is not None else None for i, (_, s) in enumerate(self.branches)]
        # the type codes and offsets from the buffers, at the array's offset (pyarrow 16's
        # type_codes and offsets ignore a slice's offset)
        _, codes_buf, offsets_buf = arr.buffers()[:3]
        codes = pa.Array.from_buffers(pa.int8(), len(arr), [None, codes_buf], offset=arr.offset).to_pylist()
        offsets = pa.Array.from_buffers(pa.int32(), len(arr), [None, offsets_buf], offset=arr.offset).to_pylist()
        return [None if children[b] is None else children[b][o]  # type: ignore[index,unused-ignore]
                for b, o in zip(codes, offsets, strict=True)]


class Converted(Shape):
    """A node whose Python values are converted to and from the Arrow type's values by two
    functions (Protobuf's Timestamp and Duration: dicts of seconds and nanos <-> int nanoseconds)."""

    plain = plain_out = False

    def __init__(self, typ: pa.DataType, to_arrow: Callable[[Any], Any], from_arrow: Callable[[Any], Any],
                 kinds: Tuple[type, ...] = (dict,), storage: Optional[pa.DataType] = None) -> None:
        self.type = typ
        self._storage = storage
        self._to = to_arrow
        self._from = from_arrow
        self._kinds = kinds

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self._kinds)

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        try:
            out = [None if v is None else self._to(v) for v in values]
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise ShapeError(path, f"{type(e).__name__}: {e}") from None
        return _plain_array(out, self.type, path)

    def to_python(self, arr: pa.Array) -> List[Any]:
        # the storage values (an int for a timestamp or duration), never Arrow's own Python objects
        storage = arr.cast(self._storage) if self._storage is not None else arr
        return [None if v is None else self._from(v) for v in storage.to_pylist()]


def _field(arr: pa.Array, i: int) -> pa.Array:
    """Child ``i`` of a struct array, sliced like the array. (Not ``flatten()``: it merges the
    parent's nulls into each child, which pyarrow cannot do for a union child -- it aborts.)"""
    return arr.field(i)


def _regroup(flat: List[Any], lengths: List[Optional[int]], make: Callable[[Any], Any]) -> List[Any]:
    """Consecutive runs of ``flat`` of the given lengths, each made into a list or dict (``None``
    where the length is null: a null list or map)."""
    out: List[Any] = []
    i = 0
    for n in lengths:
        if n is None:
            out.append(None)
        else:
            out.append(make(flat[i:i + n]))
            i += n
    return out


def _lengths(arr: Any) -> List[Optional[int]]:
    """The length of each list or map of ``arr`` (``None`` where it is null), from its offsets
    (``value_lengths`` has no kernel for maps)."""
    offsets = arr.offsets.to_pylist()
    valid = arr.is_valid().to_pylist()
    return [b - a if ok else None for ok, a, b in zip(valid, offsets, offsets[1:], strict=False)]
