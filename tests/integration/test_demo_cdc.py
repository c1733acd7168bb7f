"""The CDC demo (``bash scripts/demo.sh --cdc``) as a user runs it: its own servers, PostgreSQL
and Kafka Connect with Debezium, and the materialized table equal to ``SELECT *``."""

from __future__ import annotations

import pytest

from serdes.demo import cdc

# not in test_debezium_real's xdist group: the demo starts its own servers, and a test of another
# module between that module's tests would make pytest tear its module-scoped pipeline down and
# build it again
pytestmark = pytest.mark.integration


def test_cdc_demo_materializes_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cdc.run() is True
    out = capsys.readouterr().out
    assert "equal: True (7 changes" in out
    assert "2  | grace h. | 80.00   | f" in out  # an updated row, as SELECT * has it
