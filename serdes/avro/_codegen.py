"""Compile API of the Avro code generators: schema in, checked and compiled function out.

* :func:`compile_decoder` — ``decode(data, pos, ctx)`` for a (writer, reader) pair
  (:class:`~serdes.avro._decgen.DecoderGenerator`); raises :class:`Unsupported` for a reader schema
  whose fastavro resolution the generator does not reproduce;
* :func:`compile_validator` — ``validate(data, pos)``: the checks and limits of a decoder, building
  nothing, run before fastavro decodes a pair :func:`compile_decoder` declined;
* :func:`compile_encoder` — ``encode(obj, ctx) -> prefix + payload``
  (:class:`~serdes.avro._encgen.EncoderGenerator`), falling back to fastavro (:func:`check_value`
  then ``schemaless_writer``) for the schemas and values the generator declines.

Every schema is parsed by :func:`serdes.avro._generator.parse` (names and depth checked first) and
every source compiled by :func:`serdes.avro._exec.compile_generated` (checked, then registered with
``linecache`` under a per-source filename). What generated code calls is in
:mod:`serdes.avro._runtime`; :func:`serdes.avro.generated_source` shows the source.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional, Tuple

from fastavro import schemaless_writer
from fastavro.validation import ValidationError as _FaValidationError
from fastavro.validation import validate as _fa_validate

from .. import _bigstack
from .._errors import SchemaMismatchError, ValidationError
from .._limits import DEFAULT_LIMITS, Limits
from ._decgen import DecoderGenerator, decoder_schemas
from ._encgen import encoder_source
from ._exec import compile_generated
from ._generator import Unsupported, is_raw_bytes, named_types, parse, too_deep_to_build, type_of
from ._generator import is_raw_bytes as _is_raw_bytes  # the name serdes.avro._deserializer imports
from ._runtime import _bad, flat_bytes_view

__all__ = [
    "Unsupported", "_is_raw_bytes", "check_value", "compile_decoder", "compile_encoder", "compile_validator", "encoder_source",
    "generated_source",
]


def _decoder(
    writer: Any, reader: Any, return_record_name: bool, with_ctx: bool, has_from_dict: bool, limits: Limits,
    check_resolution: bool, makers: Optional[Mapping[str, Any]] = None,
) -> Tuple[str, Dict[str, Any]]:
    """The decoder's source and namespace; with ``check_resolution``, SchemaMismatchError when the
    writer schema can never be read with the reader schema."""
    try:
        writer, reader = decoder_schemas(writer, reader, limits)
        gen = DecoderGenerator(writer, reader, return_record_name, limits, makers)
        src = gen.decoder_module(with_ctx, has_from_dict)
    except RecursionError:
        raise too_deep_to_build(limits) from None
    if check_resolution and gen.eager_errors:
        raise SchemaMismatchError("writer schema cannot be read with the reader schema: " + "; ".join(gen.eager_errors))
    return src, gen.ns


def generated_source(
    writer: Any, reader: Any = None, return_record_name: bool = False, limits: Limits = DEFAULT_LIMITS,
    check_resolution: bool = False,
) -> str:
    """The source :func:`compile_decoder` compiles for a schema pair (with ``ctx``, no ``from_dict``);
    ``check_resolution`` raises as :func:`compile_decoder` does for a pair that can never be read.
    Users call :func:`serdes.avro.generated_source`."""
    return _decoder(writer, reader, return_record_name, True, False, limits, check_resolution)[0]


def compile_decoder(
    writer: Any,
    reader: Any = None,
    return_record_name: bool = False,
    from_dict: Optional[Callable[[Any, Any], Any]] = None,
    with_ctx: bool = True,
    limits: Limits = DEFAULT_LIMITS,
) -> Callable[..., Any]:
    """Compile a decoder for payloads written with ``writer``, read as ``reader``.

    Returns ``decode(data, pos, ctx)`` (``decode(data, pos=0)`` when ``with_ctx`` is false) that
    returns the value decoded from ``data[pos:]``, which must be consumed exactly.

    Raises:
        SchemaMismatchError: a schema has a name that is not an Avro name or nests deeper than
            ``limits.max_schema_depth``, the generated code cannot be built, or the writer schema
            can never be read with the reader schema (a resolution error on a path every record
            takes).
        Unsupported: the reader schema takes a fastavro resolution path the generator does not
            reproduce (see :func:`compile_validator` for what serdes then does).
    """
    return decoder_builder(writer, reader, return_record_name, from_dict, with_ctx, limits)()


def decoder_builder(
    writer: Any,
    reader: Any = None,
    return_record_name: bool = False,
    from_dict: Optional[Callable[[Any, Any], Any]] = None,
    with_ctx: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    makers: Optional[Mapping[str, Any]] = None,
) -> Callable[[], Callable[..., Any]]:
    """:func:`compile_decoder` in two steps: the schema checks and the generation run now (and
    raise what :func:`compile_decoder` raises for the schemas); the returned ``build()`` compiles
    the source (the costly step, :func:`serdes.avro._exec.compile_generated`)."""
    src, ns = _decoder(writer, reader, return_record_name, with_ctx, from_dict is not None, limits, True, makers)
    ns["from_dict"] = from_dict
    return lambda: compile_generated(src, "decoder", ns, "decode")


def compile_validator(writer: Any, limits: Limits = DEFAULT_LIMITS) -> Callable[[Any, int], None]:
    """``validate(data, pos)``: raise :class:`CorruptPayloadError` unless ``data[pos:]`` is exactly one
    value of ``writer`` within ``limits`` (the checks of a generated decoder, building nothing).

    Run before fastavro decodes a schema pair :func:`compile_decoder` declines, so fastavro only
    ever sees payloads the strict decoder would have accepted: bounded item counts, depth and
    lengths, in-range enum and union indexes, 10-byte varints, no trailing bytes.
    """
    parsed = parse(writer, "writer", limits)
    if is_raw_bytes(parsed):
        return lambda data, pos: None
    try:
        gen = DecoderGenerator(parsed, None, False, limits)
        src = gen.validator_module()
    except RecursionError:
        raise too_deep_to_build(limits) from None
    return compile_generated(src, "validator", gen.ns, "validate")


def _nesting(obj: Any, limit: int) -> Tuple[Optional[str], int]:
    """(why ``obj`` may not reach fastavro's validator/writer, or ``None``; its height). Refused: a
    container cycle, or containers nested deeper than ``limit`` (or :data:`serdes._bigstack.MAX_LEVELS`).
    fastavro's Cython recursion on such a value (possible with a recursive schema) overflows the C
    stack and kills the process instead of raising. Linear in the value: each container's height
    is computed once (shared sub-values too)."""
    heights: Dict[int, int] = {}
    on_path: set[int] = set()
    limit = min(limit, _bigstack.MAX_LEVELS)

    def height(v: Any) -> int:
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, (list, tuple)):
            children = v
        else:
            return 0
        k = id(v)
        known = heights.get(k)
        if known is not None:
            return known
        if k in on_path:
            raise _Cycle
        on_path.add(k)
        h = 0
        for c in children:
            h = max(h, 1 + height(c))
            if h > limit:
                raise _TooDeep
        on_path.discard(k)
        heights[k] = h
        return h

    try:
        return None, height(obj)
    except _Cycle:
        return "the value contains itself (a reference cycle)", 0
    except _TooDeep:
        return f"the value nests deeper than serdes.max.depth={limit}", 0
    except RecursionError:
        return f"the value nests deeper than Python's recursion limit ({sys.getrecursionlimit()}) lets serdes check it", 0


class _Cycle(Exception):
    pass


class _TooDeep(Exception):
    pass


def check_value(parsed: Any, obj: Any, strict: bool = False, max_depth: int = DEFAULT_LIMITS.max_depth) -> int:
    """Raise :class:`ValidationError` (with the field path) unless ``obj`` validates against
    ``parsed``; returns the value's nesting height."""
    why, levels = _nesting(obj, max_depth)
    if why is not None:
        raise ValidationError(f"value does not match the schema: {why}")
    if levels > _bigstack.INLINE_LEVELS:  # fastavro's recursion gets a stack of known size
        _bigstack.call(lambda: _validate(parsed, obj, strict))
    else:
        _validate(parsed, obj, strict)
    return levels


def _validate(parsed: Any, obj: Any, strict: bool) -> None:
    try:
        _fa_validate(obj, parsed, raise_errors=True, strict=strict)
    except _FaValidationError as e:
        raise ValidationError(f"value does not match the schema: {'; '.join(map(str, e.errors)) or e}") from None
    except Exception as e:  # noqa: BLE001 - validate itself choked on the value
        raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}") from None


def _views_as_bytes(parsed: Any, obj: Any) -> Any:
    """``obj`` with every flat memoryview (:func:`serdes.avro._runtime.flat_bytes_view`) at a bytes
    or fixed position outside a union replaced by its bytes; ``obj`` itself when there is none.

    fastavro's ``validate`` refuses a memoryview that its writer -- confluent-kafka's path, which
    validates only union values -- writes as bytes; the bytes written are the same. Only called
    on a value :func:`_nesting` has measured (acyclic, bounded depth), recursing along it."""
    named: Dict[str, Any] = {}
    named_types(parsed, named, {})

    def walk(s: Any, v: Any) -> Any:
        t = type_of(s)
        if isinstance(t, str) and t in named and not isinstance(s, dict):
            return walk(named[t], v)
        if t in ("bytes", "fixed"):
            return v.tobytes() if flat_bytes_view(v) else v
        if t == "array" and isinstance(v, (list, tuple)):
            items = [walk(s["items"], x) for x in v]
            return items if any(a is not b for a, b in zip(items, v, strict=True)) else v
        if t == "map" and isinstance(v, Mapping):
            values = {k: walk(s["values"], x) for k, x in v.items()}
            return values if any(values[k] is not x for k, x in v.items()) else v
        if t in ("record", "error") and isinstance(v, Mapping):
            fields = {f["name"]: walk(f["type"], v[f["name"]]) for f in s["fields"] if f["name"] in v}
            if all(x is v[k] for k, x in fields.items()):
                return v
            return {**v, **fields}
        return v  # a union (fastavro validates its value: a memoryview there is refused) or a leaf

    return walk(parsed, obj)


def _fastavro_encoder(
    parsed: Any, prefix: bytes, strict: bool, strict_allow_default: bool, max_depth: int
) -> Callable[[Any], bytes]:
    """fastavro's encoder: :func:`check_value`, then ``schemaless_writer`` after ``prefix``."""
    def write(obj: Any) -> bytes:
        fo = io.BytesIO()
        fo.write(prefix)
        try:
            schemaless_writer(fo, parsed, obj, strict=strict, strict_allow_default=strict_allow_default)
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
            raise ValidationError(f"value does not match the schema: {type(e).__name__}: {e}") from None
        return fo.getvalue()

    def views_as_bytes(obj: Any) -> Any:
        """:func:`_views_as_bytes` of a value :func:`check_value` refused; ``obj`` itself for a
        cyclic or too deep one (refused before anything was validated) or one the walk cannot
        read (a Mapping whose lookups raise, say): its ValidationError stands."""
        why, levels = _nesting(obj, max_depth)
        if why is not None:
            return obj
        try:
            if levels > _bigstack.INLINE_LEVELS:
                return _bigstack.call(lambda: _views_as_bytes(parsed, obj))
            return _views_as_bytes(parsed, obj)
        except Exception:  # noqa: BLE001 - the value's own code failed: the validation error is the answer
            return obj

    def slow(obj: Any) -> bytes:
        try:
            levels = check_value(parsed, obj, strict, max_depth)
        except ValidationError:
            # a memoryview fastavro writes but does not validate: its bytes instead
            flat = views_as_bytes(obj)
            if flat is obj:
                raise
            obj = flat
            levels = check_value(parsed, obj, strict, max_depth)
        if levels > _bigstack.INLINE_LEVELS:
            return _bigstack.call(lambda: write(obj))
        return write(obj)

    return slow


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
    return encoder_builder(schema, prefix, strict, strict_allow_default, to_dict, limits, role)()


def encoder_builder(
    schema: Any,
    prefix: bytes = b"",
    strict: bool = False,
    strict_allow_default: bool = False,
    to_dict: Optional[Callable[[Any, Any], Any]] = None,
    limits: Limits = DEFAULT_LIMITS,
    role: str = "serializer's",
) -> Callable[[], Callable[[Any, Any], bytes]]:
    """:func:`compile_encoder` in two steps: the schema checks and the generation run now (and
    raise what :func:`compile_encoder` raises for the schema); the returned ``build()`` compiles
    the generated source, when there is one (the costly step)."""
    parsed = parse(schema, role, limits)
    # a value of a non-recursive schema nests no deeper than the schema (max_schema_depth bounds
    # it); a deeper one -- or a cycle -- can only come with a recursive schema and is refused
    slow = _fastavro_encoder(parsed, prefix, strict, strict_allow_default,
                             max(limits.max_depth, limits.max_schema_depth))
    if is_raw_bytes(parsed):
        # confluent-kafka writes a "bytes" schema as the raw value (str is UTF-8 encoded)
        def encode_raw(obj: Any, ctx: Any) -> bytes:
            if to_dict is not None:
                obj = to_dict(obj, ctx)
            if isinstance(obj, (bytes, bytearray)):
                return prefix + bytes(obj)
            if isinstance(obj, str):
                return prefix + obj.encode()
            raise _bad("bytes", obj, "bytes")

        return lambda: encode_raw
    generated = None
    if not (strict or strict_allow_default):
        generated = encoder_source(parsed, to_dict is not None, limits, role)
    if generated is None:
        def encode_slow(obj: Any, ctx: Any = None) -> bytes:
            return slow(obj if to_dict is None else to_dict(obj, ctx))

        return lambda: encode_slow
    code, ns = generated
    ns.update(PREFIX=prefix, slow=slow, to_dict=to_dict)
    return lambda: compile_generated(code, "encoder", ns, "encode")
