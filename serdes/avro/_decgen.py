"""The Avro decoder generator.

For each (writer schema, reader schema) pair serdes generates one specialised Python function
that decodes a payload straight from ``bytes`` with an integer position: no ``BytesIO``, no
per-value dispatch on the schema, no schema resolution at read time. Its source is built here
(:class:`DecoderGenerator`), compiled once by :func:`serdes.avro._codegen.compile_decoder` and cached
by the deserializer per writer schema id. The same generator emits the *validator* of a writer
schema (:meth:`DecoderGenerator.validator_module`): the checks of the decoder, building nothing.

Semantics are fastavro's (the library confluent-kafka decodes with), reproduced decision by
decision: schema resolution uses fastavro's own ``match_schemas``/``match_types`` at build time,
logical types are keyed on the *writer* schema and applied through fastavro's
``LOGICAL_READERS`` table (so user-registered and confluent-registered logical types behave the
same), promotions follow ``maybe_promote``, reader defaults are returned as written in the schema.
Where a *reader* schema hits a fastavro resolution path that cannot be reproduced exactly,
:class:`~serdes.avro._generator.Unsupported` is raised; the deserializer then decodes that schema
pair with fastavro, but only after the generated validator for the writer schema has accepted the
payload.

What serdes does *stricter* than fastavro, on purpose ("garbage in never returns a value"):

* the payload must be consumed exactly; trailing bytes raise :class:`CorruptPayloadError`;
* a string/bytes length that is negative or longer than the bytes left, a varint longer than 10
  bytes, a union index or enum index out of range (fastavro indexes Python lists, so ``-1`` reads
  the last branch), an array or map block count larger than the bytes left raise
  :class:`CorruptPayloadError`.

Limits (:class:`serdes._limits.Limits`, checked before anything is allocated): the items of all
arrays and maps of one record, skipped ones included, are counted against ``max_items`` one block
at a time (a block of zero-byte items, ``array<null>``, costs no payload bytes, so this is what
bounds it); a recursive named type is entered at most ``max_depth`` levels deep; a schema nesting
deeper than ``max_schema_depth`` or with a name that is not an Avro name is refused at parse time
(:func:`serdes.avro._generator.parse`).

The generated code calls the helpers of :mod:`serdes.avro._runtime` (``DECODER_NAMESPACE``); a
value nested past :data:`~serdes.avro._generator.OUTLINE_LEVEL` blocks is decoded by a function of
its own, so any schema depth compiles.
"""

from __future__ import annotations

from decimal import Context
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from fastavro._read_common import SchemaResolutionError
from fastavro.const import AVRO_TYPES
from fastavro.read import LOGICAL_READERS

from .._errors import SchemaMismatchError
from .._limits import Limits
from ._generator import (
    COMPOSITE, FIELD_GROUP, Generator, Unsupported, is_raw_bytes, named_types, parse, type_of,
)
from ._runtime import DECODER_NAMESPACE, DecimalSpec, default_copier
from ._typed import EnumMembers, RecordMaker

_fa_match_schemas: Optional[Callable[..., Any]]
_fa_match_types: Optional[Callable[..., Any]]
try:  # fastavro's pure-Python resolution rules: the Cython reader implements the same ones
    from fastavro._read_py import match_schemas as _fa_match_schemas
    from fastavro._read_py import match_types as _fa_match_types
except Exception:  # pragma: no cover - fastavro layout change
    _fa_match_schemas = None
    _fa_match_types = None

__all__ = [
    "DecoderGenerator", "decimal_spec", "decoder_schemas", "enum_table", "is_plain_decimal", "logical_reader", "match_schemas",
    "typed_key", "typed_maker", "typed_symbols",
    "match_types", "promotion", "resolve_fields", "union_branch_name", "union_branch_reader", "union_mismatch",
]

# fastavro's built-in logical readers, captured at import: a table entry still pointing at one of
# these is inlined; anything else in the table (user- or confluent-registered) is called.
_BUILTIN_LOGICAL = {k: v for k, v in LOGICAL_READERS.items()}
_INLINE_LOGICAL = {
    # positional timedelta(days, seconds, microseconds, milliseconds): same value as the keyword
    # form fastavro uses, without keyword parsing (~30% faster per timestamp)
    "long-timestamp-millis": "_epoch + _td(0, 0, 0, {v})",
    "long-timestamp-micros": "_epoch + _td(0, 0, {v})",
    "long-local-timestamp-millis": "_epoch_naive + _td(0, 0, 0, {v})",
    "long-local-timestamp-micros": "_epoch_naive + _td(0, 0, {v})",
    "int-date": "_fromordinal({v} + _DAYS_SHIFT)",
    "string-uuid": "_UUID({v})",
}

_NUMERIC_PROMOTE = {("int", "float"), ("int", "double"), ("long", "float"), ("long", "double")}
_DECIMAL_KEYS = ("bytes-decimal", "fixed-decimal")
#: the most branches one union's ``if``/``elif`` chain tests (:meth:`DecoderGenerator.union_dispatch`)
UNION_CHAIN = 64
_PROMOTE_CODE = {"float": "float({v})", "encode": "{v}.encode()", "decode": "{v}.decode()"}


def _logical_key(schema: Any) -> Optional[str]:
    if not isinstance(schema, dict):
        return None
    lt = schema.get("logicalType")
    if lt:
        return f"{schema['type']}-{lt}"
    return None


# -- resolution decisions -------------------------------------------------------------------------
# fastavro's rules for reading a writer schema as a reader schema, as data: the generator emits code
# from them and the native lowering (serdes.avro._native_decoder) program nodes, so both decide alike.

def match_schemas(w: Any, r: Any, names: Dict[str, Any]) -> Any:
    """fastavro's ``match_schemas``: the reader schema ``w`` is read as (raises SchemaResolutionError)."""
    if _fa_match_schemas is None:  # pragma: no cover - fastavro layout change
        raise Unsupported("fastavro resolution rules unavailable")
    return _fa_match_schemas(w, r, names)


def match_types(w: Any, r: Any, names: Dict[str, Any]) -> bool:
    """fastavro's ``match_types``: whether writer schema ``w`` can be read as ``r``."""
    if _fa_match_types is None:  # pragma: no cover - fastavro layout change
        raise Unsupported("fastavro resolution rules unavailable")
    return bool(_fa_match_types(w, r, names))


def logical_reader(w: Any) -> Optional[Tuple[str, Any, bool]]:
    """How a value of writer schema ``w`` is finished by its logical type: ``(key, fn, builtin)``,
    ``fn`` from fastavro's ``LOGICAL_READERS``, ``builtin`` whether it is still fastavro's own;
    ``None``: no logical type, or none the table reads (then promotions apply)."""
    key = _logical_key(w)
    if key is None:
        return None
    fn = LOGICAL_READERS.get(key)
    if fn is None:
        return None
    return key, fn, fn is _BUILTIN_LOGICAL.get(key)


def typed_maker(makers: Mapping[str, Any], rt: Any, w: Any, r: Any) -> Any:
    """The typed-record maker (:mod:`serdes.avro._typed`) that finishes a value of writer schema
    ``w`` read as ``r``: keyed by the reader's full name (the writer's without a reader)."""
    if not makers or rt not in ("record", "error", "enum"):
        return None
    name = r.get("name") if isinstance(r, dict) else r if isinstance(r, str) else w.get("name")
    return makers.get(name) if isinstance(name, str) else None


def typed_symbols(maker: Any, table: List[Optional[str]]) -> List[Any]:
    """An enum's symbol table with a typed record's enum members in place of the symbols."""
    if not isinstance(maker, EnumMembers):
        return table
    return [None if s is None else maker.members[s] for s in table]


def typed_key(maker: Any, name: str) -> str:
    """A record field's key: its attribute name in a typed record."""
    if isinstance(maker, RecordMaker):
        return maker.attribute_of.get(name, name)
    return name


def is_plain_decimal(key: str, w: Any) -> bool:
    """A decimal whose precision and scale are ints (precision > 0): built without fastavro's reader."""
    return key in _DECIMAL_KEYS and type(w.get("precision")) is int and type(w.get("scale", 0)) is int \
        and w["precision"] > 0


def decimal_spec(w: Any, where: str) -> DecimalSpec:
    """The bounds of plain decimal ``w`` (:func:`is_plain_decimal`) at ``where`` (for messages)."""
    return DecimalSpec(w["precision"], w.get("scale", 0), where)


def promotion(rt: str, r: Any) -> Optional[str]:
    """The promotion of a value of writer type ``rt`` read as ``r``: ``"float"``, ``"encode"``
    (string to bytes), ``"decode"`` (bytes to string) or ``None``."""
    if r is None:
        return None
    rr = type_of(r)
    if (rt, rr) in _NUMERIC_PROMOTE:
        return "float"
    if rt == "string" and rr == "bytes":
        return "encode"
    if rt == "bytes" and rr == "string":
        return "decode"
    return None


def enum_table(syms: List[str], r: Any) -> List[Optional[str]]:
    """The value each writer symbol index reads as against reader enum ``r`` (falsy: none): the
    symbol when the reader has it, else the reader's default, else ``None`` (a read error)."""
    if not r:
        return list(syms)
    if not isinstance(r, dict) or "symbols" not in r:
        raise Unsupported("enum reader")
    rsyms = r["symbols"]
    default = r.get("default")
    return [s if s in rsyms else (default if default else None) for s in syms]


def resolve_fields(w: Any, r: Any) -> Iterator[Tuple[Any, Any]]:
    """Writer record ``w`` read as reader record ``r``, field by field in fastavro's order: each
    writer field with the reader field it is read into (``None``: skipped), then ``(None, field)``
    for each reader field no writer field fills (its default, or a mismatch)."""
    if not isinstance(r, dict) or "fields" not in r:
        raise Unsupported("record reader")
    readers: Dict[str, Any] = {}
    aliases: Dict[str, Any] = {}
    for f in r["fields"]:
        readers[f["name"]] = f
        for a in f.get("aliases", []):
            aliases[a] = f
    for f in w["fields"]:
        rf = readers.get(f["name"], aliases.get(f["name"]))
        if rf:
            if rf["name"] not in readers:
                raise Unsupported("reader field matched twice")
            del readers[rf["name"]]
            yield f, rf
        else:
            yield f, None
    for f in list(readers.values()):
        yield None, f


def union_branch_reader(branch: Any, r: Any, names: Dict[str, Any]) -> Optional[Tuple[Any, Any]]:
    """What writer union ``branch`` is read as against reader ``r`` (first match, fastavro's rule):
    ``(reader schema, matched reader-union branch or None)``; ``None`` when nothing matches."""
    if not isinstance(r, list):
        return (r, None) if match_types(branch, r, names) else None
    for rb in r:
        if match_types(branch, rb, names):
            return rb, rb
    return None


#: the most characters of each schema a union-mismatch message shows (:func:`union_mismatch`)
MISMATCH_SCHEMA_CHARS = 2000


def _plain(s: Any) -> Any:
    """A parsed schema without fastavro's bookkeeping (``__named_schemas`` repeats every named
    type in every named type: shown, a union of n records takes n**2 characters)."""
    if isinstance(s, dict):
        return {k: _plain(v) for k, v in s.items() if k not in ("__fastavro_parsed", "__named_schemas")}
    if isinstance(s, list):
        return [_plain(x) for x in s]
    return s


def union_mismatch(w: Any, r: Any) -> str:
    """The message of a writer union branch the reader schema has no match for (fastavro's
    words), each schema cut at :data:`MISMATCH_SCHEMA_CHARS` characters: one message is made per
    union, whatever its size."""
    def shown(x: Any) -> str:
        text = str(_plain(x))
        return text if len(text) <= MISMATCH_SCHEMA_CHARS else text[:MISMATCH_SCHEMA_CHARS] + "..."

    return f"schema mismatch: {shown(w)} not found in {shown(r)}"


def union_branch_name(
    branch: Any, idx_reader: Any, writer_named: Dict[str, Any], reader_named: Dict[str, Any],
) -> Optional[str]:
    """With ``return_record_name``: the record name a union branch's value is tagged with (``None``:
    not a named type)."""
    brt = type_of(branch)
    try:
        if brt == "record":
            return idx_reader["name"] if idx_reader else branch["name"]  # type: ignore[no-any-return]
        if brt not in AVRO_TYPES:
            return reader_named[idx_reader]["name"] if idx_reader else writer_named[branch]["name"]  # type: ignore[no-any-return]
    except Exception as err:
        raise Unsupported(f"return_record_name lookup: {err}") from None
    return None


def decoder_schemas(writer: Any, reader: Any, limits: Limits, check_names: bool = True) -> Tuple[Any, Any]:
    """The parsed (writer, reader) pair to generate a decoder for; reader ``None`` when it is
    absent or equal to the writer (no resolution)."""
    writer = parse(writer, "writer", limits, check_names)
    if reader is not None:
        reader = parse(reader, "reader", limits, check_names)
        if writer == reader:
            reader = None
    return writer, reader


class DecoderGenerator(Generator):
    """Emits the decoder of parsed ``writer`` resolved against parsed ``reader`` (``None``: none),
    or the validator of ``writer``.

    Emitting methods: ``read`` (decode a value into a local), ``skip`` (step over it with every
    check of ``read``); ``eager_errors`` collects the resolution errors on a path every record
    takes (the schema pair can never be read).
    """

    def __init__(
        self, writer: Any, reader: Any, return_record_name: bool, limits: Limits,
        makers: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(DECODER_NAMESPACE, limits)
        self.writer, self.reader = writer, reader
        # typed records (serdes.avro._typed): the function that finishes each named record/enum
        self.makers = makers or {}
        self.collect_named(writer)
        self.reader_named: Dict[str, Any] = {}
        if reader is not None:
            named_types(reader, self.reader_named, {})
        # what fastavro's match_schemas / match_types look named types up in
        self.resolution_names = {"writer": self.named, "reader": self.reader_named}
        self.return_record_name = return_record_name
        self.ns["_MAXI"] = limits.max_items
        self.ns["_MAXD"] = limits.max_depth
        self.eager_errors: List[str] = []
        # value depth of the code being emitted, relative to the function it is emitted into
        self.depth = 0
        # False while emitting the entry function (whose depth is 0 and which has no _d)
        self.in_outlined = False
        # the entry function uses the items budget _n (blocks or outlined calls)
        self.uses_budget = False
        # the record fields around the code being emitted (for messages)
        self.field_path: List[str] = []

    # -- the modules ------------------------------------------------------------------------------
    def _entry(self, sig: str, body: List[str], tail: List[str]) -> str:
        head = ["    _n = _MAXI"] if self.uses_budget else []
        return self.module_source([sig] + head + body + tail)

    def decoder_module(self, with_ctx: bool, has_from_dict: bool) -> str:
        """``decode(data, pos, ctx=None)`` (``decode(data, pos=0)`` without ``with_ctx``), returning
        the value of ``data[pos:]`` (through ``from_dict(v, ctx)`` with ``has_from_dict``)."""
        body: List[str] = []
        if is_raw_bytes(self.writer):
            body.append("    v = data[pos:]")
            body.append("    if type(v) is not _bytes:")
            body.append("        v = _bytes(v)")
        else:
            body.append("    if type(data) is not _bytes:")
            body.append("        data = _bytes(data)")
            # the length check in the entry function reads data after the bytes() conversion
            body.append("    _end = len(data)")
            self.read(body, "    ", self.writer, self.reader, "v", False)
            body.append("    if pos != len(data):")
            body.append("        raise _trailing(data, pos)")
        tail = ["    return from_dict(v, ctx)" if with_ctx and has_from_dict else "    return v"]
        sig = "def decode(data, pos, ctx=None):" if with_ctx else "def decode(data, pos=0):"
        return self._entry(sig, body, tail)

    def validator_module(self) -> str:
        """``validate(data, pos)``: raises unless ``data[pos:]`` is exactly one value of the writer
        schema within the limits (the writer schema is not ``"bytes"``)."""
        body = ["    if type(data) is not _bytes:", "        data = _bytes(data)", "    _end = len(data)"]
        self.skip(body, "    ", self.writer)
        body.append("    if pos != len(data):")
        body.append("        raise _trailing(data, pos)")
        return self._entry("def validate(data, pos):", body, ["    return pos"])

    # -- emitting helpers -------------------------------------------------------------------------
    def mismatch(self, out: List[str], ind: str, msg: str, cond: bool) -> None:
        if not cond:
            self.eager_errors.append(msg)
        out.append(f"{ind}raise _Mismatch({msg!r})")

    def depth_arg(self) -> str:
        """The value depth at the current emission point, as an expression."""
        if not self.in_outlined:
            return repr(self.depth)
        return f"_d + {self.depth}" if self.depth else "_d"

    def outline(self, fname: str, emit: Callable[[List[str]], None], ret: str, depth_check: bool) -> None:
        """Add ``def fname(data, pos, _n, _d)`` whose body ``emit`` writes at one indentation level,
        returning ``ret``; ``_d`` is the value depth at the call, ``_n`` the items budget left."""
        body: List[str] = ["    _end = len(data)"]
        if depth_check:
            body.append("    if _d > _MAXD:")
            body.append("        raise _too_deep(_MAXD)")
        saved = (self.depth, self.in_outlined)
        self.depth, self.in_outlined = 0, True
        try:
            emit(body)
        finally:
            self.depth, self.in_outlined = saved
        self.add_function(fname, "data, pos, _n, _d", body, ret)

    def union_dispatch(
        self, out: List[str], ind: str, raw: str, n: int, emit: Callable[[int, List[str], str], None],
    ) -> None:
        """Emit the choice of an ``n``-branch union on ``raw`` (the zigzag-encoded index just read):
        ``emit(idx, body, ind)`` appends branch ``idx``'s code at ``ind``; an index out of range
        raises ``_bad_union``. Up to :data:`UNION_CHAIN` branches are one ``if``/``elif`` chain;
        a larger union is first checked for range, then split into nested ranges of at most
        :data:`UNION_CHAIN` tests each (Python's compiler recurses once per ``elif``: a chain of a
        thousand overflows its stack, a tree of chains is only log(n) deep)."""
        if n <= UNION_CHAIN:
            for idx in range(n):
                out.append(f"{ind}{'if' if idx == 0 else 'elif'} {raw} == {idx * 2!r}:")
                self._union_branch(out, ind + "    ", idx, emit)
            out.append(f"{ind}else:")
            out.append(f"{ind}    raise _bad_union({raw}, {n!r})")
            return
        # a valid index is even (not negative) and below 2 * n
        out.append(f"{ind}if {raw} & 1 or {raw} >= {2 * n!r}:")
        out.append(f"{ind}    raise _bad_union({raw}, {n!r})")
        self._union_range(out, ind, raw, 0, n, emit)

    def _union_range(
        self, out: List[str], ind: str, raw: str, lo: int, hi: int, emit: Callable[[int, List[str], str], None],
    ) -> None:
        """Branches ``lo <= idx < hi`` of a union whose index is known to be in that range, as the
        body of the block just opened."""
        if hi - lo == 1:
            self._union_branch(out, ind, lo, emit)
            return
        step = 1
        while step * UNION_CHAIN < hi - lo:
            step *= UNION_CHAIN
        starts = list(range(lo, hi, step))
        for k, start in enumerate(starts):
            end = min(start + step, hi)
            if k == len(starts) - 1:
                out.append(f"{ind}else:")
            elif step == 1:
                out.append(f"{ind}{'if' if k == 0 else 'elif'} {raw} == {start * 2!r}:")
            else:
                out.append(f"{ind}{'if' if k == 0 else 'elif'} {raw} < {end * 2!r}:")
            self._union_range(out, ind + "    ", raw, start, end, emit)

    @staticmethod
    def _union_branch(out: List[str], ind: str, idx: int, emit: Callable[[int, List[str], str], None]) -> None:
        """Branch ``idx``'s code, the body of the block just opened (``pass`` when it has none)."""
        body: List[str] = []
        emit(idx, body, ind)
        out.extend(body if body else [f"{ind}pass"])

    def call(self, out: List[str], ind: str, fname: str, target: Optional[str]) -> None:
        self.uses_budget = True
        lhs = f"{target}, pos, _n" if target is not None else "pos, _n"
        out.append(f"{ind}{lhs} = {fname}(data, pos, _n, {self.depth_arg()})")

    def resolved_type(self, w: Any) -> Any:
        rt = type_of(w)
        if isinstance(rt, str) and rt not in AVRO_TYPES and rt in self.named:
            return type_of(self.named[rt])
        return rt

    def read_long(self, out: List[str], ind: str, t: str) -> None:
        out.append(f"{ind}{t} = data[pos]")
        out.append(f"{ind}if {t} < 128:")
        out.append(f"{ind}    pos += 1")
        out.append(f"{ind}    {t} = ({t} >> 1) ^ -({t} & 1)")
        # multi-byte varints are inlined (same semantics as serdes._varint.read_zigzag_tail): a call plus a tuple per long
        # cost more than the loop itself
        out.append(f"{ind}else:")
        out.append(f"{ind}    {t} &= 0x7F")
        out.append(f"{ind}    _s = 7")
        out.append(f"{ind}    pos += 1")
        out.append(f"{ind}    while True:")
        out.append(f"{ind}        _b = data[pos]")
        out.append(f"{ind}        pos += 1")
        out.append(f"{ind}        {t} |= (_b & 0x7F) << _s")
        out.append(f"{ind}        _s += 7")
        out.append(f"{ind}        if _s > 70:")
        out.append(f"{ind}            raise _varint_too_long()")
        out.append(f"{ind}        if _b < 128:")
        out.append(f"{ind}            break")
        out.append(f"{ind}    {t} &= 0xFFFFFFFFFFFFFFFF")
        out.append(f"{ind}    {t} = ({t} >> 1) ^ -({t} & 1)")

    def read_len(self, out: List[str], ind: str, t: str) -> None:
        """A string/bytes length, checked against the bytes left before anything is sliced."""
        self.read_long(out, ind, t)
        out.append(f"{ind}if not 0 <= {t} <= _end - pos:")
        out.append(f"{ind}    raise _badlen({t}, _end - pos)")

    def read_raw(self, out: List[str], ind: str, t: str) -> None:
        out.append(f"{ind}{t} = data[pos]")
        out.append(f"{ind}if {t} < 128:")
        out.append(f"{ind}    pos += 1")
        out.append(f"{ind}else:")
        out.append(f"{ind}    {t}, pos = _ru(data, pos)")

    @staticmethod
    def min_size(schema: Any, named: Dict[str, Any], seen: Optional[Set[Any]] = None) -> int:
        """Lower bound of the encoded size (0 or 1 is all that matters)."""
        t = type_of(schema)
        if t == "null":
            return 0
        if t in ("record", "error", "request"):
            seen = set() if seen is None else seen
            if id(schema) in seen:
                return 1
            seen.add(id(schema))
            return 1 if any(DecoderGenerator.min_size(f["type"], named, seen) for f in schema["fields"]) else 0
        if t == "fixed":
            return 1 if schema["size"] > 0 else 0
        if t in AVRO_TYPES:
            return 1
        if t in named:
            seen = set() if seen is None else seen
            if t in seen:
                return 1
            seen.add(t)
            return DecoderGenerator.min_size(named[t], named, seen)
        return 1

    def open_blocks(self, out: List[str], ind: str, c: str, item_min: int) -> str:
        """Emit the block loop of an array or map up to (not including) ``for _ in range(count):``;
        returns the block loop's indentation.

        A negative count is followed by the block's byte size, which is read and ignored: items
        are always walked, so nested blocks are checked too. Each block's count is charged to the
        record's items budget, and (for items of at least one byte) compared with the bytes left,
        before the loop runs.
        """
        self.uses_budget = True
        self.read_long(out, ind, c)
        out.append(f"{ind}while {c}:")
        i2 = ind + "    "
        out.append(f"{i2}if {c} < 0:")
        out.append(f"{i2}    {c} = -{c}")
        self.read_long(out, i2 + "    ", self.fresh("bs"))
        out.append(f"{i2}_n -= {c}")
        out.append(f"{i2}if _n < 0:")
        out.append(f"{i2}    raise _too_many(_MAXI)")
        if item_min:
            out.append(f"{i2}if {c} > _end - pos:")
            out.append(f"{i2}    raise _big({c}, _end - pos)")
        return i2

    def fixed_size(self, w: Any) -> int:
        size = w.get("size") if isinstance(w, dict) else None
        if type(size) is not int or size < 0:
            raise SchemaMismatchError(f"fixed {w.get('name')!r} has an invalid size {size!r}")
        return size

    # -- read -------------------------------------------------------------------------------------
    def read(self, out: List[str], ind: str, w: Any, r: Any, t: str, cond: bool) -> None:
        """Emit code that decodes writer schema ``w`` (resolved against ``r``) into variable ``t``."""
        if self.needs_outline(ind) and self.resolved_type(w) in COMPOSITE:
            fname = self.fresh("_lvl")
            self.outline(fname, lambda body: self.read(body, "    ", w, r, "v", cond), "v, pos, _n", False)
            self.call(out, ind, fname, t)
            return
        rt = type_of(w)
        if r:
            try:
                r = match_schemas(w, r, self.resolution_names)
            except SchemaResolutionError as err:
                self.mismatch(out, ind, str(err), cond)
                return
        if rt not in AVRO_TYPES:
            if not isinstance(rt, str) or rt not in self.named:
                raise SchemaMismatchError(f"unknown named type {rt!r} in the writer schema")
            rnext = None
            if r:
                if not isinstance(r, str):
                    # fastavro looks the reader up with named_schemas["reader"].get(r): unhashable
                    raise Unsupported("reader schema for a named reference is not a name")
                rnext = self.reader_named.get(r)
            self.read(out, ind, self.named[rt], rnext, t, cond)
            return
        if rt == "null":
            out.append(f"{ind}{t} = None")
        elif rt == "boolean":
            out.append(f"{ind}{t} = data[pos] != 0")
            out.append(f"{ind}pos += 1")
        elif rt in ("int", "long"):
            self.read_long(out, ind, t)
        elif rt == "float":
            out.append(f"{ind}{t}, = _uf(data, pos)")
            out.append(f"{ind}pos += 4")
        elif rt == "double":
            out.append(f"{ind}{t}, = _ud(data, pos)")
            out.append(f"{ind}pos += 8")
        elif rt in ("string", "bytes"):
            e = self.fresh("e")
            self.read_len(out, ind, e)
            out.append(f"{ind}{e} += pos")
            if rt == "string":
                out.append(f"{ind}{t} = data[pos:{e}].decode()")
            else:
                out.append(f"{ind}{t} = data[pos:{e}]")
            out.append(f"{ind}pos = {e}")
        elif rt == "fixed":
            size = self.fixed_size(w)
            out.append(f"{ind}{t} = data[pos:pos + {size!r}]")
            out.append(f"{ind}pos += {size!r}")
        elif rt == "enum":
            self.read_enum(out, ind, w, r, t, cond)
        elif rt == "array":
            self.depth += 1
            try:
                self.read_array(out, ind, w, r, t)
            finally:
                self.depth -= 1
        elif rt == "map":
            self.depth += 1
            try:
                self.read_map(out, ind, w, r, t)
            finally:
                self.depth -= 1
        elif rt in ("union", "error_union"):
            self.read_union(out, ind, w, r, t)
        elif rt in ("record", "error", "request"):
            self.read_record_ref(out, ind, w, r, t, cond)
        else:  # pragma: no cover
            raise Unsupported(rt)

        maker = typed_maker(self.makers, rt, w, r)
        if isinstance(maker, RecordMaker):
            out.append(f"{ind}{t} = {self.const(maker.make, 'mk')}({t})")
            return
        logical = logical_reader(w)
        if logical is not None:
            key, fn, builtin = logical
            if builtin and key in _INLINE_LOGICAL:
                out.append(f"{ind}{t} = " + _INLINE_LOGICAL[key].format(v=t))
            elif builtin and is_plain_decimal(key, w):
                self.read_decimal(out, ind, key, w, t)
            else:
                fnn = self.const(fn, "lfn")
                wn = self.const(w, "ws")
                rn = self.const(r, "rs")
                out.append(f"{ind}{t} = {fnn}({t}, {wn}, {rn})")
            return
        promote = promotion(rt, r)
        if promote is not None:
            out.append(f"{ind}{t} = " + _PROMOTE_CODE[promote].format(v=t))

    def read_decimal(self, out: List[str], ind: str, key: str, w: Any, t: str) -> None:
        """Bytes ``t`` as the Decimal fastavro builds, once its length (``bytes`` decimals: the
        payload chooses it) and its digits are within the precision (:class:`DecimalSpec`)."""
        spec = decimal_spec(w, self.where())
        ctxn = self.const(Context(prec=w["precision"]), "dctx")
        scale = self.const(-w.get("scale", 0), "scale")
        if key == "bytes-decimal":
            out.append(f"{ind}if len({t}) > {spec.max_len!r}:")
            out.append(f"{ind}    raise {self.const(spec.too_long, 'dlong')}(len({t}))")
        out.append(f"{ind}{t} = int.from_bytes({t}, 'big', signed=True)")
        if spec.eager:
            bound = self.const(spec.bound, "dbound")
            out.append(f"{ind}if not -{bound} < {t} < {bound}:")
            out.append(f"{ind}    raise {self.const(spec.too_many_digits, 'ddigits')}()")
        else:
            out.append(f"{ind}{t} = {self.const(spec.check, 'dcheck')}({t})")
        # nothing rounds: the value has at most precision digits
        out.append(f"{ind}{t} = {ctxn}.create_decimal({t}).scaleb({scale}, {ctxn})")

    def where(self) -> str:
        """The field being emitted, for messages: ``field 'a.b'`` (``the value``: not in a record)."""
        return f"field {'.'.join(self.field_path)!r}" if self.field_path else "the value"

    def read_enum(self, out: List[str], ind: str, w: Any, r: Any, t: str, cond: bool) -> None:
        syms = w["symbols"]
        resolved = typed_symbols(typed_maker(self.makers, "enum", w, r), enum_table(syms, r))
        table: Dict[int, Any] = {index: s for index, s in enumerate(resolved) if s is not None}
        missing = bool(r) and None in resolved
        tn = self.const(table, "enum")
        i = self.fresh("i")
        self.read_long(out, ind, i)
        if not missing:
            out.append(f"{ind}{t} = {tn}.get({i})")
            out.append(f"{ind}if {t} is None:")
            out.append(f"{ind}    raise _bad_enum({i}, {len(syms)!r})")
        else:
            symn = self.const(tuple(syms), "syms")
            rsn = self.const(list(r["symbols"]), "rsyms")
            rnn = self.const(r.get("name"), "rname")
            out.append(f"{ind}{t} = {tn}.get({i})")
            out.append(f"{ind}if {t} is None:")
            out.append(f"{ind}    raise _enum_miss({symn}, {i}, {rsn}, {rnn})")

    def read_array(self, out: List[str], ind: str, w: Any, r: Any, t: str) -> None:
        items = w["items"]
        ritems = r["items"] if r else None
        lst = self.fresh("l")
        c = self.fresh("c")
        x = self.fresh("x")
        out.append(f"{ind}{lst} = []")
        i2 = self.open_blocks(out, ind, c, self.min_size(items, self.named))
        out.append(f"{i2}for _ in range({c}):")
        self.read(out, i2 + "    ", items, ritems, x, True)
        out.append(f"{i2}    {lst}.append({x})")
        self.read_long(out, i2, c)
        out.append(f"{ind}{t} = {lst}")

    def read_map(self, out: List[str], ind: str, w: Any, r: Any, t: str) -> None:
        values = w["values"]
        rvalues = r["values"] if r else None
        d = self.fresh("m")
        c = self.fresh("c")
        x = self.fresh("x")
        k = self.fresh("key")
        out.append(f"{ind}{d} = {{}}")
        i2 = self.open_blocks(out, ind, c, 1)
        out.append(f"{i2}for _ in range({c}):")
        i3 = i2 + "    "
        self.read(out, i3, "string", None, k, True)
        self.read(out, i3, values, rvalues, x, True)
        out.append(f"{i3}{d}[{k}] = {x}")
        self.read_long(out, i2, c)
        out.append(f"{ind}{t} = {d}")

    def read_union(self, out: List[str], ind: str, w: Any, r: Any, t: str) -> None:
        raw = self.fresh("u")
        self.read_raw(out, ind, raw)
        mismatch: List[str] = []  # the constant holding the message of a branch with no match

        def emit(idx: int, body: List[str], i2: str) -> None:
            branch = w[idx]
            idx_reader = None
            if r:
                found = union_branch_reader(branch, r, self.resolution_names)
                if found is None:
                    # one constant for every such branch: the message shows the union, and a
                    # copy per branch would make the source grow with the square of its size
                    if not mismatch:
                        mismatch.append(self.const(union_mismatch(w, r), "mm"))
                    body.append(f"{i2}raise _Mismatch({mismatch[0]})")
                    return
                rb, idx_reader = found
                self.read(body, i2, branch, rb, t, True)
            else:
                self.read(body, i2, branch, None, t, True)
            if self.return_record_name:
                name = union_branch_name(branch, idx_reader, self.named, self.reader_named)
                if name is not None:
                    body.append(f"{i2}{t} = ({self.const(name, 'rn')}, {t})")

        self.union_dispatch(out, ind, raw, len(w), emit)

    def named_record(
        self, out: List[str], ind: str, w: Any, key: Any, prefix: str, target: Optional[str],
        emit_inline: Callable[[], None], emit_body: Callable[[List[str]], None], ret: str, keep: Any = None,
    ) -> None:
        """Emit record ``w`` inline (``emit_inline``), or, when its name is used more than once or
        recursively, as a call of the one function written for ``key`` (``emit_body`` its body,
        returning ``ret``; its result assigned to ``target``). ``keep`` is kept alive with the
        function (an object whose ``id`` is part of ``key``)."""
        name = w.get("name")
        if name is None or (self.uses.get(name, 0) <= 1 and name not in self.building):
            with self.emitting(name):
                emit_inline()
            return
        fname = self.function_names.get(key)
        if fname is None:
            fname = self.fresh(prefix)
            self.function_names[key] = fname
            if keep is not None:
                self.ns[f"{fname}_r"] = keep
            # the one function serves every use: messages name its fields from the record's name
            saved, self.field_path = self.field_path, [str(name)]
            try:
                with self.emitting(name):
                    self.outline(fname, emit_body, ret, True)
            finally:
                self.field_path = saved
        self.call(out, ind, fname, target)

    def read_record_ref(self, out: List[str], ind: str, w: Any, r: Any, t: str, cond: bool) -> None:
        self.named_record(
            out, ind, w, (w.get("name"), id(r) if r is not None else None), "_rec", t,
            lambda: self.read_record(out, ind, w, r, t, cond),
            lambda body: self.read_record(body, "    ", w, r, "rec", True), "rec, pos, _n", keep=r,
        )

    def read_record(self, out: List[str], ind: str, w: Any, r: Any, t: str, cond: bool) -> None:
        self.depth += 1
        try:
            self._read_record(out, ind, w, r, t, cond)
        finally:
            self.depth -= 1

    def _read_record(self, out: List[str], ind: str, w: Any, r: Any, t: str, cond: bool) -> None:
        # the writer's fields in order, each read into a reader field (its name, the reader type)
        # or skipped (name None); then the reader's own fields: a default, or a mismatch
        steps: List[Tuple[Optional[str], Any, Any]] = []
        maker = typed_maker(self.makers, "record", w, r)
        tail: List[Tuple[str, str]] = []
        mismatches: List[str] = []
        default_items = 0
        if not r:
            steps = [(f["name"], f["type"], None) for f in w["fields"]]
        else:
            for f, rf in resolve_fields(w, r):
                if f is None:
                    if "default" in rf:
                        copier, items = default_copier(rf["default"])
                        default_items += items
                        if copier is not None:
                            tail.append((rf["name"], f"{self.const(copier, 'dcopy')}()"))
                        else:
                            tail.append((rf["name"], self.const(rf["default"], "dflt")))
                    else:
                        tail.append((rf["name"], "None"))
                        mismatches.append(f"No default value for field {rf['name']} in {r.get('name')}")
                elif rf is None:
                    steps.append((None, f["type"], None))
                else:
                    steps.append((rf["name"], f["type"], rf["type"]))
        parts: List[str] = []
        if len(steps) <= FIELD_GROUP:
            pairs = self.read_fields(out, ind, steps, cond)
            parts = [f"{typed_key(maker, k)!r}: {v}" for k, v in pairs]
        else:
            # a wide record: groups of fields, each read by a function of its own returning its
            # part of the record, so no generated function grows with the schema
            for at in range(0, len(steps), FIELD_GROUP):
                group = steps[at:at + FIELD_GROUP]
                fname = self.fresh("_fg")
                gv = self.fresh("g")

                def emit(body: List[str], group: Any = group) -> None:
                    pairs = self.read_fields(body, "    ", group, cond)
                    body.append("    g = {" + ", ".join(f"{typed_key(maker, k)!r}: {v}" for k, v in pairs) + "}")

                self.outline(fname, emit, "g, pos, _n", False)
                self.call(out, ind, fname, gv)
                parts.append(f"**{gv}")
        for msg in mismatches:
            self.mismatch(out, ind, msg, cond)
        if default_items:
            # the items of the defaults' copies count against the budget like decoded ones
            self.uses_budget = True
            out.append(f"{ind}_n -= {default_items!r}")
            out.append(f"{ind}if _n < 0:")
            out.append(f"{ind}    raise _too_many(_MAXI)")
        # field names are repr() literals: the dict display stays a literal (fast), and a name
        # can only ever be a string constant in the code
        parts.extend(f"{typed_key(maker, k)!r}: {v}" for k, v in tail)
        out.append(f"{ind}{t} = {{" + ", ".join(parts) + "}")

    def read_fields(
        self, out: List[str], ind: str, steps: List[Tuple[Optional[str], Any, Any]], cond: bool,
    ) -> List[Tuple[str, str]]:
        """Emit the reads (name set) and skips (name ``None``) of ``steps``; the (name, local) pairs read."""
        pairs: List[Tuple[str, str]] = []
        for name, wt, rt in steps:
            if name is None:
                self.skip(out, ind, wt)
                continue
            v = self.fresh()
            self.field_path.append(str(name))
            try:
                self.read(out, ind, wt, rt, v, cond)
            finally:
                self.field_path.pop()
            pairs.append((name, v))
        return pairs

    # -- skip -------------------------------------------------------------------------------------
    def skip(self, out: List[str], ind: str, w: Any) -> None:
        """Emit code that steps over writer schema ``w``, with every check and limit of ``read``."""
        rt = type_of(w)
        if rt not in AVRO_TYPES:
            if not isinstance(rt, str) or rt not in self.named:
                raise SchemaMismatchError(f"unknown named type {rt!r} in the writer schema")
            w = self.named[rt]
            rt = type_of(w)
        if rt == "null":
            return
        if self.needs_outline(ind) and rt in COMPOSITE:
            fname = self.fresh("_lvs")
            self.outline(fname, lambda body: self.skip(body, "    ", w), "pos, _n", False)
            self.call(out, ind, fname, None)
            return
        if rt == "boolean":
            out.append(f"{ind}pos += 1")
        elif rt in ("int", "long"):
            self.read_long(out, ind, self.fresh("s"))
        elif rt == "enum":
            s = self.fresh("s")
            self.read_long(out, ind, s)
            out.append(f"{ind}if not 0 <= {s} < {len(w['symbols'])!r}:")
            out.append(f"{ind}    raise _bad_enum({s}, {len(w['symbols'])!r})")
        elif rt == "float":
            out.append(f"{ind}pos += 4")
        elif rt == "double":
            out.append(f"{ind}pos += 8")
        elif rt in ("string", "bytes"):
            n = self.fresh("s")
            self.read_len(out, ind, n)
            out.append(f"{ind}pos += {n}")
        elif rt == "fixed":
            out.append(f"{ind}pos += {self.fixed_size(w)!r}")
        elif rt in ("array", "map"):
            c = self.fresh("c")
            inner = w["items"] if rt == "array" else w["values"]
            i2 = self.open_blocks(out, ind, c, 1 if rt == "map" else self.min_size(inner, self.named))
            body: List[str] = []
            self.depth += 1
            try:
                if rt == "map":
                    self.skip(body, i2 + "    ", "string")
                self.skip(body, i2 + "    ", inner)
            finally:
                self.depth -= 1
            if body:  # zero-byte items need no loop: their count was charged to the budget
                out.append(f"{i2}for _ in range({c}):")
                out.extend(body)
            self.read_long(out, i2, c)
        elif rt in ("union", "error_union"):
            raw = self.fresh("u")
            self.read_raw(out, ind, raw)
            self.union_dispatch(out, ind, raw, len(w), lambda idx, body, i2: self.skip(body, i2, w[idx]))
        elif rt in ("record", "error", "request"):
            self.named_record(
                out, ind, w, ("skip", w.get("name")), "_skip", None, lambda: self.skip_fields(out, ind, w),
                lambda body: self.skip_fields(body, "    ", w), "pos, _n",
            )
        else:  # pragma: no cover
            raise Unsupported(rt)

    def skip_fields(self, out: List[str], ind: str, w: Any) -> None:
        self.depth += 1
        try:
            fields = w["fields"]
            if len(fields) <= FIELD_GROUP:
                for f in fields:
                    self.skip(out, ind, f["type"])
                return
            for at in range(0, len(fields), FIELD_GROUP):  # a wide record: as _read_record
                group = fields[at:at + FIELD_GROUP]

                def emit(body: List[str], group: Any = group) -> None:
                    for f in group:
                        self.skip(body, "    ", f["type"])

                fname = self.fresh("_sg")
                self.outline(fname, emit, "pos, _n", False)
                self.call(out, ind, fname, None)
        finally:
            self.depth -= 1

