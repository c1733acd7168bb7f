"""The native extension's ABI check: a build made from other program-format sources is refused.

rust/build.rs hashes the Python sources that build the extension's programs and call its
constructors (the extension's ``FORMAT_SOURCES``) into ``abi_version()``; ``serdes._native`` hashes
the same files at import (``format_hash``) and runs pure Python, with one warning naming the rebuild
command, when they differ. The stale cases run in child interpreters: a copy of the package whose
sources moved on after the build (no rebuild needed to simulate it), and a build from before the
hash (``abi_version() == 1``, no ``FORMAT_SOURCES``). The extension's opcode tables (``OPCODES``)
must also be the ones the lowerings write (``serdes._native_opcodes``): a build whose Rust side was
edited apart from them is refused the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, Dict

import pytest

from serdes import _native, _native_opcodes

ROOT = Path(__file__).resolve().parents[2]

needs_native = pytest.mark.skipif(
    _native.native is None, reason=f"native extension not loaded ({_native.pure_python_reason}); CI builds it"
)

# the child imports serdes from sys.path[0] only (an editable install's finder would win otherwise),
# decodes and encodes one record, and reports the serdes warnings of the import
CHILD = '''
import io, json, sys, warnings
sys.meta_path = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
{setup}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import serdes, serdes._native as n
import fastavro
from serdes.avro._native_decoder import compile_native_decoder
schema = {{"type": "record", "name": "R", "fields": [{{"name": "a", "type": "long"}}]}}
buf = io.BytesIO()
fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), {{"a": -3}})
value = compile_native_decoder(schema)(buf.getvalue(), 0, None)
print(json.dumps({{"file": serdes.__file__, "implementation": n.implementation(), "value": value,
                  "abi": n.NATIVE_ABI, "reason": n.pure_python_reason,
                  "warnings": [str(w.message) for w in caught if "serdes" in str(w.message)]}}))
'''


def run_child(package_root: Path, setup: str = "") -> Dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("SERDES_PURE_PYTHON", "PYTHONPATH")}
    env["PYTHONPATH"] = str(package_root)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD.format(setup=setup))],
        capture_output=True, text=True, timeout=180, env=env, cwd=str(package_root),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: Dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(package_root)), out["file"]
    return out


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of this checkout's serdes package, built extension included."""
    shutil.copytree(ROOT / "serdes", tmp_path / "serdes", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@needs_native
def test_the_loaded_extension_was_built_from_these_sources() -> None:
    native = _native.native
    assert native is not None
    sources = list(native.FORMAT_SOURCES)
    assert {"_native_opcodes.py", "avro/_native_decoder.py", "avro/_native_encoder.py", "_serde.py",
            "arrow/_native.py"} <= set(sources)
    assert native.abi_version() == _native.format_hash(sources) == _native.NATIVE_ABI
    assert len(_native.NATIVE_ABI) == 16


def test_format_hash_ignores_comments_and_blank_lines_only(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("X = 1\n\ndef f():\n    return X\n")
    base = _native.format_hash(["a.py"], tmp_path)
    (tmp_path / "a.py").write_text("X = 1   \r\n# why X is 1\n\n\ndef f():\n        # a note\n    return X\n")
    assert _native.format_hash(["a.py"], tmp_path) == base
    (tmp_path / "a.py").write_text("X = 2\n\ndef f():\n    return X\n")
    assert _native.format_hash(["a.py"], tmp_path) != base
    (tmp_path / "a.py").write_text("X = 1\n\ndef f():\n  return X\n")  # indentation is code
    assert _native.format_hash(["a.py"], tmp_path) != base


@needs_native
def test_a_build_older_than_its_sources_is_refused_with_one_warning(package_copy: Path) -> None:
    fresh = run_child(package_copy)
    assert fresh["implementation"] == "native" and fresh["warnings"] == [] and fresh["value"] == {"a": -3}
    # the program format moves on (a code line of the lowering changes), the build does not
    with open(package_copy / "serdes" / "avro" / "_native_decoder.py", "a") as f:
        f.write("\n_FORMAT_REVISION = 2\n")
    stale = run_child(package_copy)
    assert stale["implementation"] == "pure" and stale["abi"] is None
    assert stale["value"] == {"a": -3}  # pure Python decodes instead
    assert len(stale["warnings"]) == 1, stale["warnings"]
    (msg,) = stale["warnings"]
    assert "stale" in msg and "running pure Python" in msg and "bash scripts/build-native.sh" in msg, msg
    assert fresh["abi"] in msg and "stale" in stale["reason"]


@needs_native
def test_a_comment_edit_does_not_stale_the_build(package_copy: Path) -> None:
    with open(package_copy / "serdes" / "avro" / "_native_decoder.py", "a") as f:
        f.write("\n# a comment added after the build\n\n")
    out = run_child(package_copy)
    assert out["implementation"] == "native" and out["warnings"] == []


def test_a_build_from_before_the_format_hash_is_refused_with_one_warning(tmp_path: Path) -> None:
    # abi_version() returned 1 before the hash, and there was no FORMAT_SOURCES: stand such a
    # module in for the extension (this runs whether or not the real one is built)
    shutil.copytree(ROOT / "serdes", tmp_path / "serdes", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    setup = (
        "import types; old = types.ModuleType('serdes._serdes_native'); old.abi_version = lambda: 1; "
        "sys.modules['serdes._serdes_native'] = old"
    )
    out = run_child(tmp_path, setup)
    assert out["implementation"] == "pure" and out["value"] == {"a": -3}
    assert len(out["warnings"]) == 1, out["warnings"]
    (msg,) = out["warnings"]
    assert "ABI 1" in msg and "predates the program-format hash" in msg and "bash scripts/build-native.sh" in msg


@needs_native
def test_the_extension_reads_the_opcodes_the_lowerings_write() -> None:
    native = _native.native
    assert native is not None
    assert native.OPCODES == _native_opcodes.tables()
    assert _native.opcode_mismatch(native) is None
    # every program's table is there, by the names the Python side uses
    assert native.OPCODES["decoder"]["MISMATCH"] == _native_opcodes.MISMATCH
    assert native.OPCODES["decoder_post"]["P_CALL"] == _native_opcodes.P_CALL
    assert native.OPCODES["encoder"]["E_LOGICAL"] == _native_opcodes.E_LOGICAL
    assert native.OPCODES["encoder_fast"]["F_DECIMAL"] == _native_opcodes.F_DECIMAL


def test_an_opcode_table_apart_from_the_lowerings_is_refused_with_one_warning(tmp_path: Path) -> None:
    # a build of these very sources (its ABI matches) whose Rust side numbers an opcode otherwise:
    # stand such a module in for the extension (this runs whether or not the real one is built)
    shutil.copytree(ROOT / "serdes", tmp_path / "serdes", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    sources = ["_native_opcodes.py"]
    tables = _native_opcodes.tables()
    tables["encoder"]["E_LOGICAL"] = 16
    setup = (
        "import types; m = types.ModuleType('serdes._serdes_native'); "
        f"m.abi_version = lambda: {_native.format_hash(sources, tmp_path / 'serdes')!r}; "
        f"m.FORMAT_SOURCES = {sources!r}; m.OPCODES = {tables!r}; sys.modules['serdes._serdes_native'] = m"
    )
    out = run_child(tmp_path, setup)
    assert out["implementation"] == "pure" and out["value"] == {"a": -3} and out["abi"] is None
    assert len(out["warnings"]) == 1, out["warnings"]
    (msg,) = out["warnings"]
    assert "encoder E_LOGICAL: 15 here, 16 built" in msg and "running pure Python" in msg, msg
    # and one with no table at all
    fake = types.ModuleType("fake")
    assert "exports no opcode table" in (_native.opcode_mismatch(fake) or "")
    fake.OPCODES = _native_opcodes.tables()  # type: ignore[attr-defined]
    assert _native.opcode_mismatch(fake) is None
