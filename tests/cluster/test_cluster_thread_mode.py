"""Thread mode on the standalone cluster, job after job: pemja (in flink-python) loads libpython
once per class loader, so with flink-python only in each job's jars the second thread-mode job
on a TaskManager failed (``NoSuchFieldException: loadedLibraryNames``).  ``LocalFlinkCluster``
puts flink-python on the TaskManagers' classpath; two jobs at parallelism 4 use every slot of
both TaskManagers twice, and both must finish with every Python record mapped."""

from __future__ import annotations

JOB = """
import sys
from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from serdes import flink as sf

out = sys.argv[1]

# create_env(execution_mode="thread") refuses to build a job with a process-mode Python operator
env = sf.create_env(parallelism=4, execution_mode="thread")
numbers = env.from_source(NumberSequenceSource(1, 2000), WatermarkStrategy.no_watermarks(), "sequence", Types.LONG())
numbers.map(lambda i: i * 2, output_type=Types.LONG()).filter(lambda i: i % 1000 == 0).print()
env.execute("thread-mode-" + out)
"""


def test_two_thread_mode_jobs_in_a_row(flink_cluster, cluster_jars, tmp_path):
    job = tmp_path / "thread_job.py"
    job.write_text(JOB)
    flink_cluster.wait_for_free_slots(4)
    for run in ("first", "second"):
        job_id = flink_cluster.submit(job, [run], jars=cluster_jars, py_files=[tmp_path],
                                      config={"python.execution-mode": "thread"})
        # a failed job raises FlinkJobFailed with the job's exception
        assert flink_cluster.wait_for_job(job_id, "FINISHED") == "FINISHED"
        flink_cluster.wait_for_free_slots(4)
