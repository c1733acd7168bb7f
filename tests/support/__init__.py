"""Helpers shared by the tests (and benchmarks/flink_cdc.py): sample schemas and records, Kafka
produce/drain, a failing registry over real HTTP, a bounded child interpreter, the cluster job's
driver.

Nothing here imports PyFlink at module level: the unit tests import these modules in
environments without the ``flink`` extra.
"""
