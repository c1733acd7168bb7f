"""unit tests (see tests/__init__.py)."""
