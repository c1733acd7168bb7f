"""The native columnar Avro decoder (``rust/src/columnar/``: serdes' loop for flat records read as
written, the crate ``arrow-avro`` for every other schema): whole lists of Confluent-framed Avro
records into the reader schema's Arrow columns in one call, with the GIL released.

It is a shortcut with the per-record path as its reference: a list it takes decodes to the same
batch (the tests compare them), and anything it does not take -- a frame that does not decode,
a tombstone among union columns, another framing, a writer schema outside what this path holds to serdes' limits, a
column type that differs -- is decoded again by the per-record path, which gives each bad record
its own typed error. So a call never fails here that would not fail there, and never succeeds
here with another result.

What keeps a writer schema on this path (``_writer_refusal``): no array of items that can take no
bytes (``array<null>``: their count is bounded only by ``max_items``, which the crate does not
count), no array or map in a field the reader drops (the crate skips such blocks by their byte
size, serdes reads their items), no decimal in a writer that needs resolving (the crate keeps the
unscaled value whatever the writer's scale), and a nesting depth within ``max_depth``. Decimal
columns are checked against their precision after the decode (the crate does not check it). A frame longer than ``max_items`` bytes goes
to the per-record path too: below that, items (each at least a byte) cannot exceed ``max_items``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import pyarrow as pa

from .. import _native
from .._cache import bounded_store
from .._limits import Limits
from ._avro import named_types, self_contained

__all__ = ["NativeAvroColumns", "native_columns"]

_log = logging.getLogger("serdes.arrow")


def _walk_types(parsed: Any) -> List[Any]:
    """Every schema node of ``parsed`` once (named types at their definition)."""
    named = named_types(parsed)
    seen: Set[str] = set()
    out: List[Any] = []
    stack = [parsed]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
            continue
        if isinstance(s, str):
            if s in named and s not in seen:
                seen.add(s)
                stack.append(named[s])
            continue
        if not isinstance(s, dict):
            continue
        out.append(s)
        t = s.get("type")
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t in named):
            stack.append(t)
        name = s.get("name")
        if t in ("record", "error", "enum", "fixed") and isinstance(name, str):
            seen.add(name)
        if t in ("record", "error"):
            stack.extend(f.get("type") for f in s.get("fields", ()))
        elif t == "array":
            stack.append(s.get("items"))
        elif t == "map":
            stack.append(s.get("values"))
    return out


def _resolve(s: Any, named: Dict[str, Any]) -> Any:
    while isinstance(s, str) and s in named:
        s = named[s]
    while isinstance(s, dict) and isinstance(s.get("type"), (dict, list)):
        s = s["type"]
    if isinstance(s, dict) and isinstance(s.get("type"), str) and s["type"] in named:
        return _resolve(s["type"], named)
    return s


def _zero_size(s: Any, named: Dict[str, Any], path: Tuple[Any, ...] = ()) -> bool:
    """Whether a value of ``s`` can be encoded in no bytes."""
    s = _resolve(s, named)
    if s == "null":
        return True
    if not isinstance(s, dict):
        return False
    t = s.get("type")
    if t == "null":
        return True
    if t == "fixed":
        return s.get("size") == 0
    if t in ("record", "error"):
        name = s.get("name")
        if name in path:
            return False
        return all(_zero_size(f.get("type"), named, path + (name,)) for f in s.get("fields", ()))
    return False


def _has_blocks(s: Any, named: Dict[str, Any]) -> bool:
    """Whether a value of ``s`` can hold an array or a map."""
    return any(n.get("type") in ("array", "map") for n in _walk_types({"type": s, "__named_schemas": named}))


def _depth(parsed: Any, named: Dict[str, Any]) -> int:
    """The deepest nesting of records, arrays, maps and unions a value of ``parsed`` can have."""

    def go(s: Any, path: Tuple[Any, ...]) -> int:
        if isinstance(s, list):
            return 1 + max((go(b, path) for b in s), default=0)
        if isinstance(s, str):
            if s in named and s not in path:
                return go(named[s], path + (s,))
            return 0
        if not isinstance(s, dict):
            return 0
        t = s.get("type")
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t in named):
            return go(t, path)
        if t in ("record", "error"):
            name = s.get("name")
            inner = path + (name,)
            return 1 + max((go(f.get("type"), inner) for f in s.get("fields", ())), default=0)
        if t == "array":
            return 1 + go(s.get("items"), path)
        if t == "map":
            return 1 + go(s.get("values"), path)
        return 0

    return go(parsed, ())


def _records(parsed: Any) -> Dict[str, Any]:
    """The records of a schema by every name they answer to (full name, short name, aliases)."""
    out: Dict[str, Any] = {}
    for node in _walk_types(parsed):
        if node.get("type") in ("record", "error"):
            name = str(node.get("name"))
            ns = node.get("namespace")
            for n in [name, name.rsplit(".", 1)[-1], *(node.get("aliases") or ())]:
                out.setdefault(str(n), node)
                out.setdefault(str(n).rsplit(".", 1)[-1], node)
            if ns:
                out.setdefault(f"{ns}.{name}", node)
    return out


def _union_names_a_type(parsed: Any) -> bool:
    """Whether a union of several non-null branches has a branch that names a type defined
    elsewhere: arrow-avro 60 resolves such a branch to a reader schema wrongly (it reads none of the
    branch's bytes), so a writer that needs resolving keeps such schemas on the per-record path."""
    named = named_types(parsed)
    for node in _walk_types(parsed):
        for child in _children(node):
            if isinstance(child, list) and sum(b != "null" for b in child) > 1 and any(
                    isinstance(b, str) and b in named for b in child):
                return True
    return isinstance(parsed, list) and sum(b != "null" for b in parsed) > 1


def _one_branch_union(parsed: Any) -> bool:
    unions = [c for n in _walk_types(parsed) for c in _children(n) if isinstance(c, list)]
    if isinstance(parsed, list):
        unions.append(parsed)
    return any(len(u) == 1 and u[0] != "null" for u in unions)


def _children(node: Dict[str, Any]) -> List[Any]:
    t = node.get("type")
    if t in ("record", "error"):
        return [f.get("type") for f in node.get("fields", ())]
    if t == "array":
        return [node.get("items")]
    if t == "map":
        return [node.get("values")]
    return [t]


def _writer_refusal(writer: Any, reader: Any, resolves: bool, limits: Limits) -> Optional[str]:
    """Why frames of ``writer`` read as ``reader`` stay on the per-record path, or ``None``
    (``resolves``: the two schemas differ, so the writer is resolved to the reader)."""
    wnamed, rnamed = named_types(writer), named_types(reader)
    if _one_branch_union(reader):
        return "the reader schema has a union of one branch (arrow-avro keeps it a union, serdes its branch)"
    if resolves and (_union_names_a_type(writer) or _union_names_a_type(reader)):
        return "a union names a type defined elsewhere, and the writer needs resolving to the reader"
    for role, parsed, named in (("writer", writer, wnamed), ("reader", reader, rnamed)):
        for node in _walk_types(parsed):
            if node.get("logicalType") == "decimal" and resolves:
                return f"the {role} schema has a decimal, and the writer needs resolving to the reader"
            if node.get("type") == "array" and _zero_size(node.get("items"), named):
                return f"the {role} schema has an array of items that take no bytes"
            # arrow-avro 60.1 builds invalid columns for these (a non-nullable null child; a
            # struct without children and a fixed of size 0, whose length it loses)
            if any(_resolve(c, named) == "null" or isinstance(c, dict) and c.get("type") == "null"
                   for c in _children(node)):
                return f"the {role} schema has a value of type null outside a union"
            if node.get("type") in ("record", "error") and not node.get("fields"):
                return f"the {role} schema has a record without fields"
            if node.get("type") == "fixed" and node.get("size") == 0:
                return f"the {role} schema has a fixed of size 0"
        depth = _depth(parsed, named)
        if depth > limits.max_depth:
            return f"the {role} schema nests {depth} levels (max_depth {limits.max_depth})"
    readers = _records(reader)
    for node in _walk_types(writer):
        if node.get("type") not in ("record", "error"):
            continue
        name = str(node.get("name"))
        rec = readers.get(name) or readers.get(name.rsplit(".", 1)[-1])
        kept: Set[str] = set()
        if rec is not None:
            for f in rec.get("fields", ()):
                kept.add(str(f.get("name")))
                kept.update(str(a) for a in f.get("aliases") or ())
        for f in node.get("fields", ()):
            if str(f.get("name")) not in kept and _has_blocks(f.get("type"), wnamed):
                return f"the reader drops field {f.get('name')!r} of {name}, which holds an array or a map"
    return None


def _nullable_everywhere(t: pa.DataType) -> pa.DataType:
    """``t`` with every field nullable: two types equal this way hold the same values."""

    def field(f: pa.Field) -> pa.Field:
        return pa.field(f.name, _nullable_everywhere(f.type), True)

    if pa.types.is_struct(t):
        return pa.struct([field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_union(t):
        fields = [field(t.field(i)) for i in range(t.num_fields)]
        return pa.dense_union(fields, t.type_codes) if t.mode == "dense" else pa.sparse_union(fields, t.type_codes)
    if pa.types.is_map(t):
        return pa.map_(pa.field(t.key_field.name, _nullable_everywhere(t.key_type), False), field(t.item_field))
    if pa.types.is_list(t):
        return pa.list_(field(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(field(t.value_field))
    return t


def _has_union(t: pa.DataType) -> bool:
    if pa.types.is_union(t):
        return True
    if pa.types.is_map(t):
        return _has_union(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_union(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_union(t.field(i).type) for i in range(t.num_fields))
    return False


#: the flat-record loop (rust/src/columnar/flat.rs) for flat schemas read as written; off: every
#: schema goes to arrow-avro (the tests compare the two)
FLAT_RECORDS = True

_FLAT_KINDS = ("boolean", "int", "long", "float", "double", "string", "bytes")


def _flat_kind(s: Any) -> Optional[str]:
    """The primitive of a field type the flat loop reads as arrow-avro types it, or ``None``: a
    plain primitive, or one given as ``{"type": ...}`` without a logical type."""
    if isinstance(s, str):
        return s if s in _FLAT_KINDS else None
    if isinstance(s, dict) and "logicalType" not in s and isinstance(s.get("type"), str):
        return s["type"] if s["type"] in _FLAT_KINDS else None
    return None


def _flat_plan(writer: Any) -> Optional[List[Tuple[str, str, Optional[int]]]]:
    """``[(field, kind, null index or None), ...]`` when ``writer`` (read as written) is a record of
    primitive fields (or unions of ``null`` and one primitive); else ``None``."""
    if not isinstance(writer, dict) or writer.get("type") not in ("record", "error") or not writer.get("fields"):
        return None
    plan: List[Tuple[str, str, Optional[int]]] = []
    for f in writer["fields"]:
        t = f.get("type")
        kind = _flat_kind(t)
        null_index: Optional[int] = None
        if kind is None and isinstance(t, list) and len(t) == 2 and "null" in t:
            null_index = t.index("null")
            kind = _flat_kind(t[1 - null_index])
        if kind is None:
            return None
        plan.append((str(f.get("name")), kind, null_index))
    return plan


class NativeAvroColumns:
    """The native decoder of one reader schema for one deserializer: writer schemas added as
    frames name them (at most ``cache_size``), each at most once."""

    def __init__(self, mod: Any, reader: Any, reader_json: str, target: pa.DataType, limits: Limits,
                 cache_size: int) -> None:
        self._reader = reader
        self._reader_json = reader_json  # self_contained(reader): what the extension is given
        self._target = target  # the reader shape's struct type: what the per-record path builds
        self._limits = limits
        self._cache_size = cache_size
        self._dec = mod.AvroArrowDecoder(reader_json, limits.max_items)
        self._decimals = any(n.get("logicalType") == "decimal" for n in _walk_types(reader))
        self._has_union = _has_union(target)
        self._writers: Dict[int, Optional[str]] = {}  # id -> None (added) or why it is refused
        self._off: Optional[str] = None  # set when the crate's columns differ from the reference
        #: calls decoded here, and calls handed to the per-record path (tests and measurements)
        self.taken = 0
        self.declined = 0
        #: (frame index or None, reason) of the last call the native decoder refused
        self.refused: Optional[Tuple[Optional[int], str]] = None

    def decode(self, payloads: List[Any], writer_of: Callable[[int], Any], threads: int = 1
               ) -> Optional[pa.StructArray]:
        """The struct array of ``payloads`` (all decoded), or ``None``: the per-record path decodes
        them. ``writer_of(id)``: the parsed writer schema of a schema id (may raise: then this path
        declines and the per-record path reports the failure, record by record). ``threads``: how
        many threads a large list may be decoded on (each takes at least 4,096 frames)."""
        found = self._columns(payloads, writer_of, threads)
        if found is None:
            self.declined += 1
        else:
            self.taken += 1
        return found

    def _columns(self, payloads: List[Any], writer_of: Callable[[int], Any], threads: int
                 ) -> Optional[pa.StructArray]:
        if self._off is not None:
            return None
        found = self._dec.decode(payloads, threads)
        if found is None and any(p is None for p in payloads):
            # tombstones: rows of nulls among the decoded rows (a union column's null slot is the
            # per-record path's own rule: such readers leave tombstones to it)
            if self._has_union:
                return None
            present = [p for p in payloads if p is not None]
            rows = self._columns(present, writer_of, threads) if present else None
            if rows is None:
                return None
            positions: List[Optional[int]] = []
            at = 0
            for p in payloads:
                if p is None:
                    positions.append(None)
                else:
                    positions.append(at)
                    at += 1
            return rows.take(pa.array(positions, pa.int64()))
        if found is None:
            return None  # a value that is not bytes (another framing is refused by its index)
        cols, index, why, missing = found
        if missing:
            for sid in missing:  # every id not added yet: new ones, and refused ones again
                if not self._add(sid, writer_of):
                    return None
            # (an id can be missing again only when adding the others evicted it: then refused)
            again = self._dec.decode(payloads, threads)
            if again is None:  # pragma: no cover - the same frames were taken a moment ago
                return None
            cols, index, why, missing = again
        if not cols:
            self.refused = (index, why)
            return None
        arrays = [pa.record_batch(c).to_struct_array() for c in cols]
        array = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
        if self._decimals:
            try:
                # the crate does not check a decimal against its precision; the per-record path's
                # column building does (a ColumnValueError for that record)
                array.validate(full=True)
            except pa.ArrowInvalid as e:
                self.refused = (None, str(e))
                return None
        got = array.type
        if got.equals(self._target):
            return array
        if _nullable_everywhere(got).equals(_nullable_everywhere(self._target)):
            # the same columns, flagged otherwise (arrow-avro's union children are not nullable;
            # pyarrow refuses a non-nullable null-typed child): the reference's flags, no copy
            return array.view(self._target)
        self._off = f"arrow-avro's columns {got} differ from {self._target}"
        _log.warning("serdes.arrow: the native Avro columns differ from the per-record path's, which "
                     "decodes this reader schema from now on: %s", self._off)
        return None

    def _add(self, sid: int, writer_of: Callable[[int], Any]) -> bool:
        if sid in self._writers:
            return self._writers[sid] is None
        try:
            writer = writer_of(sid)
        except Exception:  # the per-record path raises it, per record, typed
            return False
        writer_json = self_contained(writer)
        resolves = writer_json != self._reader_json
        why = _writer_refusal(writer, self._reader, resolves, self._limits)
        if why is None:
            try:
                flat = _flat_plan(writer) if FLAT_RECORDS and not resolves else None
                self._dec.add_writer(sid, writer_json, _depth(writer, named_types(writer)), flat)
            except ValueError as e:  # arrow-avro does not resolve it (the per-record path says why)
                why = f"arrow-avro: {e}"
        if len(self._writers) >= self._cache_size:
            oldest = next(iter(self._writers))
            if self._writers.pop(oldest) is None:
                self._dec.forget(oldest)
        self._writers[sid] = why
        return why is None


def native_columns(deser: Any, reader: Any, target: pa.DataType) -> Optional[NativeAvroColumns]:
    """The native decoder of ``reader`` kept on ``deser`` (built once per reader schema), or
    ``None`` when the extension is not active for ``deser``'s decoders."""
    mod = _native.active()
    if mod is None or not hasattr(mod, "AvroArrowDecoder"):
        return None
    cache: Dict[str, NativeAvroColumns] = deser.__dict__.setdefault("_arrow_native", {})
    key = self_contained(reader)
    found = cache.get(key)
    if found is None:
        found = NativeAvroColumns(mod, reader, key, target, deser._limits, deser._cache_size)
        bounded_store(cache, key, found, 16)
    return found
