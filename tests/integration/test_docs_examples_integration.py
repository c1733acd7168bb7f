"""README/docs examples that need a broker or a registry (or start servers), run against the real servers.

Each runs twice in a row, as a newcomer would rerun it, with no ``TOPIC`` or other variable besides
the two addresses: both runs must print the ```text block under the example, so an example that
reuses a topic, a consumer group's offsets or a subject from its previous run fails here.
"""

from __future__ import annotations

import pytest

from tests.unit.test_docs_examples import Example, assert_prints_what_it_shows, example_params

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("example", example_params(needs_servers=True))
def test_doc_example_prints_what_it_shows_twice(
    example: Example, kafka_bootstrap: str, registry_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", registry_url)
    monkeypatch.delenv("TOPIC", raising=False)
    for _ in range(2):
        assert_prints_what_it_shows(example)
