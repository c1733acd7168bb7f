"""Protobuf messages as Arrow columns (from the reader's message descriptor), and back.

Values come from serdes' one Protobuf -> dict converter (:mod:`serdes.protobuf._todict`, wrappers
unwrapped); going back, :func:`message_from_dict` builds the message the serializer takes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ..protobuf._todict import WRAPPER_TYPES, _has_presence, is_repeated
from ._avro import NoColumnarShape
from ._shapes import Converted, Enum, ListOf, MapOf, Plain, Shape, Struct

__all__ = ["protobuf_shape", "message_from_dict"]

_FD = FieldDescriptor


def _int_in(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


_SCALARS: Dict[int, Shape] = {
    _FD.TYPE_DOUBLE: Plain(pa.float64(), (float, int)),
    _FD.TYPE_FLOAT: Plain(pa.float32(), (float, int)),
    _FD.TYPE_INT64: Plain(pa.int64(), check=_int_in(-(1 << 63), (1 << 63) - 1)),
    _FD.TYPE_SINT64: Plain(pa.int64(), check=_int_in(-(1 << 63), (1 << 63) - 1)),
    _FD.TYPE_SFIXED64: Plain(pa.int64(), check=_int_in(-(1 << 63), (1 << 63) - 1)),
    _FD.TYPE_UINT64: Plain(pa.uint64(), check=_int_in(0, (1 << 64) - 1)),
    _FD.TYPE_FIXED64: Plain(pa.uint64(), check=_int_in(0, (1 << 64) - 1)),
    _FD.TYPE_INT32: Plain(pa.int32(), check=_int_in(-(1 << 31), (1 << 31) - 1)),
    _FD.TYPE_SINT32: Plain(pa.int32(), check=_int_in(-(1 << 31), (1 << 31) - 1)),
    _FD.TYPE_SFIXED32: Plain(pa.int32(), check=_int_in(-(1 << 31), (1 << 31) - 1)),
    _FD.TYPE_UINT32: Plain(pa.uint32(), check=_int_in(0, (1 << 32) - 1)),
    _FD.TYPE_FIXED32: Plain(pa.uint32(), check=_int_in(0, (1 << 32) - 1)),
    _FD.TYPE_BOOL: Plain(pa.bool_(), (bool,)),
    _FD.TYPE_STRING: Plain(pa.utf8(), (str,)),
    _FD.TYPE_BYTES: Plain(pa.binary(), (bytes,)),
}

_NANOS = 1_000_000_000


def _timestamp_to_ns(v: Dict[str, Any]) -> int:
    return int(v.get("seconds", 0)) * _NANOS + int(v.get("nanos", 0))


def _ns_to_timestamp(ns: int) -> Dict[str, int]:
    seconds, nanos = divmod(ns, _NANOS)  # Timestamp.nanos is never negative
    return {"seconds": seconds, "nanos": nanos}


def _ns_to_duration(ns: int) -> Dict[str, int]:
    # Duration's seconds and nanos carry the same sign
    seconds = abs(ns) // _NANOS * (1 if ns >= 0 else -1)
    return {"seconds": seconds, "nanos": ns - seconds * _NANOS}


def _unwrap(v: Any) -> Any:
    # an unwrapped wrapper is its value; a deserializer with output="dict" gives {"value": v}
    return v.get("value") if isinstance(v, dict) else v


def _well_known(md: Descriptor) -> "Shape | None":
    name = md.full_name
    if name == "google.protobuf.Timestamp":
        return Converted(pa.timestamp("ns", "UTC"), _timestamp_to_ns, _ns_to_timestamp, storage=pa.int64())
    if name == "google.protobuf.Duration":
        return Converted(pa.duration("ns"), _timestamp_to_ns, _ns_to_duration, storage=pa.int64())
    if name in WRAPPER_TYPES:
        inner = _SCALARS[md.fields_by_name["value"].type]
        return Converted(inner.type, _unwrap, lambda v: v, kinds=(object,))
    if name in ("google.protobuf.Any", "google.protobuf.Struct", "google.protobuf.Value",
                "google.protobuf.ListValue"):
        raise NoColumnarShape(f"{name} holds values of any type: it has no columnar shape")
    return None


class KeyOrderedMap(MapOf):
    """A Protobuf map: each map's entries in key order. Protobuf maps have no order (the upb
    runtime iterates its hash table's, the pure-Python one its insertion order), so the column
    takes one that depends on neither, and that the native decoder gives too."""

    def __init__(self, key: Shape, value: Shape, value_nullable: bool) -> None:
        super().__init__(key, value, value_nullable)
        self.plain = False  # pyarrow.array would keep the dicts' order: built here, in key order

    def build(self, values: Sequence[Any], path: str) -> pa.Array:
        return super().build([v if not isinstance(v, dict) or len(v) < 2 else {k: v[k] for k in sorted(v)}
                              for v in values], path)


def protobuf_shape(desc: Descriptor, max_depth: int = 64) -> Struct:
    """The columns of message ``desc``: one per field, in declaration order (oneof members each a
    nullable column). Raises :class:`NoColumnarShape` for a message that contains itself."""

    def field_shape(f: FieldDescriptor, path: Tuple[str, ...]) -> Shape:
        if f.enum_type is not None:
            return Enum([v.name for v in f.enum_type.values])
        md = f.message_type
        if md is not None:
            wk = _well_known(md)
            return wk if wk is not None else message(md, path)
        return _SCALARS[f.type]

    def message(md: Descriptor, path: Tuple[str, ...]) -> Struct:
        if md.full_name in path:
            raise NoColumnarShape(f"message {md.full_name} contains itself: a recursive message has no columnar shape")
        if len(path) > max_depth:
            raise NoColumnarShape(f"the message nests more than {max_depth} levels")
        inner = path + (md.full_name,)
        fields: List[Tuple[str, Shape, bool]] = []
        for f in md.fields:
            mt = f.message_type
            if mt is not None and mt.GetOptions().map_entry:
                key = field_shape(mt.fields_by_name["key"], inner)
                value = field_shape(mt.fields_by_name["value"], inner)
                fields.append((f.name, KeyOrderedMap(key, value, False), False))
            elif is_repeated(f):
                fields.append((f.name, ListOf(field_shape(f, inner), False), False))
            else:
                fields.append((f.name, field_shape(f, inner), _has_presence(f)))
        return Struct(fields)

    return message(desc, ())


def message_from_dict(cls: Any, value: Dict[str, Any]) -> Any:
    """The message of class ``cls`` whose fields are ``value`` (the dicts :func:`protobuf_shape`
    columns give back): ``None`` leaves a field unset."""
    msg = cls()
    _fill(msg, value)
    return msg


def _fill(msg: Any, value: Dict[str, Any]) -> None:
    desc = msg.DESCRIPTOR
    for name, v in value.items():
        if v is None:
            continue
        f = desc.fields_by_name[name]
        mt = f.message_type
        if mt is not None and mt.GetOptions().map_entry:
            target = getattr(msg, name)
            vf = mt.fields_by_name["value"]
            for k, item in v.items():
                if vf.message_type is not None:
                    _set_message(target[k], vf.message_type, item)
                else:
                    target[k] = _scalar(vf, item)
        elif is_repeated(f):
            target = getattr(msg, name)
            if mt is not None:
                for item in v:
                    _set_message(target.add(), mt, item)
            else:
                target.extend(_scalar(f, item) for item in v)
        elif mt is not None:
            _set_message(getattr(msg, name), mt, v)
        else:
            setattr(msg, name, _scalar(f, v))


def _set_message(target: Any, md: Descriptor, v: Any) -> None:
    name = md.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        target.seconds = v["seconds"]
        target.nanos = v["nanos"]
    elif name in WRAPPER_TYPES:
        target.value = _unwrap(v)
    else:
        _fill(target, v)
    target.SetInParent()


def _scalar(f: FieldDescriptor, v: Any) -> Any:
    if f.enum_type is not None and isinstance(v, str):
        return f.enum_type.values_by_name[v].number
    return v
