"""flink tests (see tests/__init__.py)."""
