"""Message -> plain Python dict, compiled once per message descriptor.

Values: scalars as Python values (int64 stays ``int``, bytes stay ``bytes``), enums as their value
names (the number when the value is unknown), nested messages as dicts, repeated fields as lists,
maps as dicts. Fields with presence (message fields, ``optional``, oneof members, proto2
singulars) are ``None`` when unset; other fields carry their default.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .._cache import bounded_store

__all__ = ["dict_converter"]

_converters: Dict[Any, Callable[[Any], Dict[str, Any]]] = {}
# Process-wide, one entry per message type of every schema decoded with output="dict": bounded
# (oldest dropped first) so that a stream of distinct writer schemas cannot grow it -- or keep
# their descriptor pools alive -- without end. A dropped converter is rebuilt when needed.
_MAX_CONVERTERS = 10_000
_REPEATED = FieldDescriptor.LABEL_REPEATED


def _is_repeated(f: FieldDescriptor) -> bool:
    rep = getattr(f, "is_repeated", None)
    if rep is not None and not callable(rep):
        return bool(rep)
    # protobuf < 5.29 has no is_repeated; types-protobuf (7.x) no longer declares label
    return bool(f.label == _REPEATED)  # type: ignore[attr-defined]


def _has_presence(f: FieldDescriptor) -> bool:
    hp = getattr(f, "has_presence", None)
    if hp is not None:
        return bool(hp)
    return f.message_type is not None or f.containing_oneof is not None  # pragma: no cover


def _value_fn(f: FieldDescriptor) -> Callable[[Any], Any]:
    if f.message_type is not None:
        md = f.message_type
        return lambda v: dict_converter(md)(v)
    if f.enum_type is not None:
        names = {v.number: v.name for v in f.enum_type.values}
        return lambda v: names.get(v, v)
    return None  # type: ignore[return-value]


def dict_converter(desc: Descriptor) -> Callable[[Any], Dict[str, Any]]:
    """A function turning a message of type ``desc`` into a dict (cached per descriptor)."""
    key = desc  # descriptors are hashable and unique per pool
    conv = _converters.get(key)
    if conv is not None:
        return conv
    plan = []  # (name, kind, fn)
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            plan.append((f.name, "map", _value_fn(vf)))
        elif _is_repeated(f):
            plan.append((f.name, "list", _value_fn(f)))
        elif _has_presence(f):
            plan.append((f.name, "opt", _value_fn(f)))
        else:
            plan.append((f.name, "plain", _value_fn(f)))

    def convert(msg: Any) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name, kind, fn in plan:
            v = getattr(msg, name)
            if kind == "plain":
                out[name] = fn(v) if fn is not None else v
            elif kind == "opt":
                out[name] = (fn(v) if fn is not None else v) if msg.HasField(name) else None
            elif kind == "list":
                out[name] = [fn(x) for x in v] if fn is not None else list(v)
            else:
                out[name] = {k: fn(x) for k, x in v.items()} if fn is not None else dict(v)
        return out

    bounded_store(_converters, key, convert, _MAX_CONVERTERS)
    return convert
