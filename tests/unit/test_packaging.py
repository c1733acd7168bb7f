"""The core installs and imports without PyFlink (PyFlink's protobuf < 6 pin must not reach
plain confluent-kafka users), and the package ships its type marker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import serdes


def _child_prints(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (which must exit 0)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_core_imports_without_pyflink():
    code = (
        "import sys\n"
        "sys.modules['pyflink'] = None  # any import of pyflink now fails\n"
        "import serdes, serdes.avro, serdes.json, serdes.protobuf, serdes.protobuf.compat, serdes.testing, serdes.cdc\n"
        "assert 'pyflink' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print('ok')\n"
    )
    assert _child_prints(code) == "ok"


def test_core_loads_no_test_server_or_demo_code():
    """serdes.testing (local Kafka/registry/Flink servers) and serdes.demo load only when asked for."""
    code = (
        "import sys\n"
        "import serdes, serdes.avro, serdes.json, serdes.protobuf, serdes.protobuf.compat, serdes.cdc\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['serdes', 'testing'], ['serdes', 'demo'])))\n"
    )
    assert _child_prints(code) == "[]"


def test_flink_is_an_extra():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    core = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "apache-flink" not in core
    flink = text.split("\nflink = [", 1)[1].split("]", 1)[0]
    # a bounded range of the supported releases (docs/flink.md, "Supported releases"): the next
    # minor is untested until it is added
    assert re.search(r'"apache-flink>=[0-9.]+,<[0-9.]+"', flink), flink


def test_ships_py_typed():
    assert (Path(serdes.__file__).parent / "py.typed").is_file()
