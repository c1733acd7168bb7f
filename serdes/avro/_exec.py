"""The one place generated Avro code is compiled and run.

The generators (``_decgen``, ``_encgen``) build source from the schema's *structure* only: every
schema string (names, field names, symbols, defaults, logical type names) reaches the source as a
``repr()`` literal or a constant bound in the exec namespace. As a second line of defence, before
executing anything this module parses the source and checks it is what a generator can produce:

* the module holds only top-level ``def`` statements (no imports, classes, lambdas, ``global``,
  nested functions, ``with`` or ``del``), and the entry function ends with a ``return`` of a value
  (so a cut-short function can never return ``None``, which a serializer caller would send as a
  tombstone);
* every name read is a local or parameter of its function, a constant of the namespace, a function
  of the module, or one of a few builtins; every attribute is one of the handful the generators use.

Any failure — the check, ``compile`` (a ``SyntaxError``, ``RecursionError`` or ``MemoryError`` for
a pathological schema) or ``exec`` — is a :class:`SchemaMismatchError`, never an untyped error and
never a half-built function.

The code is compiled under a filename naming what it is and a hash of its source
(``<serdes.avro decoder 3f2a...>``; never a schema name) and its source is registered with
:mod:`linecache` under that name, so a traceback through generated code shows the generated line.
Only the :data:`LINECACHE_ENTRIES` most recently compiled sources stay registered (an LRU), so a
process that sees many schemas does not keep every source alive; the source of any decoder is also
``fn.__serdes_source__`` and :func:`serdes.avro.generated_source`.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import re
import threading
from collections import OrderedDict
from typing import AbstractSet, Any, Callable, Dict, List, Optional, Set, Tuple

from .._errors import SchemaMismatchError

__all__ = ["compile_generated", "generated_filename", "LINECACHE_ENTRIES"]

#: how many generated sources stay registered with linecache (most recently compiled first)
LINECACHE_ENTRIES = 256

_BUILTINS = frozenset({"len", "range", "int", "float", "type", "isinstance"})
_ATTRIBUTES = frozenset({"append", "decode", "encode", "get", "items", "create_decimal", "scaleb", "from_bytes"})
_FORBIDDEN = (
    ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef, ast.Lambda, ast.AsyncFunctionDef,
    ast.Await, ast.Yield, ast.YieldFrom, ast.With, ast.AsyncWith, ast.Delete, ast.NamedExpr,
)


class _Rejected(Exception):
    pass


# CPython before 3.12.1 / 3.11.8 keeps the AST converter's recursion depth in interpreter-wide state
# (gh-106905): two threads converting ASTs at once fail with "SystemError: AST constructor
# recursion depth mismatch". Generation is the cold path (once per schema), so one lock costs nothing.
_AST_LOCK = threading.Lock()


def _locals(fn: ast.FunctionDef, nodes: List[ast.AST]) -> Set[str]:
    names = {a.arg for a in fn.args.args}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _shift_lines(node: ast.AST, by: int) -> None:
    """``ast.increment_lineno`` for one node (not its children)."""
    if "lineno" in node._attributes:
        node.lineno = getattr(node, "lineno", 0) + by  # type: ignore[attr-defined]
    if "end_lineno" in node._attributes and getattr(node, "end_lineno", None) is not None:
        node.end_lineno += by  # type: ignore[attr-defined]


def _verify_function(fn: ast.FunctionDef, known: AbstractSet[str], entry: str, first_line: int = 0) -> None:
    """Check one top-level function: ``known`` are the names it may read besides its locals. Its
    line numbers are moved down by ``first_line`` (its place in the whole source) on the way."""
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
        raise _Rejected(f"unexpected signature of {fn.name}")
    # walked once (three walks -- locals, line numbers, check -- were a third of a decoder's build)
    nodes = list(ast.walk(fn))
    allowed = known | _locals(fn, nodes)
    for node in nodes:
        _shift_lines(node, first_line)
        if isinstance(node, _FORBIDDEN) or (isinstance(node, ast.FunctionDef) and node is not fn):
            raise _Rejected(f"{type(node).__name__} at line {node.lineno}")
        if isinstance(node, ast.Name) and node.id not in allowed:
            raise _Rejected(f"unknown name {node.id!r} at line {node.lineno}")
        if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES:
            raise _Rejected(f"unexpected attribute {node.attr!r} at line {node.lineno}")
    last = fn.body[-1]
    if fn.name == entry and not (
        isinstance(last, ast.Return) and last.value is not None
        and not (isinstance(last.value, ast.Constant) and last.value.value is None)
    ):
        raise _Rejected(f"{entry} does not end with a return of a value")


#: where a top-level function of generated source starts: its name, at the start of a line (the
#: generators indent everything else, and a ``repr()`` literal never holds a raw newline; a split
#: anywhere else fails the per-function parse below, it never lets anything through)
_DEF = re.compile(r"^def ([A-Za-z_][A-Za-z0-9_]*)\(", re.MULTILINE)


def _functions(src: str) -> List[Tuple[str, int, str]]:
    """``src`` cut into its top-level functions: ``(name, first line number - 1, source)``."""
    starts = [(m.start(), m.group(1)) for m in _DEF.finditer(src)]
    if not starts or starts[0][0] != 0:
        raise _Rejected("unexpected top-level statement at line 1")
    out = []
    line = 0
    for i, (at, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(src)
        text = src[at:end]
        out.append((name, line, text))
        line += text.count("\n")
    return out


def _compile_functions(src: str, filename: str, ns: Dict[str, Any], entry: str) -> List[Any]:
    """The code objects of ``src``'s functions, each parsed, checked and compiled on its own (so
    the syntax trees alive at once are one function's: a wide schema's module is split into many
    functions by the generators, and the whole module's tree would cost ~3 KB per line), with
    line numbers of the whole source."""
    parts = _functions(src)
    names: List[str] = []
    for name, offset, _ in parts:
        if name in names:
            raise _Rejected(f"unexpected top-level statement at line {offset + 1} (a second {name})")
        names.append(name)
    if entry not in names:
        raise _Rejected(f"no function {entry}")
    known = _BUILTINS | set(names) | set(ns)
    codes = []
    for name, offset, text in parts:
        tree = ast.parse(text, filename, "exec")
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) \
                or tree.body[0].name != name or tree.body[0].decorator_list:
            raise _Rejected(f"unexpected top-level statement at line {offset + 1}")
        _verify_function(tree.body[0], known, entry, offset)
        codes.append(compile(tree, filename, "exec"))
        del tree
    return codes


def generated_filename(src: str, what: str) -> str:
    """The filename generated ``src`` is compiled under: its kind and a hash of the source."""
    return f"<serdes.avro {what} {hashlib.sha256(src.encode()).hexdigest()[:16]}>"


_REGISTERED: "OrderedDict[str, None]" = OrderedDict()
_REGISTER_LOCK = threading.Lock()


def _register_source(filename: str, src: str) -> None:
    # A 4-tuple with mtime None is what linecache keeps for sources without a file: checkcache()
    # leaves it alone, getline() reads it. Equal sources share one filename (and one entry).
    lines = src.splitlines(keepends=True)
    with _REGISTER_LOCK:
        linecache.cache[filename] = (len(src), None, lines, filename)
        _REGISTERED[filename] = None
        _REGISTERED.move_to_end(filename)
        while len(_REGISTERED) > LINECACHE_ENTRIES:
            old, _ = _REGISTERED.popitem(last=False)
            linecache.cache.pop(old, None)


class CompiledOnFirstCall:
    """A generated function compiled at its first call, then called directly.

    The native decoders and encoders keep the pure-Python function of the same schema as their
    fallback (a record nesting deeper than the thread's stack lets the native loop go, a value the
    native encoder leaves to the pure one), which most of them never call; compiling it was ~99% of
    building a native decoder. ``build()`` runs once; if it raises, the error is kept and raised
    again (as a fresh copy) on every later call, so a schema whose pure function cannot be built
    costs one build, not one per record.
    """

    __slots__ = ("_build", "_fn", "_lock")

    def __init__(self, build: Callable[[], Callable[..., Any]]) -> None:
        self._build: Optional[Callable[[], Callable[..., Any]]] = build
        self._fn: Optional[Callable[..., Any]] = None
        self._lock = threading.Lock()

    def built(self) -> Callable[..., Any]:
        """The compiled function (compiled now if it was not yet)."""
        with self._lock:
            if self._fn is None:
                assert self._build is not None
                try:
                    self._fn = self._build()
                except SchemaMismatchError as e:
                    message = str(e)

                    def refused(*args: Any) -> Any:
                        raise SchemaMismatchError(message)

                    self._fn = refused
                self._build = None
            return self._fn

    def __call__(self, *args: Any) -> Any:
        fn = self._fn
        if fn is None:
            fn = self.built()
        return fn(*args)


def compile_generated(src: str, what: str, ns: Dict[str, Any], entry: str) -> Callable[..., Any]:
    """Check, compile and execute generated ``src`` in ``ns``; return its function ``entry``.

    ``what`` names the code in messages ("decoder", "encoder"). Raises :class:`SchemaMismatchError`
    on any failure.
    """
    filename = generated_filename(src, what)
    try:
        with _AST_LOCK:
            codes = _compile_functions(src, filename, ns, entry)
        for code in codes:
            exec(code, ns)
    except _Rejected as e:
        raise SchemaMismatchError(f"serdes refused the {what} generated for this schema ({e}); please report it") from None
    except (SyntaxError, RecursionError, MemoryError, ValueError, OverflowError, TypeError) as e:
        raise SchemaMismatchError(
            f"serdes cannot build the {what} for this schema: {type(e).__name__}: {e}"
        ) from None
    _register_source(filename, src)
    fn = ns[entry]
    fn.__serdes_source__ = src
    return fn  # type: ignore[no-any-return]
