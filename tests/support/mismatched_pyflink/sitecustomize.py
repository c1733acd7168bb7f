"""Loaded at start-up by every Python process whose path has this directory first (the Python
workers of tests/flink/test_speedups_mismatch.py's job, through ``python.pythonpath``): makes the
worker's PyFlink differ from the apache-flink 2.2.1 internals serdes' speedups were checked against,
the way another release could, without changing what PyFlink does.

``SERDES_TEST_PYFLINK_MISMATCH`` (inherited from the job's process through the JVM) picks how:

* ``internals``: the keyed operations build their state backend from a subclass of
  ``RemoteKeyedStateBackend`` and their input handler from a subclass of ``RunnerInputHandler``
  (both add nothing): serdes' key-change and per-record installers each find a class that is not
  the one they were checked against;
* ``release``: ``importlib.metadata`` reports apache-flink ``2.99.0``, a release not verified (the
  internals are 2.2.1's).

Each process that builds a keyed state backend leaves an empty file ``backend-<pid>`` in
``SERDES_TEST_PYFLINK_MARKS`` (how the test counts the keyed workers), and each WARNING of serdes'
``serdes.flink._pyflink`` logger goes to ``warnings-<pid>`` there as well (one line each; the
records still reach Beam's log handler, which sends them to the TaskManager's log without the
process they came from).  Nothing is printed: Flink reads the output of the ``python -c`` probes it
runs with the same path.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import importlib.util
import logging
import os
import sys
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence

_MODE = os.environ.get("SERDES_TEST_PYFLINK_MISMATCH", "")
_MARKS = os.environ.get("SERDES_TEST_PYFLINK_MARKS", "")


def _mark_keyed_workers(state_impl: ModuleType) -> None:
    """``RemoteKeyedStateBackend.__init__`` leaves the ``backend-<pid>`` mark (the class stays the
    same: serdes sees nothing of this)."""
    cls = state_impl.RemoteKeyedStateBackend
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _MARKS:
            open(os.path.join(_MARKS, f"backend-{os.getpid()}"), "a").close()

    cls.__init__ = __init__


def _subclass(module: ModuleType, name: str) -> None:
    """``module``'s global ``name`` (a PyFlink class it imported) -> a subclass adding nothing."""
    base = getattr(module, name)
    setattr(module, name, type(base.__name__, (base,), {"__qualname__": f"Subclassed{base.__name__}"}))


#: module -> what to do to it right after it ran
_PATCHES: Dict[str, List[Callable[[ModuleType], None]]] = {
    "pyflink.fn_execution.state_impl": [_mark_keyed_workers],
}
if _MODE == "internals":
    # the names the operations build their objects with; the classes stay PyFlink's in their own
    # modules, which is what serdes compares against
    _PATCHES["pyflink.fn_execution.beam.beam_operations"] = [lambda m: _subclass(m, "RemoteKeyedStateBackend")]
    _PATCHES["pyflink.fn_execution.datastream.process.operations"] = [lambda m: _subclass(m, "RunnerInputHandler")]


class _PatchAfterLoad(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of the modules of ``_PATCHES`` so that they are
    patched right after they ran."""

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None) -> Any:
        patches = _PATCHES.get(name)
        if patches is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            for patch in patches:
                patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _PatchAfterLoad())


class _WarningsOfThisProcess(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        with open(os.path.join(_MARKS, f"warnings-{os.getpid()}"), "a") as out:
            out.write(record.getMessage().replace("\n", " ") + "\n")


if _MARKS:
    logging.getLogger("serdes.flink._pyflink").addHandler(_WarningsOfThisProcess(logging.WARNING))

if _MODE == "release":
    _version = importlib.metadata.version

    def _reported_version(distribution_name: str) -> str:
        return "2.99.0" if distribution_name == "apache-flink" else _version(distribution_name)

    importlib.metadata.version = _reported_version
