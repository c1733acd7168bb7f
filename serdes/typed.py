"""Typed records: decode into dataclasses, ``msgspec.Struct`` classes or pydantic models, and encode
from them.

``from_dict(cls)`` and ``to_dict(cls)`` return callables with confluent-kafka's ``from_dict`` /
``to_dict`` signature ``(value, ctx)``, so they plug into every serdes deserializer and serializer
(sync, asyncio, builders, PyFlink) and into confluent-kafka's own::

    from serdes.typed import from_dict, to_dict
    deserializer = AvroDeserializer(client, schema_str, from_dict=from_dict(Order))
    serializer = AvroSerializer(client, schema_str, to_dict=to_dict(Order))

The conversion is compiled once per class from its annotations (``typing.get_type_hints``): nested
record classes, ``Optional``/``Union``, ``list``/``dict`` of them and ``enum.Enum`` members are
converted; every other value (``int``, ``str``, ``Decimal``, ``datetime``, ...) is taken as the
decoder gives it -- the schema typed it already, serdes does not validate it again. A field whose
wire name is not its attribute name carries it: ``dataclasses.field(metadata={"serdes_name":
"from"})`` or msgspec's ``msgspec.field(name="from")``; pydantic models use their own aliases
(``model_validate`` / ``model_dump(by_alias=True)``).

A decoded record whose fields are not the class's (one missing without a default, one the class
lacks) raises :class:`serdes.SchemaMismatchError` naming the class and the field; an object of
another type given to ``to_dict(cls)`` raises :class:`serdes.ValidationError`. Both are record
errors: skip or dead-letter them like any other.

For Avro, serdes' deserializers build the instances inside the compiled decoder when the schema
and the class agree (docs/typed.md); the result is the same as calling ``from_dict(cls)`` on the
dict.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import keyword
import sys
import types
import typing
from typing import Any, Callable, Dict, FrozenSet, Generic, List, Optional, Tuple, Type, TypeVar

from ._errors import SchemaMismatchError, ValidationError

__all__ = ["from_dict", "to_dict", "FromDict", "ToDict", "record_fields", "RecordField", "is_plain_dataclass"]

T = TypeVar("T")

_Conv = Callable[[Any], Any]
_NONE_TYPE = type(None)
_UNKNOWN = ("error", "ignore")
_MAX_CLASSES = 1024  # compiled classes kept (classes are the application's, but every cache is bounded)


@dataclasses.dataclass(frozen=True)
class RecordField:
    """One field of a record class: its attribute, its name on the wire, its annotation, and
    whether it has a default (may be absent from a decoded record)."""

    attribute: str
    wire_name: str
    annotation: Any
    has_default: bool


class FromDict(Generic[T]):
    """``from_dict(cls)``: ``(dict, ctx) -> cls``; ``record_type`` is the class."""

    __slots__ = ("record_type", "_convert")

    def __init__(self, record_type: Type[T], convert: _Conv) -> None:
        self.record_type = record_type
        self._convert = convert

    def __call__(self, value: Any, ctx: Any = None) -> T:
        return self._convert(value)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"serdes.typed.from_dict({self.record_type.__qualname__})"


class ToDict(Generic[T]):
    """``to_dict(cls)``: ``(cls instance, ctx) -> dict``; ``record_type`` is the class."""

    __slots__ = ("record_type", "_convert")

    def __init__(self, record_type: Type[T], convert: _Conv) -> None:
        self.record_type = record_type
        self._convert = convert

    def __call__(self, obj: T, ctx: Any = None) -> Dict[str, Any]:
        return self._convert(obj)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"serdes.typed.to_dict({self.record_type.__qualname__})"


def from_dict(record_type: Type[T], *, unknown: str = "error") -> FromDict[T]:
    """The ``from_dict`` callable that turns a decoded record (a dict) into ``record_type``: a
    dataclass, a ``msgspec.Struct`` subclass or a pydantic model.

    ``unknown``: what a record field the class does not have is -- ``"error"`` (the default): a
    :class:`serdes.SchemaMismatchError`; ``"ignore"``: left out, as a JSON Schema reader of an
    older version of a schema would (Avro readers have their reader schema for that instead).
    pydantic models follow their own ``extra`` setting."""
    if unknown not in _UNKNOWN:
        raise ValueError(f"unknown must be one of {_UNKNOWN}, not {unknown!r}")
    return _from_dict(_checked(record_type), unknown)


def to_dict(record_type: Type[T]) -> ToDict[T]:
    """The ``to_dict`` callable that turns an instance of ``record_type`` (a dataclass, a
    ``msgspec.Struct`` subclass or a pydantic model) into the dict the serializer encodes."""
    return _to_dict(_checked(record_type))


@functools.lru_cache(maxsize=_MAX_CLASSES)
def _from_dict(record_type: type, unknown: str) -> FromDict[Any]:
    return FromDict(record_type, _Compiler(ignore_unknown=unknown == "ignore").decoder(record_type))


@functools.lru_cache(maxsize=_MAX_CLASSES)
def _to_dict(record_type: type) -> ToDict[Any]:
    return ToDict(record_type, _Compiler().encoder(record_type))


def _checked(record_type: Any) -> type:
    if _kind(record_type) is None:
        raise TypeError(
            f"serdes.typed needs a dataclass, a msgspec.Struct subclass or a pydantic model, not {record_type!r}"
        )
    return record_type  # type: ignore[no-any-return]


# -- classes --------------------------------------------------------------------------------------
def _kind(tp: Any) -> Optional[str]:
    """"dataclass", "struct" (msgspec), "pydantic" or None. msgspec and pydantic are looked up only
    when the application imported them (serdes depends on neither)."""
    if not isinstance(tp, type):
        return None
    if dataclasses.is_dataclass(tp):
        return "dataclass"
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and issubclass(tp, msgspec.Struct):
        return "struct"
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(tp, pydantic.BaseModel):
        return "pydantic"
    return None


@functools.lru_cache(maxsize=_MAX_CLASSES)
def record_fields(record_type: type) -> Tuple[RecordField, ...]:
    """The fields of a dataclass or ``msgspec.Struct`` class, in order, with their wire names and
    resolved annotations (pydantic models: ``model_fields`` with their aliases)."""
    kind = _kind(record_type)
    try:
        hints = typing.get_type_hints(record_type)
    except Exception as e:  # noqa: BLE001 - an annotation that does not resolve: say which class
        raise TypeError(f"the annotations of {record_type.__qualname__} do not resolve: {e}") from None
    out: List[RecordField] = []
    if kind == "dataclass":
        for f in dataclasses.fields(record_type):
            if not f.init:
                continue
            wire = f.metadata.get("serdes_name", f.name)
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            out.append(RecordField(f.name, str(wire), hints.get(f.name, Any), has_default))
    elif kind == "struct":
        import msgspec

        for sf in msgspec.structs.fields(record_type):
            out.append(RecordField(sf.name, sf.encode_name, hints.get(sf.name, sf.type), not sf.required))
    elif kind == "pydantic":
        for name, pf in record_type.model_fields.items():  # type: ignore[attr-defined]
            out.append(RecordField(name, pf.alias or name, pf.annotation, not pf.is_required()))
    return tuple(out)


def _strip(tp: Any) -> Any:
    """``Annotated[X, ...]`` -> ``X``; ``NewType`` -> its base."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif hasattr(tp, "__supertype__"):
            tp = tp.__supertype__
        else:
            return tp


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is typing.Union or origin is types.UnionType


class _Compiler:
    """Compiles the converters of one class graph (recursive classes through a late-bound cell)."""

    def __init__(self, ignore_unknown: bool = False) -> None:
        self.ignore_unknown = ignore_unknown
        self.decoders: Dict[type, List[Optional[_Conv]]] = {}
        self.encoders: Dict[type, List[Optional[_Conv]]] = {}

    # -- decode -----------------------------------------------------------------------------------
    def decoder(self, cls: type) -> _Conv:
        conv = self.value_decoder(cls)
        assert conv is not None
        return conv

    def value_decoder(self, tp: Any) -> Optional[_Conv]:
        """What turns a decoded value of annotation ``tp`` into its Python form; None: as decoded."""
        tp = _strip(tp)
        if _kind(tp) is not None:
            return self.record_decoder(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum_decoder(tp)
        if _is_union(tp):
            return self.union_decoder(typing.get_args(tp))
        return _container(tp, self.value_decoder)

    def union_decoder(self, members: Tuple[Any, ...]) -> Optional[_Conv]:
        nullable = _NONE_TYPE in members
        rest = [m for m in members if m is not _NONE_TYPE]
        convs = [(m, self.value_decoder(m)) for m in rest]
        if all(c is None for _, c in convs):
            return None
        if len(convs) == 1 and _kind(_strip(convs[0][0])) is None:
            only = convs[0][1]
            assert only is not None
            return (lambda v: None if v is None else only(v)) if nullable else only
        records = [(_strip(m), c) for m, c in convs if _kind(_strip(m)) is not None]
        enums = [c for m, c in convs if isinstance(_strip(m), type) and issubclass(_strip(m), enum.Enum)]
        # a string in a union of str and enums: the first of them in the annotation that takes it
        first_str = next((i for i, (m, _) in enumerate(convs) if _strip(m) is str), len(convs))
        first_enum = next((i for i, (m, _) in enumerate(convs)
                           if isinstance(_strip(m), type) and issubclass(_strip(m), enum.Enum)), len(convs))
        strings_first = first_str < first_enum
        pick = _record_picker(records) if records else None
        by_name = _records_by_name(records)

        def decode_union(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, dict) and pick is not None:
                return pick(v)
            if type(v) is tuple and len(v) == 2 and isinstance(v[0], str) and pick is not None:
                # Avro's return_record_name: (record name, record)
                conv = by_name.get(v[0]) or by_name.get(v[0].rsplit(".", 1)[-1])
                return (v[0], conv(v[1]) if conv is not None else pick(v[1]))
            if isinstance(v, str) and enums and not strings_first:
                for e in enums:
                    assert e is not None
                    try:
                        return e(v)
                    except SchemaMismatchError:
                        continue
            return v

        return decode_union

    def record_decoder(self, cls: type) -> _Conv:
        def build() -> _Conv:
            if _kind(cls) == "pydantic":
                return _pydantic_decoder(cls)
            fields = record_fields(cls)
            return _record_decoder(cls, fields, [self.value_decoder(f.annotation) for f in fields],
                                   self.ignore_unknown)

        return _late_bound(self.decoders, cls, build)

    # -- encode -----------------------------------------------------------------------------------
    def encoder(self, cls: type) -> _Conv:
        conv = self.record_encoder(cls, top=True)
        return conv

    def value_encoder(self, tp: Any) -> Optional[_Conv]:
        tp = _strip(tp)
        if _kind(tp) is not None:
            return self.record_encoder(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum_value
        if _is_union(tp):
            convs = [(_strip(m), self.value_encoder(m)) for m in typing.get_args(tp) if m is not _NONE_TYPE]
            if all(c is None for _, c in convs):
                return None
            by_type = {m: c for m, c in convs if isinstance(m, type) and c is not None}

            def encode_union(v: Any) -> Any:
                c = by_type.get(type(v))
                if c is not None:
                    return c(v)
                if isinstance(v, enum.Enum):
                    return v.value
                for m, c in by_type.items():  # subclasses of a member
                    if isinstance(v, m):
                        return c(v)
                return v

            return encode_union
        return _container(tp, self.value_encoder)

    def record_encoder(self, cls: type, top: bool = False) -> _Conv:
        def build() -> _Conv:
            if _kind(cls) == "pydantic":
                return _pydantic_encoder(cls)
            fields = record_fields(cls)
            return _record_encoder(cls, fields, [self.value_encoder(f.annotation) for f in fields])

        conv = _late_bound(self.encoders, cls, build)
        if top:
            def encode_top(obj: Any) -> Any:
                try:
                    return conv(obj)
                except RecursionError:
                    raise ValidationError(
                        f"the {cls.__qualname__} object nests too deep to encode (or refers to itself)"
                    ) from None
            return encode_top
        return conv


def _late_bound(built: Dict[type, List[Optional[_Conv]]], cls: type, build: Callable[[], _Conv]) -> _Conv:
    """``build()``, once per class of a graph: a class met again while its own converter is being
    built (a recursive class) gets a call through the cell the finished converter fills."""
    known = built.get(cls)
    if known is not None:
        return lambda v: known[0](v)  # type: ignore[misc]
    cell: List[Optional[_Conv]] = [None]
    built[cls] = cell
    conv = cell[0] = build()
    return conv


SEQUENCES = (list, typing.List, collections.abc.Sequence, collections.abc.MutableSequence)
MAPPINGS = (dict, typing.Dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _container(tp: Any, item_converter: Callable[[Any], Optional[_Conv]]) -> Optional[_Conv]:
    """A ``List[X]`` / ``Dict[K, X]`` annotation's converter: each item through ``X``'s (None: not
    a container, or its items stay as they are)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in SEQUENCES and args:
        item = item_converter(args[0])
        if item is None:
            return None
        return lambda v: [item(x) for x in v]
    if origin in MAPPINGS and len(args) == 2:
        value = item_converter(args[1])
        if value is None:
            return None
        return lambda v: {k: value(x) for k, x in v.items()}
    return None


def is_plain_dataclass(cls: type) -> bool:
    """A dataclass whose instances are their ``__dict__`` of fields: no ``__post_init__``, object's
    ``__new__``, every field in ``__init__``, not abstract, instances with a ``__dict__``. Such an
    instance can be built without calling ``__init__`` (as ``copy`` and ``pickle`` do)."""
    return (
        _kind(cls) == "dataclass"
        and not hasattr(cls, "__post_init__")
        and cls.__new__ is object.__new__  # type: ignore[comparison-overlap]
        and not getattr(cls, "__abstractmethods__", None)
        and getattr(cls, "__dictoffset__", 0) != 0
        and all(f.init for f in dataclasses.fields(cls))
    )


def _safe_attr(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("__")


# -- generated record converters --------------------------------------------------------------------
# The source below is built from the class's own field names: attribute names pass _safe_attr
# (identifiers, else a namespace constant attrgetter), wire names appear only as repr() literals.
def _record_decoder(
    cls: type, fields: Tuple[RecordField, ...], convs: List[Optional[_Conv]], ignore_unknown: bool,
) -> _Conv:
    ns: Dict[str, Any] = {"_cls": cls, "_slow": None}
    args = []
    for i, (f, c) in enumerate(zip(fields, convs, strict=True)):
        value = f"v[{f.wire_name!r}]"
        if c is not None:
            ns[f"_c{i}"] = c
            value = f"_c{i}({value})"
        if _safe_attr(f.attribute):
            args.append(f"{f.attribute}={value}")
        else:
            args.append(f"**{{{f.attribute!r}: {value}}}")
    if is_plain_dataclass(cls) and all(c is None for c in convs) \
            and all(f.wire_name == f.attribute for f in fields):
        # no field to convert: a copy of the dict is the instance's __dict__ (as copy and pickle
        # build instances), when its keys are exactly the fields
        ns.update(_keys=frozenset(f.wire_name for f in fields), _new=object.__new__, _set=object.__setattr__)
        src = (
            "def decode(v):\n"
            f"    if type(v) is dict and len(v) == {len(fields)} and v.keys() == _keys:\n"
            "        o = _new(_cls)\n"
            "        _set(o, '__dict__', v.copy())\n"
            "        return o\n"
            "    return _slow(v)\n"
        )
    else:
        src = (
            "def decode(v):\n"
            f"    if type(v) is dict and len(v) == {len(fields)}:\n"
            "        try:\n"
            f"            return _cls({', '.join(args)})\n"
            "        except KeyError:\n"
            "            pass\n"
            "    return _slow(v)\n"
        )
    ns["_slow"] = _slow_decoder(cls, fields, convs, ignore_unknown)
    exec(compile(src, f"<serdes.typed decoder of {cls.__qualname__}>", "exec"), ns)  # noqa: S102
    return ns["decode"]  # type: ignore[no-any-return]


def _slow_decoder(
    cls: type, fields: Tuple[RecordField, ...], convs: List[Optional[_Conv]], ignore_unknown: bool,
) -> _Conv:
    """The general case: fields with defaults may be absent; anything else is a mismatch, named."""
    wire_names = frozenset(f.wire_name for f in fields)

    def decode(v: Any) -> Any:
        if not isinstance(v, dict):
            raise SchemaMismatchError(f"a {type(v).__name__} cannot be a {cls.__qualname__} (expected a record)")
        kwargs: Dict[str, Any] = {}
        for f, c in zip(fields, convs, strict=True):
            if f.wire_name in v:
                x = v[f.wire_name]
                kwargs[f.attribute] = x if c is None else c(x)
            elif not f.has_default:
                raise SchemaMismatchError(
                    f"the record has no field {f.wire_name!r}, which {cls.__qualname__} requires"
                )
        extra = [] if ignore_unknown else [k for k in v if k not in wire_names]
        if extra:
            raise SchemaMismatchError(f"{cls.__qualname__} has no field for {', '.join(map(repr, extra[:5]))}")
        return cls(**kwargs)

    return decode


def _record_encoder(cls: type, fields: Tuple[RecordField, ...], convs: List[Optional[_Conv]]) -> _Conv:
    import operator

    ns: Dict[str, Any] = {"_cls": cls, "_wrong": _wrong_type(cls)}
    items = []
    for i, (f, c) in enumerate(zip(fields, convs, strict=True)):
        if _safe_attr(f.attribute):
            value = f"o.{f.attribute}"
        else:
            ns[f"_g{i}"] = operator.attrgetter(f.attribute)
            value = f"_g{i}(o)"
        if c is not None:
            ns[f"_c{i}"] = c
            value = f"_c{i}({value})"
        items.append(f"{f.wire_name!r}: {value}")
    # fields whose None is written as no field at all (a JSON Schema property that may be absent
    # but not null): the class's __serdes_omit_none__, a set of wire names (serdes.codegen writes it)
    omit = getattr(cls, "__serdes_omit_none__", ())
    omitted = [f.wire_name for f in fields if f.wire_name in omit]
    src = (
        "def encode(o):\n"
        "    if type(o) is not _cls and not isinstance(o, _cls):\n"
        "        _wrong(o)\n"
        f"    d = {{{', '.join(items)}}}\n"
        + "".join(f"    if d[{w!r}] is None:\n        del d[{w!r}]\n" for w in omitted)
        + "    return d\n"
    )
    exec(compile(src, f"<serdes.typed encoder of {cls.__qualname__}>", "exec"), ns)  # noqa: S102
    return ns["encode"]  # type: ignore[no-any-return]


def _wrong_type(cls: type) -> Callable[[Any], None]:
    def wrong(o: Any) -> None:
        raise ValidationError(f"expected a {cls.__qualname__}, got a {type(o).__qualname__}")

    return wrong


def _records_by_name(records: List[Tuple[Any, Optional[_Conv]]]) -> Dict[str, _Conv]:
    """The converter of each union member class by its ``__serdes_name__`` and its ``__name__``."""
    out: Dict[str, _Conv] = {}
    for cls, conv in records:
        assert conv is not None
        name = getattr(cls, "__serdes_name__", None)
        if isinstance(name, str):
            out.setdefault(name, conv)
        out.setdefault(cls.__name__, conv)
    return out


def _record_picker(records: List[Tuple[Any, Optional[_Conv]]]) -> _Conv:
    """A dict of a union of several record classes: the class whose wire names are its keys
    (exactly, else the one whose required names it has and whose names it stays within)."""
    if len(records) == 1:
        only = records[0][1]
        assert only is not None
        return only
    exact: Dict[FrozenSet[str], _Conv] = {}
    shapes: List[Tuple[FrozenSet[str], FrozenSet[str], _Conv, type]] = []
    for cls, conv in records:
        assert conv is not None
        fields = record_fields(cls)
        names = frozenset(f.wire_name for f in fields)
        required = frozenset(f.wire_name for f in fields if not f.has_default)
        exact.setdefault(names, conv)
        shapes.append((required, names, conv, cls))
    names_of = " | ".join(c.__qualname__ for c, _ in records)

    def pick(v: Dict[str, Any]) -> Any:
        keys = frozenset(v)
        conv = exact.get(keys)
        if conv is not None:
            return conv(v)
        for required, names, c, _ in shapes:
            if required <= keys <= names:
                return c(v)
        raise SchemaMismatchError(f"the record with fields {sorted(keys)[:8]} fits none of {names_of}")

    return pick


def _enum_decoder(cls: Type[enum.Enum]) -> _Conv:
    members: Dict[Any, Any] = {}
    for m in cls:
        members.setdefault(m.value, m)
        members.setdefault(m.name, m)  # Avro symbols and Protobuf value names are member names too
    get = members.get

    def decode(v: Any) -> Any:
        m = get(v)
        if m is None:
            raise SchemaMismatchError(f"{v!r} is not a member of {cls.__qualname__}")
        return m

    return decode


def _enum_value(v: Any) -> Any:
    return v.value if isinstance(v, enum.Enum) else v


def _pydantic_decoder(cls: Any) -> _Conv:
    validate = cls.model_validate

    def decode(v: Any) -> Any:
        try:
            return validate(v)
        except ValueError as e:  # pydantic.ValidationError is a ValueError
            raise SchemaMismatchError(f"the record does not fit {cls.__qualname__}: {e}") from None

    return decode


def _pydantic_encoder(cls: Any) -> _Conv:
    wrong = _wrong_type(cls)

    def encode(o: Any) -> Any:
        if not isinstance(o, cls):
            wrong(o)
        return _enum_values(o.model_dump(by_alias=True))

    return encode


def _enum_values(v: Any) -> Any:
    """``model_dump``'s value with enum members replaced by their values (as the other kinds give)."""
    if isinstance(v, dict):
        return {k: _enum_values(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_enum_values(x) for x in v]
    return v.value if isinstance(v, enum.Enum) else v
