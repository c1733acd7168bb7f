"""What PyFlink hands a function's ``open()``, for unit tests that run a function without a job:
a runtime context whose metric group gives out counters that record their increments, so a test
asserts ``serdes_decoded`` / ``serdes_failed`` / ... counts directly.

Pure Python (no PyFlink import): it only has the methods serdes' functions call.
"""

from __future__ import annotations

from typing import Dict


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def inc(self, k: int = 1) -> None:
        self.n += k


class MetricGroup:
    def __init__(self) -> None:
        self.counters: Dict[str, Counter] = {}

    def counter(self, name: str) -> Counter:
        return self.counters.setdefault(name, Counter())


class RuntimeContext:
    def __init__(self) -> None:
        self.group = MetricGroup()

    def get_metrics_group(self) -> MetricGroup:
        return self.group
