"""The docs' examples that use quixstreams (docs/quix.md) run as written and print what the docs show.

tests/unit/test_docs_examples.py runs every other example; these need quixstreams, which only the
quix leg's venv has. An example that talks to the servers runs twice, as the other server examples do.
"""

from __future__ import annotations

import pytest

from tests.unit.test_docs_examples import ROOT, Example, assert_prints_what_it_shows, example_params

from .conftest import QUIX_REASON

pytest.importorskip("quixstreams", reason=QUIX_REASON)


@pytest.mark.parametrize("example", example_params(needs_servers=False, needs_quix=True))
def test_quix_doc_example(example: Example, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert_prints_what_it_shows(example)


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.parametrize("example", example_params(needs_servers=True, needs_quix=True))
def test_quix_doc_example_on_the_servers_twice(
    example: Example, kafka_bootstrap: str, registry_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.chdir(tmp_path)  # quixstreams' state directory ("state") goes there
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka_bootstrap)
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", registry_url)
    for _ in range(2):
        assert_prints_what_it_shows(example)
