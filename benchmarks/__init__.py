"""Benchmarks for serdes (run ``python -m benchmarks.serde_bench``; see docs/benchmarks.md)."""
