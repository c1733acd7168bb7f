"""Avro encoder code generation.

One generated function per writer schema appends the encoding of a value to a ``bytearray`` that
starts with the frame prefix, checking every value the way ``fastavro.validation.validate`` does
(ints and longs in range and not ``bool``, floats accept ints but not ``bool``, strings are ``str``,
bytes are ``bytes``/``bytearray``, fixed has its exact size, enum symbols exist, map keys are
``str``). fastavro's ``schemaless_writer`` does not validate: it writes ``1.7`` into an int field
as ``1`` and ``2**40`` as a 6-byte varint a Java reader rejects. serdes raises
:class:`serdes.ValidationError` naming the field instead.

Covered: records, all primitives, enums, fixed, arrays, maps, ``[null, X]`` unions, named
references, logical types (through fastavro's ``LOGICAL_WRITERS``, so conversions are fastavro's).
Anything else (general unions, recursive types, ``validate.strict``), and any value the generated
code does not take (a tuple-notation union value, say), goes to fastavro: ``validate`` then
``schemaless_writer``, so the result is still fastavro's bytes or a ValidationError.

The schema is untrusted when it comes from the registry (``use.latest.version``,
``use.latest.with.metadata``, ``use.schema.id``): its names are checked against the Avro
specification first, no schema string reaches the source except as a ``repr()`` literal or a
namespace constant, a value nested past ``_OUTLINE_LEVEL`` blocks is encoded by a function of its
own (any depth compiles), and the source is checked and compiled by
:func:`serdes.avro._exec.compile_generated` (any failure is a :class:`SchemaMismatchError`).
"""

from __future__ import annotations

import array
import io
import numbers
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, List, Optional, Tuple

from fastavro import parse_schema, schemaless_writer
from fastavro.const import AVRO_TYPES
from fastavro.validation import ValidationError as _FaValidationError
from fastavro.validation import validate as _fa_validate
from fastavro.write import LOGICAL_WRITERS

from .._errors import SchemaMismatchError, ValidationError
from .._varint import write_zigzag
from .._limits import DEFAULT_LIMITS, Limits
from ._exec import compile_generated
from ._schema_check import check_schema

__all__ = ["compile_encoder", "check_value"]

_INT = (-(2**31), 2**31 - 1)
_LONG = (-(2**63), 2**63 - 1)
# block-nesting level (indentation / 4) from which a composite value gets its own function
_OUTLINE_LEVEL = 8


class _Slow(Exception):
    """This value needs fastavro's general path."""


def _bad(path: str, v: Any, expected: str) -> ValidationError:
    return ValidationError(f"{path} is <{v!r:.80}> of type {type(v).__name__}, expected {expected}")


def _chk_int(v: Any, path: str, lo: int, hi: int, expected: str) -> int:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool) and lo <= v <= hi:
        return int(v)
    raise _bad(path, v, expected)


def _chk_float(v: Any, path: str) -> float:
    if isinstance(v, (int, float, numbers.Real)) and not isinstance(v, bool):
        return float(v)
    raise _bad(path, v, "float/double")


def _chk_seq(v: Any, path: str) -> Any:
    if isinstance(v, (Sequence, array.array)) and not isinstance(v, (str, bytes)):
        return v
    raise _bad(path, v, "array")


_NS: Dict[str, Any] = {
    "_bad": _bad,
    "_chk_int": _chk_int,
    "_chk_float": _chk_float,
    "_chk_seq": _chk_seq,
    "_wl": write_zigzag,
    "_pf": struct.Struct("<f").pack,
    "_pd": struct.Struct("<d").pack,
    "_Slow": _Slow,
    "_VErr": ValidationError,
    "_str": str,
    "_bytes": bytes,
    "_bytearray": bytearray,
    "_int": int,
    "_float": float,
    "_list": list,
    "_tuple": tuple,
    "_dict": dict,
    "_Mapping": Mapping,
    "_NOV": object(),
    "_Exception": Exception,
}


class _Unsupported(Exception):
    pass


class _EGen:
    def __init__(self, schema: Any) -> None:
        self.named: Dict[str, Any] = {}
        self.ns = dict(_NS)
        self.n = 0
        self.stack: List[str] = []
        self.funcs: List[str] = []

    def var(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def const(self, v: Any, p: str = "k") -> str:
        name = self.var("_" + p)
        self.ns[name] = v
        return name

    def write_long(self, out: List[str], ind: str, v: str) -> None:
        out.append(f"{ind}if -64 <= {v} < 64:")
        out.append(f"{ind}    buf.append((({v} << 1) ^ ({v} >> 63)) & 0x7F)")
        out.append(f"{ind}else:")
        out.append(f"{ind}    _wl(buf, {v})")

    def emit(self, out: List[str], ind: str, s: Any, v: str, path: str) -> None:
        t = s["type"] if isinstance(s, dict) else ("union" if isinstance(s, list) else s)
        if isinstance(t, str) and t not in AVRO_TYPES:
            if t not in self.named:
                raise _Unsupported(f"unknown type {t}")
            if t in self.stack:
                raise _Unsupported("recursive type")
            self.emit(out, ind, self.named[t], v, path)
            return
        if isinstance(s, dict) and s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
            self.named.setdefault(s["name"], s)
        if len(ind) >= 4 * _OUTLINE_LEVEL and t in ("array", "map", "union", "record", "error"):
            # Python allows 20 nested blocks per function: deeper values get their own function
            fname = self.var("_lvl")
            body: List[str] = []
            self.emit(body, "    ", s, "v", path)
            self.funcs.append(f"def {fname}(buf, v):\n" + "\n".join(body) + "\n")
            out.append(f"{ind}{fname}(buf, {v})")
            return
        lkey = None
        if isinstance(s, dict) and s.get("logicalType"):
            lkey = f"{t}-{s['logicalType']}"
            fn = LOGICAL_WRITERS.get(lkey)
            if fn is not None:
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
            b = self.var("b")
            out.append(f"{ind}if not isinstance({v}, _str):")
            out.append(f"{ind}    raise _bad({p}, {v}, 'string')")
            out.append(f"{ind}{b} = {v}.encode()")
            out.append(f"{ind}_wl(buf, len({b}))")
            out.append(f"{ind}buf += {b}")
        elif t == "bytes":
            out.append(f"{ind}if not isinstance({v}, (_bytes, _bytearray)):")
            out.append(f"{ind}    raise _bad({p}, {v}, 'bytes')")
            out.append(f"{ind}_wl(buf, len({v}))")
            out.append(f"{ind}buf += {v}")
        elif t == "fixed":
            size = s.get("size")
            if type(size) is not int or size < 0:
                raise _Unsupported("fixed size")
            out.append(f"{ind}if not isinstance({v}, (_bytes, _bytearray)) or len({v}) != {size!r}:")
            out.append(f"{ind}    raise _bad({p}, {v}, {f'fixed[{size}]'!r})")
            out.append(f"{ind}buf += {v}")
        elif t == "enum":
            table = self.const({sym: i for i, sym in enumerate(s["symbols"])}, "enum")
            i = self.var("i")
            out.append(f"{ind}{i} = {table}.get({v}) if type({v}) is _str else None")
            out.append(f"{ind}if {i} is None:")
            out.append(f"{ind}    raise _bad({p}, {v}, {('enum ' + str(s['symbols']))!r})")
            self.write_long(out, ind, i)
        elif t == "array":
            x = self.var("x")
            out.append(f"{ind}if type({v}) is not _list and type({v}) is not _tuple:")
            out.append(f"{ind}    {v} = _chk_seq({v}, {p})")
            out.append(f"{ind}if {v}:")
            out.append(f"{ind}    _wl(buf, len({v}))")
            out.append(f"{ind}    for {x} in {v}:")
            self.emit(out, ind + "        ", s["items"], x, path + "[]")
            out.append(f"{ind}buf.append(0)")
        elif t == "map":
            k, x, kb = self.var("k"), self.var("x"), self.var("kb")
            out.append(f"{ind}if not isinstance({v}, _Mapping):")
            out.append(f"{ind}    raise _bad({p}, {v}, 'map')")
            out.append(f"{ind}if {v}:")
            out.append(f"{ind}    _wl(buf, len({v}))")
            out.append(f"{ind}    for {k}, {x} in {v}.items():")
            i3 = ind + "        "
            out.append(f"{i3}if type({k}) is not _str:")
            out.append(f"{i3}    raise _bad({p} + ' key', {k}, 'string')")
            out.append(f"{i3}{kb} = {k}.encode()")
            out.append(f"{i3}_wl(buf, len({kb}))")
            out.append(f"{i3}buf += {kb}")
            self.emit(out, i3, s["values"], x, path + "{}")
            out.append(f"{ind}buf.append(0)")
        elif t == "union":
            others = [b for b in s if b != "null"]
            if len(s) != 2 or len(others) != 1:
                raise _Unsupported("general union")
            other = others[0]
            null_idx = s.index("null")
            out.append(f"{ind}if {v} is None:")
            out.append(f"{ind}    buf.append({null_idx * 2!r})")
            out.append(f"{ind}elif type({v}) is _tuple:")
            out.append(f"{ind}    raise _Slow")  # tuple notation: fastavro's general path
            out.append(f"{ind}else:")
            out.append(f"{ind}    buf.append({(1 - null_idx) * 2!r})")
            self.emit(out, ind + "    ", other, v, path)
        elif t in ("record", "error"):
            name = s["name"]
            self.stack.append(name)
            out.append(f"{ind}if type({v}) is not _dict and not isinstance({v}, _Mapping):")
            out.append(f"{ind}    raise _bad({p}, {v}, {('record ' + str(name))!r})")
            if not s["fields"]:
                pass
            for f in s["fields"]:
                fv = self.var("f")
                fpath = f"{path}.{f['name']}"
                if "default" in f:
                    out.append(f"{ind}{fv} = {v}.get({f['name']!r}, {self.const(f['default'], 'd')})")
                else:
                    out.append(f"{ind}{fv} = {v}.get({f['name']!r}, _NOV)")
                    out.append(f"{ind}if {fv} is _NOV:")
                    out.append(f"{ind}    raise _VErr({('no value and no default for ' + fpath)!r})")
                self.emit(out, ind, f["type"], fv, fpath)
            self.stack.pop()
        else:
            raise _Unsupported(str(t))


def check_value(parsed: Any, obj: Any, strict: bool = False) -> None:
    """Raise :class:`ValidationError` (with the field path) unless ``obj`` validates against ``parsed``."""
    try:
        _fa_validate(obj, parsed, raise_errors=True, strict=strict)
    except _FaValidationError as e:
        raise ValidationError(f"value does not match the schema: {'; '.join(map(str, e.errors)) or e}") from None
    except Exception as e:  # noqa: BLE001 - validate itself choked on the value
        raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}") from None


def _slow_encoder(parsed: Any, prefix: bytes, strict: bool, strict_allow_default: bool) -> Callable[[Any], bytes]:
    def slow(obj: Any) -> bytes:
        check_value(parsed, obj, strict)
        fo = io.BytesIO()
        fo.write(prefix)
        try:
            schemaless_writer(fo, parsed, obj, strict=strict, strict_allow_default=strict_allow_default)
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
            raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}") from None
        return fo.getvalue()

    return slow


def encoder_source(parsed: Any, with_to_dict: bool, limits: Limits = DEFAULT_LIMITS,
                   role: str = "serializer's") -> Optional[Tuple[str, Dict[str, Any]]]:
    """The generated encoder's source and the namespace constants it reads (``PREFIX``, ``slow`` and
    ``to_dict`` are bound by the caller) for a parsed, checked non-``bytes`` schema; ``None`` when
    the generator declines the schema (the encoder is fastavro's)."""
    gen = _EGen(parsed)
    body: List[str] = []
    try:
        gen.emit(body, "        ", parsed, "obj", parsed.get("name", "value") if isinstance(parsed, dict) else "value")
    except _Unsupported:
        return None
    except RecursionError:  # only with serdes.max.schema.depth set far above its default
        raise SchemaMismatchError(
            f"the {role} schema nests too deep to generate code for "
            f"(serdes.max.schema.depth={limits.max_schema_depth})"
        ) from None
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
    return "\n".join(gen.funcs + src) + "\n", gen.ns


def compile_encoder(
    schema: Any,
    prefix: bytes = b"",
    strict: bool = False,
    strict_allow_default: bool = False,
    to_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    role: str = "serializer's",
) -> Callable[[Any, Any], bytes]:
    """``encode(obj, ctx) -> prefix + payload`` for ``schema`` (already parsed or not).

    Raises :class:`SchemaMismatchError` when a name in ``schema`` is not an Avro name, the schema
    nests deeper than ``limits.max_schema_depth``, or the generated encoder cannot be built;
    ``role`` says whose schema it is in that message ("serializer's", "registry").
    """
    check_schema(schema, role, limits.max_schema_depth)
    try:
        parsed = parse_schema(schema)
    except RecursionError:
        raise SchemaMismatchError(f"the {role} schema nests too deep to parse") from None
    slow = _slow_encoder(parsed, prefix, strict, strict_allow_default)
    if parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes"):
        # confluent-kafka writes a "bytes" schema as the raw value (str is UTF-8 encoded)
        def encode_raw(obj: Any, ctx: Any) -> bytes:
            if to_dict is not None:
                obj = to_dict(obj, ctx)
            if isinstance(obj, (bytes, bytearray)):
                return prefix + bytes(obj)
            if isinstance(obj, str):
                return prefix + obj.encode()
            raise _bad("bytes", obj, "bytes")

        return encode_raw
    generated = None
    if not (strict or strict_allow_default):
        generated = encoder_source(parsed, to_dict is not None, limits, role)
    if generated is None:
        if to_dict is None:
            return lambda obj, ctx=None: slow(obj)
        return lambda obj, ctx=None: slow(to_dict(obj, ctx))
    code, ns = generated
    ns.update(PREFIX=prefix, slow=slow, to_dict=to_dict)
    return compile_generated(code, "encoder", ns, "encode")
