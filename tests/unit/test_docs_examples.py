"""Every ```python block in README.md and docs/*.md runs as written.

Blocks that talk to a broker or a registry server (or start a Flink cluster) read ``KAFKA_BOOTSTRAP`` / ``SCHEMA_REGISTRY_URL``
from the environment; they run in ``tests/integration/test_docs_examples_integration.py`` against the
real servers. The rest (confluent-kafka's ``mock://`` registry) run here.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# (a standalone Flink cluster example runs with the integration examples too: it starts JVMs)
SERVER_MARKERS = ("KAFKA_BOOTSTRAP", "SCHEMA_REGISTRY_URL", "local_servers(", "LocalFlinkCluster(")


def python_blocks(needs_servers: bool):
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for i, m in enumerate(_BLOCK.finditer(text)):
            code = m.group(1)
            if any(k in code for k in SERVER_MARKERS) == needs_servers:
                line = text.count("\n", 0, m.start()) + 2
                out.append(pytest.param(code, id=f"{doc.name}:{line}"))
    return out


def run_block(code: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "<doc example>", "exec"), {"__name__": "__doc_example__"})
    return buf.getvalue()


@pytest.mark.parametrize("code", python_blocks(needs_servers=False))
def test_doc_example_runs(code, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples name repository files relative to the root
    run_block(code)


def test_readme_error_example_prints_what_it_says():
    text = (ROOT / "README.md").read_text()
    code = text.split("## Errors", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    shown = text.split("## Errors", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert run_block(code) == shown


def test_readme_first_example_prints_what_it_says():
    """The README's first screen: the one-import change, used as before, prints the record back."""
    text = (ROOT / "README.md").read_text()
    first = text.split("## ", 1)[0]  # everything before the first section
    assert "pip install serdes" in first and "+from serdes.avro import" in first
    code = first.split("```python\n", 1)[1].split("```", 1)[0]
    shown = first.split("```text\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 12
    assert run_block(code) == shown


def test_readme_names_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert "## The two commands" in text
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
