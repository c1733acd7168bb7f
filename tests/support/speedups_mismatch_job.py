"""The job of tests/flink/test_speedups_mismatch.py, run as ``python -m
tests.support.speedups_mismatch_job RESULT_JSON`` in a process of its own: that process starts its
own PyFlink gateway JVM (a MiniCluster) whose log goes to ``$FLINK_LOG_DIR``, and with
``_python_worker_execution_mode=process`` the MiniCluster starts its Python workers as separate
processes (not PyFlink's loopback workers inside this one), with the environment of this process
and ``python.pythonpath`` from ``SERDES_TEST_WORKER_PATH``.

A running count per key in keyed state; each output also says whether the worker's operator got
serdes' key change and per-record wrapper.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterator, List

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor

from serdes.flink import _pyflink

#: the records: 7 keys, 9 or 8 records each
WORDS: List[str] = [f"w{i % 7}" for i in range(60)]


class CountPerKey(KeyedProcessFunction):
    """``"key:count:<key change installed>:<per-record wrapper installed>"`` per record."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.key_change = _pyflink.speed_up_key_changes(runtime_context)
        self.records = _pyflink.speed_up_records(self, runtime_context)

    def process_element(self, value: Any, ctx: Any) -> Iterator[str]:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{ctx.get_current_key()}:{n}:{self.key_change}:{self.records}"


def main(result_path: str) -> None:
    import serdes.flink as sf

    env = sf.create_env(parallelism=2, execution_mode="process",
                        config={"python.pythonpath": os.environ["SERDES_TEST_WORKER_PATH"]})
    stream = env.from_collection(WORDS, type_info=Types.STRING())
    counted = stream.key_by(lambda w: w, key_type=Types.STRING()).process(CountPerKey(), output_type=Types.STRING())
    with open(result_path, "w") as out:
        json.dump(sorted(counted.execute_and_collect()), out)


if __name__ == "__main__":
    main(sys.argv[1])
