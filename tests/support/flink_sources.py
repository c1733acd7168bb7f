"""Input streams for the PyFlink MiniCluster tests."""

from __future__ import annotations

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import DataStream, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource


def from_sequence(env: StreamExecutionEnvironment, start: int, end: int, name: str = "sequence") -> DataStream:
    """A bounded DataStream of longs ``start..end`` (inclusive) from Flink's NumberSequenceSource.

    (``env.from_collection`` of byte arrays fails and ``execute_and_collect`` is slow; generate
    volume from a sequence instead.)
    """
    return env.from_source(NumberSequenceSource(start, end), WatermarkStrategy.no_watermarks(), name, Types.LONG())
