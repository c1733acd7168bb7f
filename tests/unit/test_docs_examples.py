"""Every ```python block in README.md and docs/*.md runs as written and prints what the docs show.

The rule, for every doc: a ```python block is followed (prose may come between) by a ```text block,
and running the block prints exactly that text. A fragment that is not meant to run on its own is
fenced ```py instead, and is neither run nor checked.

Blocks that talk to a broker or a registry server (or start servers, or a Flink cluster) read
``KAFKA_BOOTSTRAP`` / ``SCHEMA_REGISTRY_URL`` from the environment; they run in
``tests/integration/test_docs_examples_integration.py`` against the real servers, twice each (a
newcomer reruns examples). The rest (confluent-kafka's ``mock://`` registry) run here. Blocks
that use quixstreams (docs/quix.md) run in ``tests/quix/test_quix_docs.py`` instead, in the venv
that has it (scripts/test-matrix.sh quix).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a fence at the start of a line: its info string, its body (fences indented in a list item are not examples)
_FENCE = re.compile(r"^```(\S*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
# (a standalone Flink cluster example runs with the integration examples too: it starts JVMs)
SERVER_MARKERS = ("KAFKA_BOOTSTRAP", "SCHEMA_REGISTRY_URL", "local_servers(", "LocalFlinkCluster(")
# quixstreams caps confluent-kafka below the main environment's: its examples run in the quix leg
QUIX_MARKERS = ("quixstreams", "serdes.quix")


@dataclass(frozen=True)
class Example:
    where: str                # "docs/x.md:LINE", LINE being the example's first line of code
    code: str = field(repr=False)
    expected: Optional[str]   # the ```text block that follows, None when there is none

    @property
    def needs_servers(self) -> bool:
        return any(k in self.code for k in SERVER_MARKERS)

    @property
    def needs_quix(self) -> bool:
        return any(k in self.code for k in QUIX_MARKERS)


def examples() -> List[Example]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        fences = list(_FENCE.finditer(text))
        for i, m in enumerate(fences):
            if m.group(1) != "python":
                continue
            after = fences[i + 1] if i + 1 < len(fences) else None
            expected = after.group(2) if after is not None and after.group(1) == "text" else None
            where = f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 2}"
            out.append(Example(where, m.group(2), expected))
    return out


def example_params(needs_servers: bool, needs_quix: bool = False) -> List[Any]:
    return [pytest.param(e, id=e.where) for e in examples()
            if e.needs_servers == needs_servers and e.needs_quix == needs_quix]


def run_block(code: str) -> str:
    # a module of its own, in sys.modules while it runs, as a script's __main__ is (dataclasses
    # and typing.get_type_hints look a class's module up there)
    module = types.ModuleType("__doc_example__")
    buf = io.StringIO()
    sys.modules[module.__name__] = module
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "<doc example>", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return buf.getvalue()


def assert_prints_what_it_shows(example: Example) -> None:
    assert example.expected is not None, (
        f"{example.where}: a ```python example must be followed by a ```text block with what it prints "
        "(fence a fragment that does not run on its own as ```py)")
    assert run_block(example.code) == example.expected, f"{example.where} prints something else than its ```text"


@pytest.mark.parametrize("example", example_params(needs_servers=False))
def test_doc_example_prints_what_it_shows(example: Example, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples name repository files relative to the root
    assert_prints_what_it_shows(example)


def test_every_doc_example_is_found() -> None:
    """The collection itself: the docs hold examples of both kinds, each with its text block's position."""
    found = examples()
    assert len(found) >= 23
    assert any(e.needs_servers for e in found) and not all(e.needs_servers for e in found)
    assert all(e.code.strip() for e in found)


def test_an_example_without_its_output_fails() -> None:
    """The rule's two ways to fail: no ```text block after the example, and one that differs."""
    with pytest.raises(AssertionError, match="must be followed by a ```text block"):
        assert_prints_what_it_shows(Example("x.md:2", "print(1)\n", None))
    with pytest.raises(AssertionError, match="prints something else"):
        assert_prints_what_it_shows(Example("x.md:2", "print(1)\n", "2\n"))
    assert_prints_what_it_shows(Example("x.md:2", "print(1)\n", "1\n"))


def test_readme_first_screen() -> None:
    """The README's first screen: pip install, the one-import change, and a short example used as
    before (its output is checked by the rule above)."""
    text = (ROOT / "README.md").read_text()
    first = text.split("## ", 1)[0]  # everything before the first section
    assert "pip install serdes" in first and "+from serdes.avro import" in first
    code = first.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 12
    assert "```text\n" in first.split(code, 1)[1]


def test_readme_names_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert "## The two commands" in text
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
