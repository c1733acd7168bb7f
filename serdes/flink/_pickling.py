"""The module name serdes' picklable Flink objects give pickles: the package, ``serdes.flink``.

PyFlink ships operators, type infos and state descriptors to its Python workers as pickles, and
a worker unpickles several operators at once on different threads. A pickle that named a
submodule (``serdes.flink._kafka``) made its thread import the submodule first, which on CPython
3.11 takes the submodule's import lock *before* the package's; a thread importing the package at
the same moment (a user's job module doing ``from serdes import flink``) holds the package's lock
and waits for the submodule's: an import deadlock (``_DeadlockError``, or "partially initialized
module") that fails the operator and restarts the job. Naming the package makes every unpickling
import ``serdes.flink`` first; its ``__init__`` imports no submodule (it resolves each name on first
use, through its ``__getattr__``), so it never holds the package's lock while it waits for a
submodule's, and the class's submodule is then imported with the package already whole.

Pickles written by earlier releases name ``serdes.flink._kafka``, ``serdes.flink._types``,
``serdes.flink._debezium``, ``serdes.flink._keyed`` or ``serdes.flink._decode``; those modules
still hold every such name, so the pickles load (``tests/unit/test_flink_pickles.py``).
"""

from __future__ import annotations

PICKLE_MODULE = "serdes.flink"

__all__ = ["PICKLE_MODULE"]
