"""Run a call that recurses on the C stack on a thread whose stack serdes sized.

fastavro's Cython reader, writer and validator recurse on the C stack, about 1.5 KiB per level of
a nested value, and cannot raise when it runs out: a value 50 levels deep ends the process on a
thread with a 128 KiB stack (``threading.stack_size``), 100 on 256 KiB. serdes does not know how
much stack the calling thread has (a PyFlink thread-mode JVM thread, a small worker thread), so a
call on a value nested deeper than :data:`INLINE_LEVELS` runs on :func:`call`'s worker thread,
whose stack (:data:`STACK_SIZE`) holds :data:`MAX_LEVELS` levels with room to spare (tested in
tests/unit/test_native_guards.py). Shallow values -- nearly every record -- run inline.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Optional, Tuple, TypeVar

__all__ = ["INLINE_LEVELS", "MAX_LEVELS", "STACK_SIZE", "call"]

T = TypeVar("T")

#: nesting run on the calling thread: fits a 128 KiB thread stack with room for the caller's frames
INLINE_LEVELS = 24
#: the deepest nesting handed to fastavro at all (deeper values are refused before it runs)
MAX_LEVELS = 10_000
#: the worker thread's stack: MAX_LEVELS levels at a few KiB each, twice over (address space only;
#: the pages a call does not touch are never committed; an eighth of it when that much address
#: space is not available)
STACK_SIZE = 128 << 20

_lock = threading.Lock()
_jobs: "Optional[queue.SimpleQueue[Tuple[Callable[[], Any], queue.SimpleQueue[Tuple[bool, Any]]]]]" = None
_worker_ident: Optional[int] = None


def _serve(jobs: "queue.SimpleQueue[Tuple[Callable[[], Any], queue.SimpleQueue[Tuple[bool, Any]]]]") -> None:
    while True:
        fn, reply = jobs.get()
        try:
            reply.put((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller, who re-raises it
            reply.put((False, e))


def _start() -> "queue.SimpleQueue[Tuple[Callable[[], Any], queue.SimpleQueue[Tuple[bool, Any]]]]":
    global _jobs, _worker_ident
    with _lock:
        if _jobs is None:
            jobs: "queue.SimpleQueue[Tuple[Callable[[], Any], queue.SimpleQueue[Tuple[bool, Any]]]]" = queue.SimpleQueue()
            t = None
            for size in (STACK_SIZE, STACK_SIZE // 8):  # less address space (RLIMIT_AS) may do
                # threading.stack_size is process-wide: set for this one thread, then put back
                old = threading.stack_size(size)
                try:
                    t = threading.Thread(target=_serve, args=(jobs,), name="serdes-deep-values", daemon=True)
                    t.start()
                    break
                except RuntimeError:  # "can't start new thread": no room for its stack
                    t = None
                finally:
                    threading.stack_size(old)
            if t is None:
                raise MemoryError("serdes cannot start the thread that handles deeply nested values")
            _worker_ident = t.ident
            _jobs = jobs
        return _jobs


def call(fn: Callable[[], T]) -> T:
    """``fn()`` on the worker thread (inline when already on it); its exception is re-raised here.
    Calls from several threads take turns on the one worker."""
    if threading.get_ident() == _worker_ident:
        return fn()
    jobs = _start()
    reply: "queue.SimpleQueue[Tuple[bool, Any]]" = queue.SimpleQueue()
    jobs.put((fn, reply))
    ok, out = reply.get()
    if ok:
        return out  # type: ignore[no-any-return]
    raise out


def _forget_worker() -> None:
    # a forked child has no worker thread: the first deep value there starts its own
    global _jobs, _worker_ident
    _jobs = None
    _worker_ident = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)
