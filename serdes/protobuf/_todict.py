"""Message -> plain Python dict, compiled once per message descriptor: the one converter behind
``ProtobufDeserializer(output="dict")`` and :func:`serdes.cdc.message_to_dict`.

Values: scalars as Python values (int64 stays ``int``, bytes stay ``bytes``), enums as their value
names (the number when the value is unknown), nested messages as dicts, repeated fields as lists,
maps as dicts. Fields with presence (message fields, ``optional``, oneof members, proto2
singulars) are ``None`` when unset; other fields carry their default. Well-known types are dicts
of their fields (a ``Timestamp`` is ``{"seconds": ..., "nanos": ...}``).

The callers' documented contracts differ in one point, an option here: with
``unwrap_wrappers=True`` (serdes.cdc: a ``google.protobuf.Int64Value`` column is a nullable
BIGINT) a ``google.protobuf.*Value`` wrapper is its ``value``; otherwise it is ``{"value": v}``
like any other message. ``max_depth`` bounds the nesting of messages built in memory (parsed ones
are already bounded by the protobuf runtime's recursion limit of 100).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .._cache import bounded_store

__all__ = ["DictConverter", "MessageTooDeepError", "dict_converter", "is_repeated", "WRAPPER_TYPES"]

#: full names of the ``google.protobuf.*Value`` wrapper messages (google/protobuf/wrappers.proto)
WRAPPER_TYPES = frozenset(
    "google.protobuf." + n
    for n in ("DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
              "BoolValue", "StringValue", "BytesValue")
)


class DictConverter(Protocol):
    def __call__(self, msg: Any, depth: int = 0) -> Dict[str, Any]: ...


class MessageTooDeepError(ValueError):
    """A message nested deeper than the converter's ``max_depth``."""


_Key = Tuple[Any, bool, Optional[int]]
_converters: Dict[_Key, DictConverter] = {}
# Process-wide, one entry per message type (and options) of every message converted: bounded
# (oldest dropped first) so that a stream of distinct writer schemas cannot grow it -- or keep
# their descriptor pools alive -- without end. A dropped converter is rebuilt when needed.
_MAX_CONVERTERS = 10_000

_ValueFn = Optional[Callable[[Any, int], Any]]


def is_repeated(f: FieldDescriptor) -> bool:
    """Whether ``f`` is a repeated field (maps included), without deprecation warnings.

    ``FieldDescriptor.is_repeated`` (a property) arrived in protobuf 6.x, which deprecates
    ``label`` (gone in 7.x); 4.25/5.x -- PyFlink's range -- have only ``label``.
    """
    rep = getattr(f, "is_repeated", None)
    if isinstance(rep, bool):
        return rep
    # types-protobuf (7.x) no longer declares label
    return bool(f.label == f.LABEL_REPEATED)  # type: ignore[attr-defined]


def _has_presence(f: FieldDescriptor) -> bool:
    hp = getattr(f, "has_presence", None)
    if hp is not None:
        return bool(hp)
    return f.message_type is not None or f.containing_oneof is not None  # pragma: no cover


def _value_fn(f: FieldDescriptor, unwrap_wrappers: bool, max_depth: Optional[int]) -> _ValueFn:
    """How one value of ``f`` is converted (``None``: as it is)."""
    md = f.message_type
    if md is not None:
        if unwrap_wrappers and md.full_name in WRAPPER_TYPES:
            return lambda v, depth: v.value
        sub: List[DictConverter] = []  # looked up on first use: a message type may contain itself

        def message(v: Any, depth: int) -> Any:
            if not sub:
                sub.append(dict_converter(md, unwrap_wrappers=unwrap_wrappers, max_depth=max_depth))
            return sub[0](v, depth + 1)

        return message
    if f.enum_type is not None:
        names = {v.number: v.name for v in f.enum_type.values}
        return lambda v, depth: names.get(v, v)
    return None


def dict_converter(
    desc: Descriptor, *, unwrap_wrappers: bool = False, max_depth: Optional[int] = None
) -> DictConverter:
    """A function turning a message of type ``desc`` into a dict (cached per descriptor and options).

    ``unwrap_wrappers``: ``google.protobuf.*Value`` fields become their value (``None`` when unset).
    ``max_depth``: a message nested deeper raises :class:`MessageTooDeepError` (``None``: no bound).
    """
    key = (desc, unwrap_wrappers, max_depth)  # descriptors are hashable and unique per pool
    conv = _converters.get(key)
    if conv is not None:
        return conv
    plan = []  # (name, kind, fn)
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            plan.append((f.name, "map", _value_fn(vf, unwrap_wrappers, max_depth)))
        elif is_repeated(f):
            plan.append((f.name, "list", _value_fn(f, unwrap_wrappers, max_depth)))
        elif _has_presence(f):
            plan.append((f.name, "opt", _value_fn(f, unwrap_wrappers, max_depth)))
        else:
            plan.append((f.name, "plain", _value_fn(f, unwrap_wrappers, max_depth)))
    full_name = desc.full_name

    def convert(msg: Any, depth: int = 0) -> Dict[str, Any]:
        if max_depth is not None and depth > max_depth:
            raise MessageTooDeepError(f"protobuf message {full_name} is nested deeper than {max_depth} levels")
        out: Dict[str, Any] = {}
        for name, kind, fn in plan:
            v = getattr(msg, name)
            if kind == "plain":
                out[name] = fn(v, depth) if fn is not None else v
            elif kind == "opt":
                out[name] = (fn(v, depth) if fn is not None else v) if msg.HasField(name) else None
            elif kind == "list":
                out[name] = [fn(x, depth) for x in v] if fn is not None else list(v)
            else:
                out[name] = {k: fn(x, depth) for k, x in v.items()} if fn is not None else dict(v)
        return out

    bounded_store(_converters, key, convert, _MAX_CONVERTERS)
    return convert
