"""Timing: calibrated, interleaved repeats; medians and the one-process ratios.

Method (docs/benchmarks.md): every lane of a comparison runs in this one process, on the same
inputs. Each repeat visits every group; within a group a repeat's calls per lane run as
``slices`` slices, alternating lanes (A1 B1 C1 A2 B2 C2 ...), the lanes' order rotated per repeat,
GC off while timing (as ``timeit`` does). A lane's sample is its slices' total / records; its value
is the median of its samples. A ratio is the quotient of two medians of the same run; the paired
ratios (repeat by repeat) and the CPU-time ratios are reported next to it as a noise check.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .lanes import Call, Group, Lane


def run_once(
    fn: Call,
    inputs: List[Any],
    ctx: Any,
    _perf: Callable[[], int] = time.perf_counter_ns,
    _cpu: Callable[[], int] = time.process_time_ns,
) -> Tuple[int, int]:
    """(wall, process-CPU) ns of calling ``fn(x, ctx)`` for every ``x`` of ``inputs``."""
    c0 = _cpu()
    t0 = _perf()
    for x in inputs:
        fn(x, ctx)
    t1 = _perf()
    return t1 - t0, _cpu() - c0


def timed2(fn: Call, inputs: List[Any], ctx: Any) -> Tuple[float, float]:
    """(wall, process-CPU) ns/call over ``inputs``, GC off while timing."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        wall, cpu = run_once(fn, inputs, ctx)
    finally:
        if was:
            gc.enable()
    return wall / len(inputs), cpu / len(inputs)


def timed(fn: Call, inputs: List[Any], ctx: Any) -> float:
    return timed2(fn, inputs, ctx)[0]


def cycled(pool: List[Any], n: int) -> List[Any]:
    return [pool[i % len(pool)] for i in range(n)]


def calibrate(lane: Lane, ctx: Any, target_s: float, min_n: int = 20, max_n: int = 1_000_000) -> int:
    """Calls per repeat so one repeat takes about ``target_s`` (a batch lane: at least one call)."""
    assert lane.fn is not None
    if lane.records_per_call > 1:
        min_n = 1
    n = min(len(lane.inputs), 100)
    while True:
        per = timed(lane.fn, cycled(lane.inputs, n), ctx)
        if per * n >= 0.02e9 or n >= max_n:
            break
        n = min(max_n, n * 4)
    return int(min(max_n, max(min_n, target_s * 1e9 / max(per, 1.0))))


def loop_overhead_ns(n: int = 50_000) -> float:
    """The cost of the timing loop itself (a call to a no-op) per record; not subtracted."""

    def noop(x: Any, ctx: Any) -> None:
        return None

    inputs = list(range(n))
    return min(timed(noop, inputs, None) for _ in range(5))


def split(inputs: List[Any], k: int) -> List[List[Any]]:
    k = max(1, min(k, len(inputs)))
    step = -(-len(inputs) // k)
    return [inputs[i : i + step] for i in range(0, len(inputs), step)]


def run_benchmark(
    groups: List[Group],
    repeats: int,
    target_s: float,
    fixed_n: Optional[int],
    log: Callable[[str], None],
    slices: int = 10,
) -> None:
    """Time every available lane of ``groups``: ``repeats`` samples each, interleaved."""
    timed_groups: List[Tuple[Group, List[Lane], Dict[str, List[List[Any]]]]] = []
    for g in groups:
        lanes = [lane for lane in g.lanes.values() if lane.available]
        chunks: Dict[str, List[List[Any]]] = {}
        for lane in lanes:
            assert lane.fn is not None
            lane.fn(lane.inputs[0], g.ctx)  # warm-up (caches already primed by the check)
            if fixed_n and lane.records_per_call == 1:
                lane.n_records = fixed_n
            else:
                lane.n_records = calibrate(lane, g.ctx, target_s)
            lane.inputs = cycled(lane.inputs, lane.n_records)
            chunks[lane.name] = split(lane.inputs, slices)
        timed_groups.append((g, lanes, chunks))
        log(f"  {g.fmt:8s} {g.size:8s} {g.direction:11s} "
            + ", ".join(f"{lane.name}={lane.n_records}" for lane in lanes))
    # Interleave at two levels so that noise on a shared machine lands on all lanes alike:
    # * every repeat visits every case, the lanes' order rotated per repeat;
    # * within a case, a repeat's calls per lane run as `slices` slices, alternating lanes
    #   (A1 B1 C1 A2 B2 C2 ...), so the lanes of one comparison are measured within the same
    #   window rather than one after the other. A lane's sample is its slices' total / records.
    for r in range(repeats):
        t0 = time.perf_counter()
        for g, lanes, chunks in timed_groups:
            if not lanes:
                continue
            k = r % len(lanes)
            order = lanes[k:] + lanes[:k]
            wall = {lane.name: 0 for lane in order}
            cpu = {lane.name: 0 for lane in order}
            gc.collect()
            was = gc.isenabled()
            gc.disable()
            try:
                for i in range(max(len(chunks[lane.name]) for lane in order)):
                    for lane in order:
                        part = chunks[lane.name]
                        if i < len(part):
                            assert lane.fn is not None
                            w, c = run_once(lane.fn, part[i], g.ctx)
                            wall[lane.name] += w
                            cpu[lane.name] += c
            finally:
                if was:
                    gc.enable()
            for lane in order:
                records = lane.n_records * lane.records_per_call
                lane.samples_ns.append(wall[lane.name] / records)
                lane.cpu_samples_ns.append(cpu[lane.name] / records)
        log(f"  repeat {r + 1}/{repeats} took {time.perf_counter() - t0:.1f}s")


# -- statistics ------------------------------------------------------------------------------------
def lane_stats(lane: Lane) -> Dict[str, Any]:
    d: Dict[str, Any] = {"available": lane.available and bool(lane.samples_ns), "error": lane.error}
    if lane.implementation is not None:
        d["implementation"] = lane.implementation
    if lane.records_per_call > 1:
        d["records_per_call"] = lane.records_per_call
    if lane.samples_ns:
        s = sorted(lane.samples_ns)
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0], s[0], s[0]]
        d.update(
            n_records=lane.n_records,
            repeats=len(s),
            median_ns=statistics.median(s),
            min_ns=s[0],
            max_ns=s[-1],
            q1_ns=q[0],
            q3_ns=q[2],
            samples_ns=lane.samples_ns,
            cpu_median_ns=statistics.median(lane.cpu_samples_ns) if lane.cpu_samples_ns else None,
            cpu_samples_ns=lane.cpu_samples_ns,
        )
    return d


def ratio(a: Dict[str, Any], b: Dict[str, Any], key: str = "median_ns") -> Optional[float]:
    """Median of lane ``a`` / median of lane ``b`` (their :func:`lane_stats`, same run; ``key``
    ``cpu_median_ns`` for the CPU-time ratio), or None when either is missing."""
    if a.get(key) and b.get(key):
        return float(a[key] / b[key])
    return None


def paired(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """Median, min and max of the repeat-by-repeat ratios a/b (same repeat, adjacent slices)."""
    sa, sb = a.get("samples_ns") or [], b.get("samples_ns") or []
    if sa and len(sa) == len(sb):
        rs = [x / y for x, y in zip(sa, sb, strict=True)]
        return {"median": statistics.median(rs), "min": min(rs), "max": max(rs)}
    return None
