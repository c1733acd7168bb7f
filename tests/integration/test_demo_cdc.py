"""The CDC demo (``bash scripts/demo.sh --cdc``) as a user runs it: its own servers, PostgreSQL
and Kafka Connect with Debezium, and the materialized table equal to ``SELECT *``."""

from __future__ import annotations

import pytest

from serdes.demo import cdc

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("debezium_real")]


def test_cdc_demo_materializes_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cdc.run() is True
    out = capsys.readouterr().out
    assert "equal: True (7 changes" in out
    assert "2  | grace h. | 80.00   | f" in out  # an updated row, as SELECT * has it
