"""What every end-to-end benchmark script shares: the servers it runs against and how it writes
its one current result (``<name>.json`` with the raw numbers, ``<name>.md`` with the table;
docs/benchmarks.md quotes the tables, git keeps the earlier runs)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional, Tuple

#: where the scripts write their results by default
RESULTS = Path(__file__).resolve().parent / "results"


def servers(stack: contextlib.ExitStack, bootstrap: Optional[str] = None,
            registry: Optional[str] = None) -> Tuple[str, str]:
    """``(bootstrap, registry)``: the given ones, else ``$SERDES_TEST_BOOTSTRAP`` /
    ``$SERDES_TEST_REGISTRY_URL``, else a local Kafka and Apicurio Registry (serdes.testing)
    started on ``stack`` and stopped when it closes."""
    bootstrap = bootstrap or os.environ.get("SERDES_TEST_BOOTSTRAP")
    registry = registry or os.environ.get("SERDES_TEST_REGISTRY_URL")
    if not (bootstrap and registry):
        from serdes.testing import local_servers

        s = stack.enter_context(local_servers())
        bootstrap, registry = s.bootstrap_servers, s.registry_url
    return bootstrap, registry


def write_results(directory: "str | os.PathLike[str]", name: str, data: Any, md_lines: Iterable[str]) -> Path:
    """Write ``data`` to ``<directory>/<name>.json`` and the lines to ``<name>.md``, print the
    table, and return the markdown file's path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    md = "\n".join(md_lines).rstrip("\n") + "\n"
    (d / f"{name}.md").write_text(md)
    print(md, end="")
    return d / f"{name}.md"
