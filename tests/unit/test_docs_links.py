"""Every relative link in README.md and docs/*.md points at a file that exists, and every
``#anchor`` at a heading of that file (GitHub's slugs), so the docs never send a reader nowhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def _prose(path: Path) -> List[Tuple[int, str]]:
    """``(line number, text)`` of the lines outside fenced code blocks."""
    lines, fenced = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            lines.append((n, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to ``-``."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path, cache: Dict[Path, Set[str]] = {}) -> Set[str]:  # noqa: B006 - a per-run memo
    if path not in cache:
        seen: Dict[str, int] = {}
        found = set()
        for _, line in _prose(path):
            if line.startswith("#"):
                base = slug(line.lstrip("#"))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def test_slug_follows_github() -> None:
    assert slug(" The speedups switch") == "the-speedups-switch"
    assert slug("Keyed jobs with one Python operator: `read_kafka_keyed`") == \
        "keyed-jobs-with-one-python-operator-read_kafka_keyed"
    assert slug("Avro / JSON Schema to `Row` (Table API)") == "avro--json-schema-to-row-table-api"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for n, line in _prose(doc):
        for target in _LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            if not dest.exists():
                broken.append(f"{doc.name}:{n}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{doc.name}:{n}: {target} (no heading #{anchor} in {dest.name})")
    assert not broken, "\n".join(broken)
