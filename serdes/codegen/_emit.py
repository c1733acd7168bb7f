"""What the three generators share: bounds, names, the typed model of a module, and its source.

The generators (``_avro``, ``_protobuf``, ``_jsonschema``) turn a schema into a :class:`Module`:
classes (:class:`ClassSpec`, :class:`EnumSpec`) whose fields carry a :data:`Type` tree and,
optionally, a default value. :func:`render` writes the Python source. Schemas are untrusted, so the
source is built from two kinds of text only: identifiers made here (:class:`Names`: ASCII, never a
keyword, never a dunder, unique) and ``repr()`` literals of schema strings; the comment lines are
fixed text.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import datetime
import decimal
import keyword
import math
import re
import uuid
from typing import Any, List, Optional, Sequence, Set, Tuple, Union

from .._errors import SchemaMismatchError
from .._limits import DEFAULT_LIMITS

__all__ = [
    "CodegenError", "CodegenLimits", "DEFAULT_CODEGEN_LIMITS", "STYLES",
    "Prim", "ListOf", "MapOf", "Opt", "UnionOf", "LiteralOf", "ClassSpec", "EnumSpec", "FieldSpec",
    "Type", "Module", "Names", "Budget", "render", "field_attr",
]

STYLES = ("dataclass", "msgspec")


class CodegenError(SchemaMismatchError):
    """A schema the code generator cannot turn into classes: malformed, of no class shape, over a
    bound (:class:`CodegenLimits`), or referring to something it does not have. The message names
    the schema element."""

    def _format(self) -> str:  # no record location: the schema is not a record's
        return self.reason


@dataclasses.dataclass(frozen=True)
class CodegenLimits:
    """Bounds on what one schema may make the generator do (schemas are untrusted input)."""

    #: nesting of one schema (types inside types, records inside records); the generated
    #: annotations nest as deep, and Python's parser refuses ~200 nested brackets
    max_depth: int = 100
    #: named types (records, messages, enums, objects) of one schema and its references
    max_types: int = 10_000
    #: fields of all classes of one schema and its references
    max_fields: int = DEFAULT_LIMITS.max_fields
    #: characters of one name (type, field, enum symbol)
    max_name_length: int = 1024
    #: schema references fetched from the registry, transitively
    max_references: int = DEFAULT_LIMITS.max_references
    #: characters of one schema text
    max_schema_chars: int = 16 << 20


DEFAULT_CODEGEN_LIMITS = CodegenLimits()


class Budget:
    """Counts named types and fields against the limits, and checks names' lengths."""

    def __init__(self, limits: CodegenLimits) -> None:
        self.limits = limits
        self.types = 0
        self.fields = 0

    def name(self, name: Any, what: str, empty: bool = False) -> str:
        """``name`` if it is a string within the length bound (``empty``: "" is allowed too)."""
        if not isinstance(name, str) or not (name or empty):
            raise CodegenError(f"{what} must be a non-empty string, not {_short(name)}")
        if len(name) > self.limits.max_name_length:
            raise CodegenError(
                f"{what} {name[:40]!r}... is {len(name)} characters long, over the limit of {self.limits.max_name_length}"
            )
        return name

    def add_type(self, name: str) -> None:
        self.types += 1
        if self.types > self.limits.max_types:
            raise CodegenError(f"the schema has more than {self.limits.max_types} named types (at {name[:80]!r})")

    def add_field(self, where: str) -> None:
        self.fields += 1
        if self.fields > self.limits.max_fields:
            raise CodegenError(f"the schema has more than {self.limits.max_fields} fields (at {where[:80]!r})")

    def depth(self, depth: int, where: str) -> None:
        if depth > self.limits.max_depth:
            raise CodegenError(f"the schema nests deeper than {self.limits.max_depth} levels (at {where[:80]!r})")

    def text(self, text: Any, what: str) -> str:
        if not isinstance(text, str):
            raise CodegenError(f"{what} must be text, not {type(text).__name__}")
        if len(text) > self.limits.max_schema_chars:
            raise CodegenError(f"{what} has {len(text)} characters, over the limit of {self.limits.max_schema_chars}")
        return text


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


# -- names ------------------------------------------------------------------------------------------
_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]")
_ASCII_IDENT = re.compile(r"[A-Za-z_][0-9A-Za-z_]*\Z")
#: module-level names of a generated module (its imports and constant) and every builtin: a class
#: of the same name would shadow what the annotations and defaults refer to
_MODULE_NAMES = frozenset({"dataclasses", "datetime", "decimal", "enum", "typing", "uuid", "msgspec", "SCHEMA"})
_RESERVED_CLASS_NAMES = _MODULE_NAMES | frozenset(dir(builtins))
#: field names a class body must not bind: the field constructor it calls after them, and the
#: builtins the annotations name (annotations resolve in the module first, then in the class, where
#: a field ``str = 'x'`` would turn every later ``str`` into the forward reference ``'x'``)
_ANNOTATION_BUILTINS = frozenset({"str", "int", "float", "bool", "bytes", "list", "dict", "frozenset"})
_RESERVED_FIELD_NAMES = frozenset({"dataclasses", "msgspec"}) | _ANNOTATION_BUILTINS
#: enum member names that would replace Enum's or str's own attributes
_RESERVED_MEMBER_NAMES = (
    frozenset({"name", "value", "mro"}) | frozenset(n for n in dir(str) if not n.startswith("_")) | _ANNOTATION_BUILTINS
)


def is_plain_identifier(name: str) -> bool:
    """An ASCII identifier that is no keyword, soft keyword or dunder-like name (``__x``)."""
    return (
        bool(_ASCII_IDENT.match(name))
        and not keyword.iskeyword(name)
        and not keyword.issoftkeyword(name)
        and not name.startswith("__")
    )


def _sanitize(name: str, prefix: str) -> str:
    s = _NOT_IDENT.sub("_", name)
    if not s or s[0].isdigit():
        s = prefix + s
    if keyword.iskeyword(s) or keyword.issoftkeyword(s):
        s += "_"
    if s.startswith("__"):  # class-private name mangling applies inside class bodies
        s = prefix + s
    return s


def _unique(base: str, used: Set[str]) -> str:
    name = base
    n = 2
    while name in used:
        name = f"{base}_{n}"
        n += 1
    used.add(name)
    return name


class Names:
    """Allocates the module's class names: sanitized, unique, clear of module names and builtins."""

    def __init__(self) -> None:
        self.used: Set[str] = set(_RESERVED_CLASS_NAMES)

    def class_name(self, *candidates: str) -> str:
        """The first candidate (sanitized) that is free, else the last one with a number."""
        cleaned = [_sanitize(c.lstrip("_") or "T", "T") for c in candidates if c] or ["T"]
        for c in cleaned:
            if c not in self.used:
                self.used.add(c)
                return c
        return _unique(cleaned[-1], self.used)


def field_attr(wire: str, used: Set[str]) -> str:
    """The attribute of a field named ``wire`` on the wire, unique in ``used`` (updated)."""
    base = wire if is_plain_identifier(wire) and wire not in _RESERVED_FIELD_NAMES else _sanitize(wire, "f")
    if base in _RESERVED_FIELD_NAMES:
        base += "_"
    return _unique(base, used)


def member_name(symbol: str, used: Set[str]) -> str:
    base = _sanitize(symbol, "V")
    if base.startswith("_"):  # _sunder_ and private names are not members
        base = "V" + base
    if base in _RESERVED_MEMBER_NAMES:
        base += "_"
    return _unique(base, used)


# -- the model --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Prim:
    """A leaf type. ``kind`` says how a schema default converts: null, bool, int, float, str,
    bytes, any, date, time-millis, time-micros, timestamp-millis, timestamp-micros,
    local-timestamp-millis, local-timestamp-micros, uuid, decimal."""

    code: str
    kind: str
    scale: int = 0


@dataclasses.dataclass(frozen=True)
class ListOf:
    item: "Type"


@dataclasses.dataclass(frozen=True)
class MapOf:
    key: "Type"
    value: "Type"


@dataclasses.dataclass(frozen=True)
class Opt:
    inner: "Type"


@dataclasses.dataclass(frozen=True)
class UnionOf:
    members: Tuple["Type", ...]


@dataclasses.dataclass(frozen=True)
class LiteralOf:
    values: Tuple[Any, ...]


@dataclasses.dataclass(eq=False)
class FieldSpec:
    attr: str
    wire: str
    type: "Type"
    has_default: bool = False
    default: Any = None


@dataclasses.dataclass(eq=False)
class ClassSpec:
    name: str
    schema_name: str
    fields: List[FieldSpec] = dataclasses.field(default_factory=list)
    used: Set[str] = dataclasses.field(default_factory=set)
    # wire names left out of the encoded record when None (JSON Schema optional properties that do
    # not take null): the class's __serdes_omit_none__, read by serdes.typed.to_dict
    omit_none: List[str] = dataclasses.field(default_factory=list)

    def add_field(self, wire: str, type_: "Type", has_default: bool = False, default: Any = None) -> FieldSpec:
        f = FieldSpec(field_attr(wire, self.used), wire, type_, has_default, default)
        self.fields.append(f)
        return f


@dataclasses.dataclass(eq=False)
class EnumSpec:
    name: str
    schema_name: str
    members: List[Tuple[str, str]] = dataclasses.field(default_factory=list)  # (attribute, value)

    def set_symbols(self, symbols: Sequence[str]) -> None:
        used: Set[str] = set()
        self.members = [(member_name(s, used), s) for s in symbols]


Type = Union[Prim, ListOf, MapOf, Opt, UnionOf, LiteralOf, ClassSpec, EnumSpec]

NONE = Prim("None", "null")
ANY = Prim("typing.Any", "any")
PRIMS = {
    "bool": Prim("bool", "bool"), "int": Prim("int", "int"), "float": Prim("float", "float"),
    "str": Prim("str", "str"), "bytes": Prim("bytes", "bytes"),
}


def union(members: Sequence[Type]) -> Type:
    """``Optional``/``Union`` of ``members`` (equal annotations once, ``None`` last)."""
    seen: List[Type] = []
    keys: Set[Any] = set()
    nullable = False
    for m in members:
        for part in (m.members if isinstance(m, UnionOf) else (m.inner,) if isinstance(m, Opt) else (m,)):
            if isinstance(m, Opt):
                nullable = True
            if part == NONE:
                nullable = True
                continue
            key = _key(part)
            if key not in keys:
                keys.add(key)
                seen.append(part)
    if not seen:
        return NONE
    if any(isinstance(s, Prim) and s.kind == "any" for s in seen):
        return ANY  # Any takes None too
    inner: Type = seen[0] if len(seen) == 1 else UnionOf(tuple(seen))
    return Opt(inner) if nullable else inner


def _key(t: Type) -> Any:
    """Equal for members that are the same annotation (a class: itself)."""
    if isinstance(t, (ClassSpec, EnumSpec)):
        return id(t)
    return annotation(t)


@dataclasses.dataclass(eq=False)
class Module:
    kind: str  # "an Avro schema", ...
    style: str
    classes: List[Union[ClassSpec, EnumSpec]] = dataclasses.field(default_factory=list)
    schema: Optional[str] = None


# -- source -----------------------------------------------------------------------------------------
def annotation(t: Type) -> str:
    if isinstance(t, (ClassSpec, EnumSpec)):
        return t.name
    if isinstance(t, Prim):
        return t.code
    if isinstance(t, ListOf):
        return f"list[{annotation(t.item)}]"
    if isinstance(t, MapOf):
        return f"dict[{annotation(t.key)}, {annotation(t.value)}]"
    if isinstance(t, Opt):
        return f"typing.Optional[{annotation(t.inner)}]"
    if isinstance(t, UnionOf):
        return f"typing.Union[{', '.join(annotation(m) for m in t.members)}]"
    return f"typing.Literal[{', '.join(repr(v) for v in t.values)}]"


class _NoDefault(Exception):
    pass


def _literal(v: Any) -> str:
    """Source of a scalar the generator made (never an arbitrary object)."""
    if v is None or isinstance(v, (bool, int, str, bytes)):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return f"decimal.Decimal({str(v)!r})"
    if isinstance(v, uuid.UUID):
        return f"uuid.UUID({str(v)!r})"
    if isinstance(v, datetime.datetime):
        tz = ", tzinfo=datetime.timezone.utc" if v.tzinfo is not None else ""
        return (f"datetime.datetime({v.year}, {v.month}, {v.day}, {v.hour}, {v.minute}, {v.second}, "
                f"{v.microsecond}{tz})")
    if isinstance(v, datetime.date):
        return f"datetime.date({v.year}, {v.month}, {v.day})"
    if isinstance(v, datetime.time):
        return f"datetime.time({v.hour}, {v.minute}, {v.second}, {v.microsecond})"
    raise TypeError(type(v))  # pragma: no cover - the converters make only the types above


_EPOCH = datetime.datetime(1970, 1, 1)


def _prim_value(t: Prim, v: Any) -> Any:
    k = t.kind
    if k == "any":
        return v
    if k == "null":
        if v is None:
            return v
    elif k == "bool":
        if isinstance(v, bool):
            return v
    elif k == "int":
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
    elif k == "float":
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    elif k == "str":
        if isinstance(v, str):
            return v
    elif k == "bytes":
        if isinstance(v, str):  # Avro: bytes and fixed defaults are strings of code points 0-255
            try:
                return v.encode("latin-1")
            except UnicodeEncodeError:
                pass
    elif k == "uuid":
        if isinstance(v, str):
            try:
                return uuid.UUID(v)
            except ValueError:
                pass
    elif k == "decimal":
        if isinstance(v, str):
            try:
                raw = v.encode("latin-1")
            except UnicodeEncodeError:
                raise _NoDefault from None
            return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-t.scale)
    elif isinstance(v, int) and not isinstance(v, bool):
        try:
            if k == "date":
                return datetime.date(1970, 1, 1) + datetime.timedelta(days=v)
            if k in ("time-millis", "time-micros"):
                us = v * 1000 if k == "time-millis" else v
                if 0 <= us < 86_400_000_000:
                    return (_EPOCH + datetime.timedelta(microseconds=us)).time()
            elif k.endswith(("timestamp-millis", "timestamp-micros")):
                us = v * 1000 if k.endswith("millis") else v
                dt = _EPOCH + datetime.timedelta(microseconds=us)
                return dt.replace(tzinfo=datetime.timezone.utc) if not k.startswith("local-") else dt
        except (OverflowError, ValueError):
            pass
    raise _NoDefault


def _default_code(t: Type, v: Any, depth: int, budget: Budget) -> str:
    """Source building the value ``v`` (a schema default, JSON) of type ``t``; :class:`_NoDefault`
    when ``v`` is not a value of ``t``."""
    budget.depth(depth, "a default value")
    if isinstance(t, Prim):
        return _literal(_prim_value(t, v))
    if isinstance(t, EnumSpec):
        for attr, value in t.members:
            if value == v:
                return f"{t.name}.{attr}"
        raise _NoDefault
    if isinstance(t, ClassSpec):
        if not isinstance(v, dict):
            raise _NoDefault
        args = []
        for f in t.fields:
            if f.wire in v:
                args.append(f"{f.attr}={_default_code(f.type, v[f.wire], depth + 1, budget)}")
            elif not f.has_default:
                raise _NoDefault
        if any(k not in {f.wire for f in t.fields} for k in v):
            raise _NoDefault
        return f"{t.name}({', '.join(args)})"
    if isinstance(t, ListOf):
        if not isinstance(v, list):
            raise _NoDefault
        return "[" + ", ".join(_default_code(t.item, x, depth + 1, budget) for x in v) + "]"
    if isinstance(t, MapOf):
        if not isinstance(v, dict):
            raise _NoDefault
        return "{" + ", ".join(
            f"{_default_code(t.key, k, depth + 1, budget)}: {_default_code(t.value, x, depth + 1, budget)}"
            for k, x in v.items()
        ) + "}"
    if isinstance(t, Opt):
        if v is None:
            return "None"
        return _default_code(t.inner, v, depth + 1, budget)
    if isinstance(t, UnionOf):
        for m in t.members:
            try:
                return _default_code(m, v, depth + 1, budget)
            except _NoDefault:
                continue
        raise _NoDefault
    if v in t.values and any(type(v) is type(x) for x in t.values):
        return _literal(v)
    raise _NoDefault


def default_source(t: Type, v: Any, where: str, budget: Budget) -> str:
    """:func:`_default_code`, with a :class:`CodegenError` naming ``where`` for a value not of ``t``."""
    try:
        return _default_code(t, v, 0, budget)
    except _NoDefault:
        raise CodegenError(f"the default of {where} is not a value of its type ({annotation(t)}): {_short(v)}") from None


def _is_plain_literal(code: str) -> bool:
    """An immutable scalar literal, free of names: it can be the class attribute itself."""
    try:
        v = ast.literal_eval(code)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return v is None or isinstance(v, (bool, int, float, str, bytes))


_MSGSPEC_REFUSED = re.compile(r'[\\"\x00-\x1f]')


def _field_lines(f: FieldSpec, style: str, budget: Budget, owner: str) -> str:
    ann = annotation(f.type)
    args: List[str] = []
    if f.has_default:
        code = default_source(f.type, f.default, f"field {f.wire!r} of {owner!r}", budget)
        if _is_plain_literal(code):
            args.append(f"default={code}")
        elif code == "[]":
            args.append("default_factory=list")
        elif code == "{}":
            args.append("default_factory=dict")
        else:  # a lambda: evaluated later, in the module's scope (not the class body's)
            args.append(f"default_factory=lambda: {code}")
    if f.attr != f.wire:  # the wire name, recorded where each style keeps it
        if style == "dataclass":
            args.append(f"metadata={{'serdes_name': {f.wire!r}}}")
        elif _MSGSPEC_REFUSED.search(f.wire):
            raise CodegenError(
                f"field {f.wire!r} of {owner!r}: msgspec refuses field names with a backslash, a double quote or a "
                "control character (the dataclass style takes any name)"
            )
        else:
            args.append(f"name={f.wire!r}")
    if not args:
        return f"    {f.attr}: {ann}"
    if len(args) == 1 and args[0].startswith("default="):
        return f"    {f.attr}: {ann} = {args[0][len('default='):]}"
    field_fn = "dataclasses.field" if style == "dataclass" else "msgspec.field"
    return f"    {f.attr}: {ann} = {field_fn}({', '.join(args)})"


def render(module: Module, budget: Budget) -> str:
    """The Python source of ``module``."""
    if module.style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {module.style!r}")
    body: List[str] = []
    uses: Set[str] = {"typing"}
    enums = [c for c in module.classes if isinstance(c, EnumSpec)]
    records = [c for c in module.classes if isinstance(c, ClassSpec)]
    if enums:
        uses.add("enum")
    for e in enums:
        lines = [f"class {e.name}(str, enum.Enum):",
                 f"    __serdes_name__: typing.ClassVar[str] = {e.schema_name!r}"]
        lines += [f"    {attr} = {value!r}" for attr, value in e.members]
        body.append("\n".join(lines))
    for c in records:
        if module.style == "dataclass":
            head = f"@dataclasses.dataclass(kw_only=True)\nclass {c.name}:"
            uses.add("dataclasses")
        else:
            head = f"class {c.name}(msgspec.Struct, kw_only=True):"
            uses.add("msgspec")
        lines = [head, f"    __serdes_name__: typing.ClassVar[str] = {c.schema_name!r}"]
        if c.omit_none:
            lines.append(f"    __serdes_omit_none__: typing.ClassVar[frozenset[str]] = frozenset({tuple(c.omit_none)!r})")
        lines += [_field_lines(f, module.style, budget, c.schema_name) for f in c.fields]
        body.append("\n".join(lines))
    text = "\n\n\n".join(body)
    for mod in ("datetime", "decimal", "uuid"):
        if f"{mod}." in text:
            uses.add(mod)
    imports = [f"import {m}" for m in sorted(uses - {"msgspec"})]
    if "msgspec" in uses:
        imports += ["", "import msgspec"]
    names = [c.name for c in module.classes]
    out = [
        f"# generated by serdes.codegen from {module.kind}; do not edit",
        "from __future__ import annotations",
        "",
        "\n".join(imports),
        "",
        f"__all__ = {names!r}",
    ]
    if module.schema is not None:
        out += ["", f"SCHEMA: str = {module.schema!r}"]
    out.append("")
    src = "\n".join(out)
    if text:
        src += "\n\n" + text + "\n"
    return src


def check_source(src: str) -> str:
    """Compile the generated source once: a generator bug must not hand the user code that fails."""
    try:
        compile(src, "<serdes.codegen>", "exec")
    except (SyntaxError, RecursionError, MemoryError, ValueError) as e:
        raise CodegenError(f"the generated module does not compile ({type(e).__name__}: {e})") from None
    return src
