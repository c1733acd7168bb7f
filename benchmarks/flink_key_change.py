"""Per-record cost of a process-mode keyed record's state layer: PyFlink's ``set_current_key`` vs
serdes' (``serdes.flink._pyflink.speed_up_key_changes``), one and two registered states.

PyFlink 2.2.1's real ``RemoteKeyedStateBackend`` (Beam bag states, its row key coder) over a dict
standing in for the runner's state API (``tests/support/state_backend.py``), so what is timed is
the Python worker's own work for a record of a keyed operator: the key change (``Row(key)``, as
PyFlink's operation passes it), one ``value()`` and one ``update()`` of the first state, and a write
of the second state when the key is new (what ``ProtobufValueStateDescriptor``'s retained
descriptor does).  97 keys in turn, like ``benchmarks/flink_e2e.py``; both methods in one process,
interleaved, medians of the repetitions.

    python benchmarks/flink_key_change.py [--records 200000] [--repeats 5]

Writes benchmarks/results/flink_key_change.{json,md}.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._results import write_results  # noqa: E402


def per_record_us(fast: bool, n_states: int, records: int, keys: int = 97) -> float:
    from pyflink.common import Row, Types

    from serdes.flink import _pyflink
    from tests.support.state_backend import remote_backend

    backend, _, states = remote_backend(Types.STRING(), 1000, n_states)
    if fast:
        class Ctx:
            _keyed_state_backend = backend

        assert _pyflink.speed_up_key_changes(Ctx())
    first, rest = states[0], states[1:]
    names = [f"customer-{i}" for i in range(keys)]
    payload = b"\x08\x01\x10\x02" * 5
    start = time.perf_counter()
    for i in range(records):
        backend.set_current_key(Row(names[i % keys]))
        if first.value() is None:
            for s in rest:
                s.update(b"descriptor")
        first.update(payload)
    elapsed = time.perf_counter() - start
    backend.commit()
    return elapsed / records * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    from serdes.flink import _pyflink

    samples = {(fast, n): [] for fast in (False, True) for n in (1, 2)}
    for _ in range(args.repeats):
        for key in samples:
            samples[key].append(per_record_us(key[0], key[1], args.records))
    rows = []
    for n in (1, 2):
        pyflink, serdes = statistics.median(samples[(False, n)]), statistics.median(samples[(True, n)])
        rows.append({"states": n, "pyflink_us": round(pyflink, 2), "serdes_us": round(serdes, 2),
                     "ratio": round(pyflink / serdes, 2),
                     "pyflink_all": [round(x, 2) for x in samples[(False, n)]],
                     "serdes_all": [round(x, 2) for x in samples[(True, n)]]})
    meta = {"records": args.records, "repeats": args.repeats, "keys": 97, "apache_flink": _pyflink.pyflink_version(),
            "python": platform.python_version()}
    lines = ["# flink_key_change", "", f"{meta}", "",
             "| registered states | PyFlink's set_current_key µs/record | serdes' µs/record | ratio | all (PyFlink / serdes) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['states']} | {r['pyflink_us']} | {r['serdes_us']} | {r['ratio']}x | "
                     f"{r['pyflink_all']} / {r['serdes_all']} |")
    write_results(args.out, "flink_key_change", {"meta": meta, "rows": rows}, lines)


if __name__ == "__main__":
    main()
