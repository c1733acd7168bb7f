"""Run a hostile input in a child interpreter under a memory limit and a timeout.

A segfault, a runaway allocation or a stall then fails the test (exit status, MemoryError or
``TimeoutExpired``) instead of taking the test run down. The child prints one JSON line last: the
test asserts on it (the error class and message), never on how long the child took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

ROOT = Path(__file__).resolve().parents[2]
#: the child's import roots, as pytest's ``pythonpath`` (pyproject.toml): the checkout (``serdes``,
#: ``tests.support``) and the generated ``serdes_test`` protos
CHILD_PATH = [ROOT, ROOT / "tests" / "protos"]

#: address space of the child: the interpreter with serdes, confluent-kafka, protobuf and
#: jsonschema-rs imported needs a few hundred MiB; a bomb needs far more
CHILD_MEMORY = 1536 << 20
#: seconds the child may run (generous for a loaded 2-core CI machine; a hang never finishes)
CHILD_TIMEOUT = 120


def run_bounded(code: str, memory: int = CHILD_MEMORY, timeout: float = CHILD_TIMEOUT) -> Dict[str, Any]:
    """Run ``code`` in a child under ``RLIMIT_AS=memory``; returns its last stdout line as JSON plus
    ``returncode``. Raises ``AssertionError`` with the child's stderr when it printed nothing."""

    # the child sets its own limit as its first statement: a preexec_fn would make Python fork()
    # rather than vfork(), and in a test process that ran a PyFlink job gRPC's fork handler can
    # block the forked child before exec (serdes/testing/_process.py, child_argv)
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, CHILD_PATH), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", limit + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout,
        env=env, cwd=str(ROOT),
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"child exited {proc.returncode} without a result; stderr:\n{proc.stderr[-3000:]}"
    out = json.loads(lines[-1])
    out["returncode"] = proc.returncode
    return out


#: child-side helper: ``report(fn)`` runs fn and prints {"error": class name, "mro": [...], "message": ...}
CHILD_PRELUDE = '''
import json, sys
def report(fn):
    try:
        value = fn()
    except BaseException as e:
        print(json.dumps({"error": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                          "message": str(e)[:2000]}))
    else:
        print(json.dumps({"error": None, "value": repr(value)[:2000]}))
'''
