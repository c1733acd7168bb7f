"""Per-record metric counters that reach PyFlink's counters in batches (:class:`BatchedCounter`).

PyFlink's ``Counter.inc`` costs a Beam metric update (process mode) or a call into the JVM
through pemja (thread mode) per call: a few percent of a record's Python time in process mode,
more in thread mode.  serdes' operators count decoded/encoded records (and Debezium's change
kinds) with :func:`batched` counters and flush them in ``close()``.
"""

from __future__ import annotations

import time
from typing import Any, Callable, List

__all__ = ["BatchedCounter", "batched", "flush_all"]


class BatchedCounter:
    """A metric counter whose increments reach the wrapped counter in batches.

    PyFlink's ``Counter.inc`` costs a Beam metric update (process mode) or a call into the JVM
    (thread mode) per call, a few percent of a keyed record's Python time.  Pending increments
    are added to ``counter`` once ``every`` have accumulated, on the first ``inc`` at least
    ``seconds`` after the last flush, and on :meth:`flush` (the operator's ``close()``), so the
    metric trails the records by at most ``every - 1`` of them or ``seconds`` while they flow.
    """

    __slots__ = ("_counter", "_pending", "_every", "_seconds", "_clock", "_due")

    def __init__(self, counter: Any, every: int = 256, seconds: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._counter, self._every, self._seconds, self._clock = counter, every, seconds, clock
        self._pending = 0
        self._due = clock() + seconds

    def inc(self, n: int = 1) -> None:
        self._pending += n
        if self._pending >= self._every or self._clock() >= self._due:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._counter.inc(self._pending)
            self._pending = 0
        self._due = self._clock() + self._seconds


def batched(registry: List[BatchedCounter], counter: Any) -> BatchedCounter:
    """``counter`` batched, remembered in ``registry`` for :func:`flush_all` at ``close()``."""
    b = BatchedCounter(counter)
    registry.append(b)
    return b


def flush_all(registry: List[BatchedCounter]) -> None:
    for b in registry:
        b.flush()
