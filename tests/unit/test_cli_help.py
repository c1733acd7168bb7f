"""The command-line help of ``python -m serdes.testing`` and ``python -m serdes.demo``: plain text
(no reST markup), every flag described with its default, a usage error that names the commands;
and ``serdes.testing run``'s exports meet what the README quick start reads."""

from __future__ import annotations

import argparse
import re
import socket
from pathlib import Path

import pytest

from serdes.testing import __main__ as testing_cli

ROOT = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _check_help(parser: argparse.ArgumentParser) -> None:
    for p in _parsers(parser):
        text = p.format_help()
        assert "``" not in text and ":class:" not in text, text
        for action in p._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and "default" in action.help, f"{p.prog} {action.option_strings}: {action.help!r}"


def test_testing_help_is_plain_and_every_flag_has_its_default():
    parser = testing_cli.build_parser()
    _check_help(parser)
    top = parser.format_help()
    assert "fetch" in top and "run" in top and "Java 21" in top


def test_demo_help_is_plain_and_every_flag_has_its_default():
    pytest.importorskip("pyflink")  # serdes.demo is a PyFlink job; runs in scripts/test.sh's env
    from serdes.demo import __main__ as demo_cli

    _check_help(demo_cli.build_parser())


@pytest.mark.parametrize("argv", [[], ["nope"]])
def test_testing_usage_error_lists_the_commands(argv, capsys):
    with pytest.raises(SystemExit) as info:
        testing_cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "required: cmd" not in err
    assert re.search(r"^\s+fetch\s+download", err, re.M) and re.search(r"^\s+run\s+start", err, re.M), err


def test_demo_bootstrap_without_registry_is_a_usage_error(capsys):
    pytest.importorskip("pyflink")
    from serdes.demo import __main__ as demo_cli

    with pytest.raises(SystemExit) as info:
        demo_cli.main(["--bootstrap", "127.0.0.1:1"])
    assert info.value.code == 2
    assert "--bootstrap and --registry go together" in capsys.readouterr().err


def test_run_exports_what_the_readme_quick_start_reads():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    read = set(re.findall(r'os\.environ\.get\("([A-Z_]+)"', quick)) - {"TOPIC"}
    assert read == {"KAFKA_BOOTSTRAP", "SCHEMA_REGISTRY_URL"}
    lines = testing_cli.exports("127.0.0.1:9092", "http://127.0.0.1:8081/apis/ccompat/v7")
    exported = dict(kv.split("=", 1) for line in lines for kv in line.removeprefix("export ").split())
    assert exported["KAFKA_BOOTSTRAP"] == exported["SERDES_TEST_BOOTSTRAP"] == "127.0.0.1:9092"
    assert exported["SCHEMA_REGISTRY_URL"] == "http://127.0.0.1:8081/apis/ccompat/v7"
    assert read <= exported.keys()
    # the README shows the lines `run` prints
    assert lines[0] in readme and lines[1] in readme


def test_run_takes_the_default_port_when_free_else_any():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        assert testing_cli._pick_port(None, taken) is None  # taken: a free port is chosen
        assert testing_cli._pick_port(1234, taken) == 1234  # asked for: used as given
    assert testing_cli._pick_port(None, taken) == taken  # free again: the default
    assert testing_cli._pick_port(0, taken) is None  # 0: any free port
