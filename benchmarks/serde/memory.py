"""Peak memory of one large batch decode (``deserialize_batch`` of standard Avro records).

Each measurement runs in a child process of its own (``python -m benchmarks.serde.memory``), so
one lane's garbage or the parent's high-water mark cannot count against another:

* ``tracemalloc`` -- peak bytes Python allocated during the call (the decoded values and all
  temporaries; slows the call down, so its time is not reported);
* ``rss``         -- growth of the resident set over the call: the peak (``VmHWM``, reset through
  ``/proc/self/clear_refs`` just before the call) minus the RSS before it; includes what native
  code allocates outside Python's allocator.

The input is the records' frames, cycled to the batch size, built before the measurement starts.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Any, Callable, Dict, List, Optional, Sequence

DEFAULT_MEMORY_RECORDS = 1_000_000
IMPLEMENTATIONS = ("native", "pure")
MODES = ("tracemalloc", "rss")


def _proc_status_kib(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(impl: str, mode: str, records: int, seed: int = 42) -> Dict[str, Any]:
    """In this process: decode ``records`` standard Avro frames with one ``deserialize_batch``."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from .. import serde_cases as cases
    from .lanes import BATCH_FORMAT, BATCH_SIZE, build_serdes, built_implementation, confluent_module, context, make_serde

    registry = SchemaRegistryClient.new_client({"url": "mock://serdes-bench-memory"})
    ctx = context(BATCH_FORMAT, BATCH_SIZE, "-memory")
    recs = cases.records(BATCH_FORMAT, BATCH_SIZE, 1000, seed)
    conf_ser = make_serde(confluent_module(BATCH_FORMAT), BATCH_FORMAT, BATCH_SIZE, "serialize", registry)
    framed = [conf_ser(r, ctx) for r in recs]
    de = build_serdes(impl, BATCH_FORMAT, BATCH_SIZE, "deserialize", registry, framed[0], ctx)
    decode_batch: Callable[[List[bytes], Any], List[Any]] = de.deserialize_batch  # type: ignore[attr-defined]
    frames = [framed[i % len(framed)] for i in range(records)]
    gc.collect()
    out: Dict[str, Any] = {"implementation": built_implementation(impl), "lane": impl, "mode": mode,
                           "records": records}
    if mode == "tracemalloc":
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        values = decode_batch(frames, ctx)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out["peak_bytes"] = peak - base
    else:
        rss_before = _proc_status_kib("VmRSS")
        reset = _reset_peak_rss()
        t0 = time.perf_counter()
        values = decode_batch(frames, ctx)
        out["seconds"] = round(time.perf_counter() - t0, 3)
        hwm = _proc_status_kib("VmHWM")
        if rss_before is None or hwm is None or not reset:
            out["error"] = "RSS peak not measurable here (needs Linux /proc/self/status and clear_refs)"
        else:
            out["peak_bytes"] = (hwm - rss_before) * 1024
            out["rss_before_bytes"] = rss_before * 1024
    if len(values) != records:
        raise AssertionError(f"deserialize_batch returned {len(values)} values for {records} frames")
    if "peak_bytes" in out:
        out["bytes_per_record"] = out["peak_bytes"] / records
    return out


def run_children(lanes: Sequence[str], records: int, seed: int, log: Callable[[str], None],
                 timeout: float = 900.0) -> List[Dict[str, Any]]:
    """One child process per (lane, mode); their JSON results (or the error of a failed child)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    results = []
    for impl in (i for i in IMPLEMENTATIONS if i in lanes):
        for mode in MODES:
            cmd = [sys.executable, "-m", "benchmarks.serde.memory", "--lane", impl, "--mode", mode,
                   "--records", str(records), "--seed", str(seed)]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:  # a loaded machine and tracemalloc: report it, keep the run
                results.append({"lane": impl, "mode": mode, "records": records,
                                "error": f"child did not finish in {timeout:.0f}s"})
                continue
            lines = proc.stdout.strip().splitlines()
            if proc.returncode != 0 or not lines:
                results.append({"lane": impl, "mode": mode, "records": records,
                                "error": f"child exited {proc.returncode}: {proc.stderr.strip()[-500:]}"})
            else:
                results.append(json.loads(lines[-1]))
            log(f"  memory {impl:6s} {mode:11s} {records:,} records: {time.perf_counter() - t0:.1f}s")
    return results


def main(argv: Optional[Sequence[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serde.memory", description=__doc__.split("\n\n")[0])
    p.add_argument("--lane", choices=IMPLEMENTATIONS, required=True)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--records", type=int, default=DEFAULT_MEMORY_RECORDS)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args(argv)
    print(json.dumps(measure(a.lane, a.mode, a.records, a.seed)))


if __name__ == "__main__":
    main()
