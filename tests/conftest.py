"""Shared pytest setup.

Server fixtures (``kafka_bootstrap``, ``registry_url``, ``servers``) come from
``serdes.testing.pytest_plugin`` and start lazily, so unit tests never need a
server.  Everything under ``tests/integration/`` is marked ``integration``;
deselect with ``-m "not integration"``.  See docs/testing.md.
"""

from pathlib import Path

import pytest

pytest_plugins = (
    "serdes.testing.pytest_plugin",
    "tests.support.implementations",
    "tests.support.generated_modules",
    "tests.support.xdist_groups",
    "tests.support.registry_tls",
    "tests.support.jvm_options",
)

_INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _INTEGRATION_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)
