"""A packed consumer record built in Python, for tests of the operators that receive them.

The real ones come from the Java shim (``serdes.flink.PackedRecords.pack``);
``tests/flink/test_packed.py`` checks that this builder and the Java one give the same bytes.
"""

from __future__ import annotations

import struct
from typing import Dict, Optional


def pack_consumer_record(topic: str, partition: int, offset: int, timestamp: int, key: Optional[bytes],
                         value: Optional[bytes], headers: Optional[Dict[str, Optional[bytes]]] = None) -> bytes:
    t = topic.encode()
    parts = [struct.pack(">iqqiiii", partition, offset, timestamp, len(t), -1 if key is None else len(key),
                         -1 if value is None else len(value), -1 if headers is None else len(headers)),
             t, key or b"", value or b""]
    for name, v in (headers or {}).items():
        n = name.encode()
        parts += [struct.pack(">i", len(n)), n] + ([struct.pack(">i", -1)] if v is None else [struct.pack(">i", len(v)), v])
    return b"".join(parts)
