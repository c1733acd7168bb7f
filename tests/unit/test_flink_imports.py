"""serdes.flink imports from many threads at once without deadlocking (issue 24, item 0).

PyFlink's Python worker builds several operations at once on different threads, and each may
import ``serdes.flink`` or one of its submodules first. On CPython 3.11 a thread importing a
submodule holds the submodule's import lock and then waits for the package to finish
initializing (``from . import x`` in the submodule); a package ``__init__`` that imported its
submodules held the package's lock while it waited for theirs: a ``_DeadlockError`` or a
"partially initialized module" ImportError. Two things make that impossible, and each is tested:
the package ``__init__`` imports no submodule (``serdes/flink/__init__.py`` resolves its names on
first use), and the submodules' own imports have no cycle, so their locks are always taken in one
order.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

# serdes.flink needs PyFlink (the core-only matrix legs have none); CI's main leg runs these
pytest.importorskip("pyflink")

REPO = Path(__file__).resolve().parents[2]
FLINK = REPO / "serdes" / "flink"
PACKAGE = "serdes.flink"
SUBMODULES = sorted(p.stem for p in FLINK.glob("*.py") if p.stem != "__init__")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_imports(tree: ast.Module) -> List[ast.stmt]:
    """The import statements a module runs when it is imported: its body's, and those under a
    ``try``/``if`` at top level, but not under ``if TYPE_CHECKING:`` nor inside functions."""
    found: List[ast.stmt] = []
    todo: List[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            todo.extend(node.orelse if _is_type_checking(node.test) else node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
        elif isinstance(node, ast.With):
            todo.extend(node.body)
    return found


def _flink_target(dotted: str) -> str | None:
    """``"__init__"`` or the submodule a dotted name inside serdes.flink refers to, else None."""
    if dotted == PACKAGE:
        return "__init__"
    if dotted.startswith(PACKAGE + "."):
        return dotted[len(PACKAGE) + 1:].split(".")[0]
    return None


def import_graph() -> Dict[str, Set[str]]:
    """For each module of serdes.flink (``__init__`` for the package), the modules of serdes.flink
    whose import its own import runs, or waits for."""
    from serdes import flink

    lazy: Dict[str, str] = flink._SUBMODULE  # the names the package resolves on first use
    graph: Dict[str, Set[str]] = {}
    for path in sorted(FLINK.glob("*.py")):
        edges: Set[str | None] = set()
        for node in _top_level_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(_flink_target(alias.name) for alias in node.names)
                continue
            # relative to serdes.flink (the package of its submodules and of its __init__)
            base = ".".join(PACKAGE.split(".")[:3 - node.level]) if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            edges.add(_flink_target(module))  # ``from . import x`` waits for the package too
            for alias in node.names:
                if module == "serdes" and alias.name == "flink":
                    edges.add("__init__")
                elif module == PACKAGE:  # a submodule, or a name whose module the package imports
                    edges.add(alias.name if alias.name in SUBMODULES else lazy.get(alias.name, "__init__"))
        graph[path.stem] = {e for e in edges if e is not None and e != path.stem}
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of ``graph`` as a path that ends where it starts, or ``[]``."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def test_the_graph_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The cycle check would pass vacuously if the reader missed an import form: each one counts,
    and imports under ``if TYPE_CHECKING:`` or inside a function do not."""
    tree = ast.parse(
        "import os\nfrom . import _a\nfrom ._b import x\nimport serdes.flink._c\nfrom serdes.flink._d import y\n"
        "try:\n    from ._e import z\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from ._f import w\n"
        "def f():\n    from ._g import v\n")
    names = sorted(ast.unparse(n) for n in _top_level_imports(tree))
    assert names == ["from . import _a", "from ._b import x", "from ._e import z",
                     "from serdes.flink._d import y", "import os", "import serdes.flink._c"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_has_the_submodules_imports() -> None:
    graph = import_graph()
    assert set(graph) == set(SUBMODULES) | {"__init__"}
    assert {"_pyflink", "_decode", "_records", "_env"} <= graph["_kafka"]  # from . import / from .x import
    assert "_kafka" in graph["_debezium"]


def test_serdes_flink_modules_import_each_other_without_a_cycle() -> None:
    """An import cycle between two submodules is a deadlock when two threads enter it at its two
    ends at once; so is a package ``__init__`` that imports a submodule that imports the package."""
    cycle = find_cycle(import_graph())
    assert not cycle, " -> ".join(cycle)


def test_the_package_imports_no_submodule_and_declares_each_lazy_name_to_type_checkers() -> None:
    """``__init__`` imports submodules only under ``if TYPE_CHECKING:``, exactly the names its
    ``__getattr__`` resolves, each from the module the table names."""
    from serdes import flink

    tree = ast.parse((FLINK / "__init__.py").read_text())
    assert import_graph()["__init__"] == set()
    checked: Dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1 and imp.module
                checked.update((alias.name, imp.module) for alias in imp.names)
    assert checked == flink._SUBMODULE


def test_every_name_resolves_once_and_is_cached() -> None:
    pytest.importorskip("pyflink")
    import importlib

    from serdes import flink

    for name, module in flink._SUBMODULE.items():
        value = getattr(flink, name)
        assert value is getattr(importlib.import_module(f"{PACKAGE}.{module}"), name)
        assert vars(flink)[name] is value  # cached: later reads do not call __getattr__
    assert set(flink.__all__) <= set(dir(flink))
    assert set(flink._SUBMODULE) <= set(dir(flink))
    from serdes.flink import KafkaRecord, _identity  # noqa: F401
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        flink.nonesuch  # noqa: B018


RACE = r"""
import importlib, importlib.abc, sys, threading, time

targets, warm, slow = sys.argv[1].split(","), sys.argv[2], sys.argv[3]


class Slow(importlib.abc.MetaPathFinder):
    # widens the race: the thread that finds this module first holds the locks it has taken
    # (its own, the package's if it runs the package's __init__) while the others start theirs
    def find_spec(self, name, path, target=None):
        if name == slow:
            time.sleep(0.2)
        return None


# what a PyFlink worker has imported before it builds operations; then only serdes is raced
import confluent_kafka, google.protobuf, pyflink.common, pyflink.datastream, pyflink.datastream.connectors.kafka
if warm == "warm":
    import serdes
sys.meta_path.insert(0, Slow())
barrier = threading.Barrier(len(targets))
errors = []


def run(name):
    barrier.wait()
    try:
        importlib.import_module(name)
    except BaseException as e:
        errors.append(f"{name}: {e!r}")


threads = [threading.Thread(target=run, args=(name,), daemon=True) for name in targets]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
hung = [name for t, name in zip(threads, targets) if t.is_alive()]
print(errors, "hung:", hung)
sys.exit(1 if errors or hung else 0)
"""

THREADS = 8
#: each a fresh interpreter: the core package imported first (as by a job module) or not (the
#: threads race on it too), and the one module whose finding is slowed (none, a leaf many import,
#: the one the package's eager ``__init__`` held its lock across, the one most submodules import)
VARIANTS = [(warm, slow) for slow in ("", "_records", "_debezium", "_kafka") for warm in ("warm", "cold")]


def _lineup(run: int) -> List[str]:
    """The package and THREADS - 1 submodules (every submodule is in some run's), and for a cold
    run the core package in place of the last."""
    def slots(r: int) -> int:  # the submodules run r imports
        return THREADS - 1 - (VARIANTS[r][0] == "cold")

    start = sum(slots(r) for r in range(run))  # the runs take the submodules in turn, wrapping round
    names = [PACKAGE] + [f"{PACKAGE}.{SUBMODULES[(start + i) % len(SUBMODULES)]}" for i in range(slots(run))]
    return names + ["serdes"] if VARIANTS[run][0] == "cold" else names


def test_threads_import_serdes_flink_modules_at_once(tmp_path: Path) -> None:
    """THREADS threads, released at once, each import serdes.flink or one of its submodules; in
    the widened runs a module is slow to find, so whichever thread imports it holds its locks
    longer while the others take theirs. No thread may raise or hang."""
    pytest.importorskip("pyflink")
    script = tmp_path / "race.py"
    script.write_text(RACE)
    # the script's directory, not the checkout, would come first on sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    procs = []
    for run, (warm, slow) in enumerate(VARIANTS):  # at once: the machine's cores share the work
        procs.append(subprocess.Popen(
            [sys.executable, str(script), ",".join(_lineup(run)), warm, f"{PACKAGE}.{slow}" if slow else ""],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    failed = []
    for run, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            failed.append(f"{VARIANTS[run]} {_lineup(run)}:\n{out[-2000:]}")
    assert not failed, f"{len(failed)} of {len(procs)} interpreters failed:\n" + "\n".join(failed)


def test_the_runs_cover_every_submodule() -> None:
    assert {name for run in range(len(VARIANTS)) for name in _lineup(run)} >= {f"{PACKAGE}.{m}" for m in SUBMODULES}


def test_the_package_resolves_its_api_and_the_names_pickles_give_and_nothing_else() -> None:
    """Besides ``__all__`` (the API), the package resolves only the classes a pickle names as
    ``serdes.flink.<name>`` (``_pickling.py``); a helper that is neither belongs in its submodule."""
    from serdes import flink
    from serdes.flink._pickling import PICKLE_MODULE

    assert not [name for name in flink.__all__ if name.startswith("_")]
    not_api = sorted(set(flink._SUBMODULE) - set(flink.__all__))
    assert not_api  # the wrappers at least
    assert [name for name in not_api if getattr(getattr(flink, name), "__module__", None) != PICKLE_MODULE] == []
