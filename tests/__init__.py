"""serdes' test suite, a package: test modules are imported as ``tests.<dir>.<module>`` (no two
files collide on a basename) and shared helpers live in ``tests.support``.

``tests/protos`` is not a package: it is the import root of the generated ``serdes_test`` modules
(their imports are baked in by protoc), put on the path by ``pythonpath`` in pyproject.toml.
"""
