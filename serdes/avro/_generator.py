"""What the Avro decoder and encoder generators share.

Both generators (``_decgen.DecoderGenerator``, ``_encgen.EncoderGenerator``) emit Python source as
lists of lines: every emitting method takes ``out`` (the lines so far) and ``ind`` (the current
indentation) and appends to ``out``. This module holds the rest they have in common:

* the schema as the generators see it: checked names (:func:`serdes.avro._schema_check.check_schema`,
  before fastavro's ``parse_schema`` walks it) and the parsed form (:func:`parse`), its type at
  one position (:func:`type_of`), its named types and how often each is used (:func:`named_types`);
* fresh local names and namespace constants (:meth:`Generator.fresh`, :meth:`Generator.const`): a
  schema string never reaches the source except as a ``repr()`` literal or such a constant;
* out-of-line functions: Python refuses more than 20 statically nested blocks in one function, so
  a composite value nested past :data:`OUTLINE_LEVEL` blocks (:meth:`Generator.needs_outline`) is
  emitted as a function of its own (:meth:`Generator.add_function`), and so is a named type used
  more than once or recursively (``building`` holds the named types being emitted);
* the errors of a schema too deep to generate code for (:func:`too_deep_to_build`);
* the module around the functions (:meth:`Generator.module_source`), which
  :mod:`serdes.avro._codegen` compiles through :func:`serdes.avro._exec.compile_generated` with the
  generator's namespace ``ns`` (the checks, the per-source filename, ``linecache``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Set

from fastavro import parse_schema
from fastavro.const import AVRO_TYPES

from .._confluent import avro_raw_bytes
from .._errors import SchemaMismatchError
from .._limits import Limits
from ._schema_check import check_schema

__all__ = [
    "COMPOSITE", "FIELD_GROUP", "OUTLINE_LEVEL", "Generator", "Unsupported", "is_raw_bytes", "named_types", "parse",
    "too_deep_to_build", "type_of",
]

#: block-nesting level (indentation / 4) from which a composite value gets its own function: one
#: value's code adds at most ~6 levels, and Python allows 20 per function
OUTLINE_LEVEL = 8
#: fields of one record read (or written) by one generated function: a wider record's fields are
#: split into functions of this many, so generated functions stay small whatever the schema (the
#: cost of compiling one function grows faster than its length)
FIELD_GROUP = 64
#: the types whose code opens blocks (and may contain other values)
COMPOSITE = ("array", "map", "union", "error_union", "record", "error", "request")
_NAMED = ("record", "error", "enum", "fixed")


class Unsupported(Exception):
    """The schema uses a fastavro code path the generator does not reproduce: use fastavro."""


def type_of(schema: Any) -> Any:
    """The type at a position of a parsed schema: a primitive or named type's name, a complex
    type's ``"type"``, ``"union"`` for a list."""
    if isinstance(schema, dict):
        return schema["type"]
    if isinstance(schema, list):
        return "union"
    return schema


def is_raw_bytes(schema: Any) -> bool:
    """confluent-kafka (2.13+: :func:`serdes._confluent.avro_raw_bytes`) writes and reads a schema of
    type ``"bytes"`` as the raw payload (no length)."""
    return (schema == "bytes" or (isinstance(schema, dict) and schema.get("type") == "bytes")) and avro_raw_bytes()


def named_types(schema: Any, names: Dict[str, Any], counts: Dict[str, int]) -> None:
    """Collect the named types of a parsed schema (fullname -> definition) into ``names`` and count
    each use (definition or reference) into ``counts``."""
    if isinstance(schema, list):
        for s in schema:
            named_types(s, names, counts)
    elif isinstance(schema, dict):
        t = schema.get("type")
        if t in _NAMED and "name" in schema:
            name = schema["name"]
            counts[name] = counts.get(name, 0) + 1
            if name in names:
                return
            names[name] = schema
            if t in ("record", "error"):
                for f in schema.get("fields", ()):
                    named_types(f["type"], names, counts)
        elif t == "array":
            named_types(schema.get("items"), names, counts)
        elif t == "map":
            named_types(schema.get("values"), names, counts)
        elif isinstance(t, (dict, list)):
            named_types(t, names, counts)
    elif isinstance(schema, str) and schema not in AVRO_TYPES:
        counts[schema] = counts.get(schema, 0) + 1


def parse(schema: Any, role: str, limits: Limits, check_names: bool = True) -> Any:
    """fastavro's parsed form of ``schema`` once its names and depth are checked (``role`` says
    whose schema it is in messages: "writer", "reader", "serializer's", "registry").

    Raises SchemaMismatchError. ``check_names=False`` exists only for the tests proving the
    generators themselves never paste a name into the source.
    """
    if check_names:
        check_schema(schema, role, limits.max_schema_depth, limits.max_fields)  # before parse_schema walks it
    try:
        return parse_schema(schema)
    except RecursionError:
        raise SchemaMismatchError(f"the {role} schema nests too deep to parse") from None


def too_deep_to_build(limits: Limits, role: str = "") -> SchemaMismatchError:
    """The error for a generator that ran out of Python stack: only reachable when
    ``serdes.max.schema.depth`` is set far above its default."""
    whose = f"{role} " if role else ""
    return SchemaMismatchError(
        f"the {whose}schema nests too deep to generate code for (serdes.max.schema.depth={limits.max_schema_depth})"
    )


class Generator:
    """Fresh names, namespace constants, named types and out-of-line functions of one generated
    module; the decoder and encoder generators add what they emit."""

    def __init__(self, namespace: Dict[str, Any], limits: Limits) -> None:
        #: what the generated code may read besides its locals: the runtime helpers, then constants
        self.ns: Dict[str, Any] = dict(namespace)
        self.limits = limits
        #: named types of the schema code is generated for (fullname -> definition), uses of each
        self.named: Dict[str, Any] = {}
        self.uses: Dict[str, int] = {}
        #: named types whose code is being emitted: a reference to one of them is recursion
        self.building: Set[str] = set()
        #: out-of-line functions: their sources in the order written, and the function already
        #: written for a key (a named type, with what it is resolved against)
        self.functions: List[str] = []
        self.function_names: Dict[Any, str] = {}
        self._last = 0

    @contextlib.contextmanager
    def emitting(self, name: Optional[str]) -> Iterator[None]:
        """Named type ``name`` (``None``: an anonymous one) is being emitted inside this block."""
        if name is None:
            yield
            return
        self.building.add(name)
        try:
            yield
        finally:
            self.building.discard(name)

    def collect_named(self, schema: Any) -> None:
        named_types(schema, self.named, self.uses)

    def fresh(self, prefix: str = "v") -> str:
        """A local (or constant) name used nowhere else in the module."""
        self._last += 1
        return f"{prefix}{self._last}"

    def const(self, value: Any, prefix: str = "k") -> str:
        """A namespace constant holding ``value``; its name, for the source."""
        name = self.fresh("_" + prefix)
        self.ns[name] = value
        return name

    @staticmethod
    def needs_outline(ind: str) -> bool:
        """Whether a composite value emitted at indentation ``ind`` needs a function of its own."""
        return len(ind) >= 4 * OUTLINE_LEVEL

    def add_function(self, name: str, params: str, body: List[str], ret: Optional[str] = None) -> None:
        """Add out-of-line function ``name`` whose ``body`` lines are indented one level;
        ``ret`` is the expression it returns (none: it returns nothing)."""
        tail = f"\n    return {ret}\n" if ret is not None else "\n"
        self.functions.append(f"def {name}({params}):\n" + "\n".join(body) + tail)

    def module_source(self, entry: List[str]) -> str:
        """The generated module: the out-of-line functions, then the entry function's lines."""
        return "\n".join(self.functions + ["\n".join(entry) + "\n"])
