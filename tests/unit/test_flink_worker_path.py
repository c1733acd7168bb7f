"""How ``create_env`` puts this serdes on the Python workers' path (``serdes/flink/_env.py``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pyflink")

from serdes.flink import _env  # noqa: E402


def test_a_fresh_interpreter_is_asked_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    started = []
    plain_run = subprocess.run

    def counting_run(*args, **kwargs):
        started.append(args[0])
        return plain_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    _env._fresh_interpreter_finds.cache_clear()
    try:
        answers = {_env._worker_pythonpath() for _ in range(3)}
    finally:
        _env._fresh_interpreter_finds.cache_clear()
    assert len(answers) == 1
    assert len(started) == 1, started


def test_the_path_given_to_the_workers_holds_this_serdes() -> None:
    import serdes

    root = _env._worker_pythonpath()
    if root is None:  # a fresh interpreter imports this serdes: nothing to add
        assert _env._fresh_interpreter_finds(Path(serdes.__file__).resolve().parent)
    else:
        assert (root / "serdes").resolve() == Path(serdes.__file__).resolve().parent
