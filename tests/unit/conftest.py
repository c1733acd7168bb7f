"""Fixtures shared by the unit tests: ``avro_impl`` / ``avro_building`` run a test on the pure and
the native Avro decoder (see tests/support/avro_impl.py)."""

from tests.support.avro_impl import avro_building, avro_impl  # noqa: F401 - pytest fixtures
