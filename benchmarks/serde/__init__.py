"""The serializer benchmark (``python benchmarks/serde_bench.py``), by job.

* :mod:`benchmarks.serde_cases` -- the cases: records and schemas per format and size;
* :mod:`.lanes`  -- what is timed: serdes built twice (``native``: as installed; ``pure``: inside
  ``serdes._native.forced_pure()``), confluent-kafka, the bare codec floor, the batch lanes, and the
  correctness check every lane passes before it is timed;
* :mod:`.timing` -- interleaved repeats, calibration, medians, the one-process ratios;
* :mod:`.memory` -- peak memory of a large batch decode (tracemalloc and RSS, one child process each);
* :mod:`.report` -- targets, the JSON report, the Markdown table, the chart, docs/benchmarks.md.
"""
