"""Integration-test helpers.

The session-scoped server fixtures live in ``serdes.testing.pytest_plugin``
(loaded from ``tests/conftest.py`` so tests outside this folder, e.g.
``tests/flink``, share the same servers):

* ``kafka_bootstrap`` – str, bootstrap servers
* ``registry_url``    – str, Confluent-compatible registry URL
* ``servers``         – both plus ``stop_registry()`` / ``start_registry()``
  (only the local backend can do that: ``servers.can_restart_registry``)

Backend: ``SERDES_TEST_BACKEND=local|docker|external`` (see docs/testing.md).
"""

import uuid

import pytest


@pytest.fixture
def unique_name(request):
    """A topic/subject name unique to this test run: ``<test>-<random>``."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")[:60]
    return f"{base}-{uuid.uuid4().hex[:8]}"
