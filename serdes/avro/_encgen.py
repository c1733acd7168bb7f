"""The Avro encoder generator.

One generated function per writer schema appends the encoding of a value to a ``bytearray`` that
starts with the frame prefix, checking every value the way ``fastavro.validation.validate`` does
(ints and longs in range and not ``bool``, floats accept ints but not ``bool``, strings are ``str``,
bytes are ``bytes``/``bytearray``, fixed has its exact size, enum symbols exist, map keys are
``str``) -- and taking what fastavro's writer takes where it is drop-in for confluent-kafka: ``str``
subclass instances (``enum.StrEnum`` members) as strings, map keys and enum symbols (looked up by
their contents), a flat ``memoryview`` for bytes and fixed outside unions (inside one, fastavro's
branch choice refuses it). Each check tests the exact type first. fastavro's ``schemaless_writer`` does not validate: it writes ``1.7`` into an int field
as ``1`` and ``2**40`` as a 6-byte varint a Java reader rejects. serdes raises
:class:`serdes.ValidationError` naming the field instead.

Covered: records, all primitives, enums, fixed, arrays, maps, ``[null, X]`` unions, named
references, logical types (through fastavro's ``LOGICAL_WRITERS``, so conversions are fastavro's).
Anything else (general unions, recursive types) makes :func:`encoder_source` decline the schema,
and any value the generated code does not take (a tuple-notation union value, say) makes it call
``slow``: either way the encoder is fastavro's (``validate`` then ``schemaless_writer``, see
:func:`serdes.avro._codegen.compile_encoder`), so the result is still fastavro's bytes or a
ValidationError.

The schema is untrusted when it comes from the registry (``use.latest.version``,
``use.latest.with.metadata``, ``use.schema.id``): it is parsed by
:func:`serdes.avro._generator.parse` (names checked against the Avro specification first), no
schema string reaches the source except as a ``repr()`` literal or a namespace constant, and a
value nested past :data:`~serdes.avro._generator.OUTLINE_LEVEL` blocks is encoded by a function of
its own (any depth compiles). The generated code calls the helpers of :mod:`serdes.avro._runtime`
(``ENCODER_NAMESPACE``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from fastavro.const import AVRO_TYPES
from fastavro.write import LOGICAL_WRITERS

from .._limits import DEFAULT_LIMITS, Limits
from ._generator import COMPOSITE, FIELD_GROUP, Generator, Unsupported, too_deep_to_build, type_of
from ._runtime import ENCODER_NAMESPACE, DecimalSpec

__all__ = [
    "DECIMAL_KEYS", "EncoderGenerator", "encoder_source", "enum_indexes", "fixed_size", "has_default", "is_reference",
    "logical_writer", "named_definition", "null_branch",
]

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)
#: the logical types whose values are checked against the schema's precision before fastavro writes them
DECIMAL_KEYS = ("bytes-decimal", "fixed-decimal")


# -- the encoding decisions, shared with the native encoder's lowering (_native_encoder) ----------
def is_reference(t: Any) -> bool:
    """Whether type ``t`` (:func:`type_of`) names a named type rather than being one."""
    return isinstance(t, str) and t not in AVRO_TYPES


def named_definition(t: str, named: Dict[str, Any]) -> Any:
    """The definition of the named type ``t`` refers to (``named``: :func:`named_types`')."""
    if t not in named:
        raise Unsupported(f"unknown type {t}")
    return named[t]


def logical_writer(s: Any) -> Optional[Tuple[str, Callable[[Any, Any], Any]]]:
    """``(key, prepare)``: fastavro's writer of the logical type at ``s``, called as
    ``prepare(value, s)`` before the value is written as ``s``'s base type; ``None``: no logical
    type fastavro converts (the value is written as it is)."""
    if isinstance(s, dict) and s.get("logicalType"):
        key = f"{type_of(s)}-{s['logicalType']}"
        fn = LOGICAL_WRITERS.get(key)
        if fn is not None:
            return key, fn
    return None


def fixed_size(s: Any) -> int:
    """The size of fixed type ``s``: an int (not a bool), not negative."""
    size = s.get("size")
    if type(size) is not int or size < 0:
        raise Unsupported("fixed size")
    return size


def enum_indexes(symbols: Any) -> Dict[Any, int]:
    """symbol -> the index written for it."""
    return {sym: i for i, sym in enumerate(symbols)}


def null_branch(s: List[Any]) -> Optional[int]:
    """The index of ``"null"`` in a ``[null, X]`` / ``[X, null]`` union; ``None`` for any other
    union (a general one: fastavro's ``write_union`` chooses the branch)."""
    others = [b for b in s if b != "null"]
    if len(s) != 2 or len(others) != 1:
        return None
    return s.index("null")


class EncoderGenerator(Generator):
    """Emits the encoder of a parsed schema: ``write`` appends a value's encoding to ``buf``."""

    def __init__(self, schema: Any, limits: Limits) -> None:
        super().__init__(ENCODER_NAMESPACE, limits)
        self.collect_named(schema)
        #: how many unions the value being written is inside (its bytes/fixed take no memoryview)
        self.in_union = 0

    def write_long(self, out: List[str], ind: str, v: str) -> None:
        out.append(f"{ind}if -64 <= {v} < 64:")
        out.append(f"{ind}    buf.append((({v} << 1) ^ ({v} >> 63)) & 0x7F)")
        out.append(f"{ind}else:")
        out.append(f"{ind}    _wl(buf, {v})")

    def write(self, out: List[str], ind: str, s: Any, v: str, path: str) -> None:
        t = type_of(s)
        if is_reference(t):
            definition = named_definition(t, self.named)
            if t in self.building:
                raise Unsupported("recursive type")
            self.write(out, ind, definition, v, path)
            return
        if self.needs_outline(ind) and t in COMPOSITE:
            # Python allows 20 nested blocks per function: deeper values get their own function
            fname = self.fresh("_lvl")
            body: List[str] = []
            self.write(body, "    ", s, "v", path)
            self.add_function(fname, "buf, v", body)
            out.append(f"{ind}{fname}(buf, {v})")
            return
        logical = logical_writer(s)
        if logical is not None:
            lkey, fn = logical
            if lkey in DECIMAL_KEYS:
                plain = type(s.get("precision")) is int and type(s.get("scale", 0)) is int and s["precision"] > 0
                if plain:
                    spec = DecimalSpec(s["precision"], s.get("scale", 0), path)
                    out.append(f"{ind}{v} = {self.const(spec.check_encode, 'dchk')}({v}, {path!r})")
            out.append(f"{ind}{v} = {self.const(fn, 'lw')}({v}, {self.const(s, 'ls')})")
        p = repr(path)
        if t == "null":
            out.append(f"{ind}if {v} is not None:")
            out.append(f"{ind}    raise _bad({p}, {v}, 'null')")
        elif t == "boolean":
            out.append(f"{ind}if {v} is True:")
            out.append(f"{ind}    buf.append(1)")
            out.append(f"{ind}elif {v} is False:")
            out.append(f"{ind}    buf.append(0)")
            out.append(f"{ind}else:")
            out.append(f"{ind}    raise _bad({p}, {v}, 'boolean')")
        elif t in ("int", "long"):
            lo, hi = _INT if t == "int" else _LONG
            out.append(f"{ind}if type({v}) is not _int or not {lo!r} <= {v} <= {hi!r}:")
            out.append(f"{ind}    {v} = _chk_int({v}, {p}, {lo!r}, {hi!r}, {t!r})")
            self.write_long(out, ind, v)
        elif t in ("float", "double"):
            out.append(f"{ind}if type({v}) is not _float:")
            out.append(f"{ind}    {v} = _chk_float({v}, {p})")
            out.append(f"{ind}buf += {'_pf' if t == 'float' else '_pd'}({v})")
        elif t == "string":
            b = self.fresh("b")
            out.append(f"{ind}if not isinstance({v}, _str):")
            out.append(f"{ind}    raise _bad({p}, {v}, 'string')")
            out.append(f"{ind}{b} = {v}.encode()")
            out.append(f"{ind}_wl(buf, len({b}))")
            out.append(f"{ind}buf += {b}")
        elif t == "bytes":
            out.append(f"{ind}if not isinstance({v}, (_bytes, _bytearray)):")
            out.append(f"{ind}    {v} = _chk_bytes({v}, {p}, 'bytes', {self.in_union > 0!r})")
            out.append(f"{ind}_wl(buf, len({v}))")
            out.append(f"{ind}buf += {v}")
        elif t == "fixed":
            size = fixed_size(s)
            expected = f"fixed[{size}]"
            out.append(f"{ind}if not isinstance({v}, (_bytes, _bytearray)):")
            out.append(f"{ind}    {v} = _chk_bytes({v}, {p}, {expected!r}, {self.in_union > 0!r})")
            out.append(f"{ind}if len({v}) != {size!r}:")
            out.append(f"{ind}    raise _bad({p}, {v}, {expected!r})")
            out.append(f"{ind}buf += {v}")
        elif t == "enum":
            table = self.const(enum_indexes(s["symbols"]), "enum")
            i = self.fresh("i")
            # a str subclass (an enum.StrEnum member) is looked up by its contents, as fastavro does
            out.append(f"{ind}{i} = {table}.get({v}) if type({v}) is _str else _enum_sub({table}, {v})")
            out.append(f"{ind}if {i} is None:")
            out.append(f"{ind}    raise _bad({p}, {v}, {('enum ' + str(s['symbols']))!r})")
            self.write_long(out, ind, i)
        elif t == "array":
            x = self.fresh("x")
            out.append(f"{ind}if type({v}) is not _list and type({v}) is not _tuple:")
            out.append(f"{ind}    {v} = _chk_seq({v}, {p})")
            n = self.fresh("n")
            out.append(f"{ind}if {v}:")
            out.append(f"{ind}    {n} = len({v})")
            out.append(f"{ind}    _wl(buf, {n})")
            out.append(f"{ind}    for {x} in {v}:")
            self.write(out, ind + "        ", s["items"], x, path + "[]")
            # a prepare function resized the list while its items were written: the count written
            # first would be wrong (fastavro's general path decides)
            out.append(f"{ind}    if len({v}) != {n}:")
            out.append(f"{ind}        raise _Slow")
            out.append(f"{ind}buf.append(0)")
        elif t == "map":
            k, x, kb = self.fresh("k"), self.fresh("x"), self.fresh("kb")
            out.append(f"{ind}if not isinstance({v}, _Mapping):")
            out.append(f"{ind}    raise _bad({p}, {v}, 'map')")
            out.append(f"{ind}if {v}:")
            out.append(f"{ind}    _wl(buf, len({v}))")
            out.append(f"{ind}    for {k}, {x} in {v}.items():")
            i3 = ind + "        "
            out.append(f"{i3}if type({k}) is not _str and not isinstance({k}, _str):")
            out.append(f"{i3}    raise _bad({p} + ' key', {k}, 'string')")
            out.append(f"{i3}{kb} = {k}.encode()")
            out.append(f"{i3}_wl(buf, len({kb}))")
            out.append(f"{i3}buf += {kb}")
            self.write(out, i3, s["values"], x, path + "{}")
            out.append(f"{ind}buf.append(0)")
        elif t == "union":
            null_idx = null_branch(s)
            if null_idx is None:
                raise Unsupported("general union")
            other = s[1 - null_idx]
            out.append(f"{ind}if {v} is None:")
            out.append(f"{ind}    buf.append({null_idx * 2!r})")
            out.append(f"{ind}elif type({v}) is _tuple:")
            out.append(f"{ind}    raise _Slow")  # tuple notation: fastavro's general path
            out.append(f"{ind}else:")
            out.append(f"{ind}    buf.append({(1 - null_idx) * 2!r})")
            # fastavro chooses a union's branch with validate, which refuses a memoryview anywhere
            # inside the value
            self.in_union += 1
            try:
                self.write(out, ind + "    ", other, v, path)
            finally:
                self.in_union -= 1
        elif t in ("record", "error"):
            name = s["name"]
            with self.emitting(name):
                self.write_record(out, ind, s, v, path, name)
        else:
            raise Unsupported(str(t))


    def write_record(self, out: List[str], ind: str, s: Any, v: str, path: str, name: str) -> None:
        p = repr(path)
        out.append(f"{ind}if type({v}) is not _dict and not isinstance({v}, _Mapping):")
        out.append(f"{ind}    raise _bad({p}, {v}, {('record ' + str(name))!r})")
        fields = s["fields"]
        if len(fields) > FIELD_GROUP:
            # a wide record: groups of fields, each written by a function of its own (as the
            # decoder generator splits them), so no generated function grows with the schema
            for at in range(0, len(fields), FIELD_GROUP):
                fname = self.fresh("_fg")
                body: List[str] = []
                self.write_fields(body, "    ", fields[at:at + FIELD_GROUP], "v", path)
                self.add_function(fname, "buf, v", body)
                out.append(f"{ind}{fname}(buf, {v})")
            return
        self.write_fields(out, ind, fields, v, path)

    def write_fields(self, out: List[str], ind: str, fields: List[Any], v: str, path: str) -> None:
        for f in fields:
            fv = self.fresh("f")
            fpath = f"{path}.{f['name']}"
            if has_default(f):
                out.append(f"{ind}{fv} = {v}.get({f['name']!r}, {self.const(f['default'], 'd')})")
            else:
                out.append(f"{ind}{fv} = {v}.get({f['name']!r}, _NOV)")
                out.append(f"{ind}if {fv} is _NOV:")
                out.append(f"{ind}    raise _VErr({('no value and no default for ' + fpath)!r})")
            self.write(out, ind, f["type"], fv, fpath)


def has_default(field: Any) -> bool:
    """The field's value may be missing from a record (its ``default`` is written then)."""
    return "default" in field


def encoder_source(parsed: Any, with_to_dict: bool, limits: Limits = DEFAULT_LIMITS,
                   role: str = "serializer's") -> Optional[Tuple[str, Dict[str, Any]]]:
    """The generated encoder's source and the namespace constants it reads (``PREFIX``, ``slow`` and
    ``to_dict`` are bound by the caller) for a parsed, checked non-``bytes`` schema; ``None`` when
    the generator declines the schema (the encoder is fastavro's)."""
    body: List[str] = []
    try:
        gen = EncoderGenerator(parsed, limits)
        gen.write(body, "        ", parsed, "obj", parsed.get("name", "value") if isinstance(parsed, dict) else "value")
    except Unsupported:
        return None
    except RecursionError:
        raise too_deep_to_build(limits, role) from None
    src = ["def encode(obj, ctx=None):"]
    if with_to_dict:
        src.append("    obj = to_dict(obj, ctx)")
    src.append("    buf = _bytearray(PREFIX)")
    src.append("    try:")
    src.extend(body)
    src.append("    except _VErr:")
    src.append("        raise")
    src.append("    except _Exception:")
    src.append("        return slow(obj)")  # fastavro's path: its bytes, or a ValidationError
    src.append("    return _bytes(buf)")
    return gen.module_source(src), gen.ns
