"""Kafka records to Arrow columns and back (docs/arrow.md).

Every serdes deserializer has ``deserialize_arrow(frames_or_messages, ctx=None, *, reader_schema=None,
errors="raise", metadata=())``, returning an :class:`ArrowBatch` that pyarrow, Polars and DuckDB
read through the Arrow PyCapsule interface; every serializer has ``serialize_arrow(table, ctx=None)``,
one framed value per row. :func:`poll_arrow` fills one batch from a consumer. Needs pyarrow
(``pip install serdes[arrow]``).
"""

from __future__ import annotations

try:
    import pyarrow as _pyarrow  # noqa: F401 - checked here, used by the modules below
except ImportError as e:  # pragma: no cover - the core installs without pyarrow
    raise ImportError("serdes.arrow needs pyarrow: pip install 'serdes[arrow]'") from e

from ._avro import NoColumnarShape
from ._batch import METADATA, ArrowBatch
from ._consumer import poll_arrow
from ._decode import deserialize_arrow
from ._encode import serialize_arrow

__all__ = ["ArrowBatch", "METADATA", "NoColumnarShape", "deserialize_arrow", "serialize_arrow", "poll_arrow",
           "arrow_schema"]


def arrow_schema(serde: object) -> "_pyarrow.Schema":
    """The Arrow schema of a serializer's records (its own schema's columns), as
    ``serialize_arrow`` expects them."""
    from ._encode import serializer_shape

    shape = serializer_shape(serde)
    return _pyarrow.schema([_pyarrow.field(n, s.type, True) for n, s, _ in shape.fields])
