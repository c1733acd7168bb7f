"""Typed Avro records built inside the decoder: the record schemas of a reader schema matched to the
classes of a ``serdes.typed.from_dict(cls)``.

:func:`record_makers` walks the schema next to the class's annotations and, when every record and
enum the class names agrees with the schema (the same field names, enums with every symbol), gives
one function per named type. The generated decoder (:mod:`serdes.avro._decgen`) and the native
program (:mod:`serdes.avro._native_decoder`) call it on each record dict and enum symbol they read
(the slot of a logical type's reader), so nested records, arrays and maps of them come out as
instances in one pass. Anything else (a class that differs from the schema, a reader default that
holds a record or an enum symbol, ``return_record_name``) gives ``None``: the decoder builds dicts
and ``from_dict`` converts them afterwards, to the same result.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ..typed import MAPPINGS, SEQUENCES, _enum_decoder, _is_union, _kind, _strip, is_plain_dataclass, record_fields

__all__ = ["EnumMembers", "Maker", "RecordMaker", "record_makers"]

_NONE_TYPE = type(None)
_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))


class _Disagree(Exception):
    """The class and the schema differ: no makers (the dict path converts, or reports, instead)."""


def record_makers(schema: Any, record_type: type, writer: Any = None) -> Optional[Dict[str, Maker]]:
    """The maker of every record and enum full name of ``schema`` (the reader schema; the writer
    schema when there is none) for ``record_type``, or ``None`` when the two disagree anywhere.
    ``writer`` (with a reader schema) is checked for reader fields it lacks whose defaults would
    need converting."""
    walk = _Walk(writer)
    try:
        walk.value(schema, record_type)
    except (_Disagree, RecursionError):
        return None
    root = schema.get("name") if isinstance(schema, dict) else None
    if root not in walk.makers:
        return None
    return walk.makers


def _members(tp: Any) -> List[Any]:
    tp = _strip(tp)
    if _is_union(tp):
        return [_strip(m) for m in typing.get_args(tp) if m is not _NONE_TYPE]
    return [tp]


def _is_enum_class(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


class _Walk:
    def __init__(self, writer: Any) -> None:
        self.makers: Dict[str, Maker] = {}
        self.classes: Dict[str, Any] = {}  # full name -> the class (or None: left as decoded)
        self.named: Dict[str, Any] = {}
        self.writer_fields: Dict[str, set] = {}  # type: ignore[type-arg]
        if writer is not None:
            self.collect_writer(writer, 0)

    def collect_writer(self, s: Any, depth: int) -> None:
        if depth > 200:
            raise _Disagree
        if isinstance(s, list):
            for b in s:
                self.collect_writer(b, depth + 1)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in ("record", "error"):
                self.writer_fields[str(s.get("name"))] = {f.get("name") for f in s.get("fields", ())}
                for f in s.get("fields", ()):
                    self.collect_writer(f.get("type"), depth + 1)
            elif t == "array":
                self.collect_writer(s.get("items"), depth + 1)
            elif t == "map":
                self.collect_writer(s.get("values"), depth + 1)
            elif isinstance(t, (dict, list)):
                self.collect_writer(t, depth + 1)

    def value(self, s: Any, tp: Any) -> None:
        """Check schema ``s`` against annotation ``tp`` (``Any``: values as decoded)."""
        tp = _strip(tp)
        if isinstance(s, str):
            if s in _PRIMITIVES:
                return
            if s not in self.named:
                raise _Disagree
            if self.classes.get(s) is not _class_of(tp, s, self.named[s]):
                raise _Disagree  # a named type read again: the same class (or none) both times
            return
        if isinstance(s, list):
            self.union(s, tp)
            return
        if not isinstance(s, dict):
            raise _Disagree
        t = s.get("type")
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t in self.named):
            self.value(t, tp)
            return
        if t in ("record", "error"):
            self.record(s, tp)
        elif t == "enum":
            self.enum(s, tp)
        elif t == "fixed":
            self.named[str(s.get("name"))] = s
            self.classes[str(s.get("name"))] = None
        elif t == "array":
            self.value(s.get("items"), _arg(tp, 0, SEQUENCES))
        elif t == "map":
            self.value(s.get("values"), _arg(tp, 1, MAPPINGS))
        elif t not in _PRIMITIVES:
            raise _Disagree

    def union(self, branches: List[Any], tp: Any) -> None:
        members = _members(tp)
        for b in branches:
            name = _named_full_name(b, self.named)
            if name is None:  # a primitive, array or map branch: the first member that takes it
                if _typed_branch(b):
                    kinds = [m for m in members if _kind(m) is None and not _is_enum_class(m)]
                    self.value(b, kinds[0] if len(kinds) == 1 else Any)
                continue
            target = _union_member(b if isinstance(b, dict) else self.named.get(b), name, members)
            self.value(b, target)

    def record(self, s: Dict[str, Any], tp: Any) -> None:
        name = str(s.get("name"))
        self.named[name] = s
        fields = s.get("fields", ())
        kind = _kind(tp)
        if tp is Any or tp is dict or typing.get_origin(tp) in (dict, typing.Dict):
            self.classes[name] = None
            for f in fields:
                self.value(f.get("type"), Any)
            return
        if kind not in ("dataclass", "struct"):
            raise _Disagree
        self.classes[name] = tp
        by_wire = {f.wire_name: f for f in record_fields(tp)}
        if set(by_wire) != {f.get("name") for f in fields}:
            raise _Disagree
        present = self.writer_fields.get(name)
        for f in fields:
            rf = by_wire[f.get("name")]
            if present is not None and f.get("name") not in present and "default" in f \
                    and f["default"] is not None and _names_inside(f.get("type"), self.named):
                raise _Disagree  # the default is a dict / symbol: the dict path converts it
            self.value(f.get("type"), rf.annotation)
        self.makers[name] = _record_maker(tp)

    def enum(self, s: Dict[str, Any], tp: Any) -> None:
        name = str(s.get("name"))
        self.named[name] = s
        if tp is Any or tp is str:
            self.classes[name] = None
            return
        if not _is_enum_class(tp):
            raise _Disagree
        decode = _enum_decoder(tp)
        members = {}
        for sym in s.get("symbols", ()):
            try:
                members[sym] = decode(sym)
            except Exception:  # noqa: BLE001 - a symbol the class lacks
                raise _Disagree from None
        self.classes[name] = tp
        self.makers[name] = EnumMembers(members)


def _arg(tp: Any, i: int, origins: Tuple[Any, ...]) -> Any:
    if tp is Any:
        return Any
    if typing.get_origin(tp) in origins:
        args = typing.get_args(tp)
        return args[i] if len(args) > i else Any
    if tp in (list, dict):
        return Any
    raise _Disagree


def _class_of(tp: Any, name: str, s: Any) -> Any:
    """The class a named type maps to at a repeated reference (None: left as decoded)."""
    t = s.get("type") if isinstance(s, dict) else None
    if t == "fixed":
        return None
    if t == "enum":
        return tp if _is_enum_class(tp) else None
    return tp if _kind(tp) in ("dataclass", "struct") else None


def _named_full_name(b: Any, named: Dict[str, Any]) -> Optional[str]:
    if isinstance(b, str):
        return b if b in named else None
    if isinstance(b, dict) and b.get("type") in ("record", "error", "enum", "fixed"):
        return str(b.get("name"))
    return None


def _typed_branch(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") in ("array", "map")


def _union_member(s: Any, name: str, members: List[Any]) -> Any:
    """The annotation member a named union branch maps to: the class whose ``__serdes_name__`` or
    ``__name__`` is the branch's (full, then simple) name; else the only one of its kind."""
    t = s.get("type") if isinstance(s, dict) else None
    if t == "fixed":
        return Any
    want_enum = t == "enum"
    kinds = [m for m in members if (_is_enum_class(m) if want_enum else _kind(m) in ("dataclass", "struct"))]
    simple = name.rsplit(".", 1)[-1]
    for m in kinds:
        if getattr(m, "__serdes_name__", None) == name:
            return m
    for m in kinds:
        if m.__name__ == simple:
            return m
    if len(kinds) == 1:
        return kinds[0]
    if not kinds and (Any in members or (want_enum and str in members) or (not want_enum and dict in members)):
        return Any
    raise _Disagree


def _names_inside(s: Any, named: Dict[str, Any], depth: int = 0) -> bool:
    """Whether a value of ``s`` can hold a record or an enum symbol."""
    if depth > 200:
        return True
    if isinstance(s, str):
        t = named.get(s)
        return t is not None and isinstance(t, dict) and t.get("type") in ("record", "error", "enum")
    if isinstance(s, list):
        return any(_names_inside(b, named, depth + 1) for b in s)
    if isinstance(s, dict):
        t = s.get("type")
        if t in ("record", "error", "enum"):
            return True
        if t == "array":
            return _names_inside(s.get("items"), named, depth + 1)
        if t == "map":
            return _names_inside(s.get("values"), named, depth + 1)
        if isinstance(t, (dict, list)):
            return _names_inside(t, named, depth + 1)
    return False


@dataclasses.dataclass(frozen=True)
class RecordMaker:
    """How the decoder turns a record it read into an instance of ``cls``.

    The record's keys are the attribute names (``attribute_of``: the renamed wire names). A plain
    dataclass (no ``__post_init__``, an instance ``__dict__``, every field in ``__init__``) takes
    the fresh dict as its ``__dict__`` (``set_dict``), as ``copy`` and ``pickle`` build instances;
    any other class is called with the fields as keyword arguments."""

    cls: type
    set_dict: bool
    attribute_of: Mapping[str, str]

    def make(self, v: Dict[str, Any]) -> Any:
        if self.set_dict:
            o: Any = object.__new__(self.cls)
            object.__setattr__(o, "__dict__", v)  # a frozen dataclass's own __setattr__ refuses
            return o
        return self.cls(**v)


@dataclasses.dataclass(frozen=True)
class EnumMembers:
    """The enum class member of each symbol: the decoder's symbol table holds them."""

    members: Mapping[str, Any]


Maker = Union[RecordMaker, EnumMembers]


def _record_maker(cls: type) -> RecordMaker:
    fields = record_fields(cls)
    plain = is_plain_dataclass(cls)
    return RecordMaker(cls, plain, {f.wire_name: f.attribute for f in fields if f.wire_name != f.attribute})
