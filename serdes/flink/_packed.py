"""Packed Kafka records: one ``bytes`` per record between the JVM and serdes' keyed operators.

PyFlink turns every ``Row`` it hands to (or takes from) a Python worker into a Python ``Row``
object per row level, and its coder walks each field; for a keyed record that was the largest
single cost in the worker.  The keyed operators (``read_kafka_keyed``, ``process_to_kafka``)
therefore exchange records as one ``byte[]`` packed by the Java shim
(``serdes.flink.PackedRecords``, whose comment has the layout; the two change together and the
shim jar is cached by a hash of its sources, so they cannot drift apart).

:func:`unpack_record` returns what a record row holds, as a tuple
``(topic, partition, offset, timestamp, key, value, headers)``; :func:`pack_producer_record` builds
what the packed sink shim writes.  The bytes come from serdes' own shim in the same job, but the
lengths are still checked against the buffer, so a mismatch is an error, never a wrong slice.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from .._errors import PackedRecordError, ValidationError

__all__ = ["unpack_record", "pack_producer_record", "PackedRecordError", "Record"]

_CONSUMER_HEAD = struct.Struct(">iqqiiii")
_PRODUCER_HEAD = struct.Struct(">iiii")
_INT = struct.Struct(">i")
_C = _CONSUMER_HEAD.size

Record = Tuple[str, int, int, int, Optional[bytes], Optional[bytes], Optional[Dict[str, Optional[bytes]]]]


def _text(buf: bytes, start: int, end: int, what: str) -> str:
    try:
        return buf[start:end].decode()
    except UnicodeDecodeError as e:
        raise PackedRecordError(f"packed record: the {what} is not UTF-8 (byte {e.start} of {end - start})") from None


def _headers(buf: bytes, pos: int, count: int) -> Dict[str, Optional[bytes]]:
    """The headers; a value length of -1 is a null value (``None``, as a plain consumer's header
    list has it)."""
    headers: Dict[str, Optional[bytes]] = {}
    end = len(buf)
    for _ in range(count):
        if pos + 4 > end:
            raise PackedRecordError("packed record: header truncated")
        (n,) = _INT.unpack_from(buf, pos)
        pos += 4
        if n < 0 or pos + n + 4 > end:
            raise PackedRecordError("packed record: header truncated")
        name = _text(buf, pos, pos + n, "header name")
        pos += n
        (n,) = _INT.unpack_from(buf, pos)
        pos += 4
        if n == -1:
            headers[name] = None
            continue
        if n < 0 or pos + n > end:
            raise PackedRecordError("packed record: header value truncated")
        headers[name] = buf[pos:pos + n]
        pos += n
    if pos != end:
        raise PackedRecordError(f"packed record: {end - pos} bytes after the headers")
    return headers


def unpack_record(buf: bytes) -> Record:
    """``(topic, partition, offset, timestamp, key, value, headers)`` of a packed consumer record."""
    try:
        partition, offset, timestamp, tl, kl, vl, hc = _CONSUMER_HEAD.unpack_from(buf)
    except struct.error:
        raise PackedRecordError(f"packed record of {len(buf)} bytes is shorter than its header") from None
    pos = _C + tl
    if tl < 0 or pos > len(buf):
        raise PackedRecordError(f"packed record of {len(buf)} bytes does not match its lengths")
    topic = _text(buf, _C, pos, "topic")
    key = value = None
    if kl >= 0:
        key = buf[pos:pos + kl]
        pos += kl
    if vl >= 0:
        value = buf[pos:pos + vl]
        pos += vl
    if hc < 0:
        if pos != len(buf) or tl < 0:
            raise PackedRecordError(f"packed record of {len(buf)} bytes does not match its lengths")
        return topic, partition, offset, timestamp, key, value, None
    if pos > len(buf) or tl < 0:
        raise PackedRecordError(f"packed record of {len(buf)} bytes does not match its lengths")
    return topic, partition, offset, timestamp, key, value, _headers(buf, pos, hc)


HeaderValue = Union[str, bytes, None]


def _utf8(text: Any, what: str, name: Any) -> bytes:
    if not isinstance(text, str):
        raise ValidationError(f"a header {what} is a {type(text).__name__}, not a str")
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise ValidationError(f"header {name[:100]!r}: the {what} is not valid Unicode (a lone surrogate at "
                              f"index {e.start})") from None


def pack_producer_record(topic: Optional[bytes], key: Optional[bytes], value: Optional[bytes],
                         headers: Union[Mapping[str, HeaderValue], Sequence[Tuple[str, HeaderValue]], None] = None
                         ) -> bytes:
    """A packed producer record; ``topic`` (UTF-8 bytes) ``None`` writes to the sink's default topic.

    ``headers``: a mapping or (name, value) pairs; a ``str`` value is written as UTF-8, ``None`` as
    a null header value.  A name that is not a ``str``, a value that is not ``str``/``bytes``/
    ``None``, or a string that is not valid Unicode (a lone surrogate) is a
    :class:`serdes.ValidationError` naming the header.
    """
    head = _PRODUCER_HEAD.pack(-1 if topic is None else len(topic), -1 if key is None else len(key),
                               -1 if value is None else len(value), -1 if not headers else len(headers))
    parts = [head, topic or b"", key or b"", value or b""]
    if headers:
        for name, v in (headers.items() if isinstance(headers, Mapping) else headers):
            nb = _utf8(name, "name", name)
            parts.append(_INT.pack(len(nb)))
            parts.append(nb)
            if v is None:
                parts.append(_INT.pack(-1))
            else:
                vb = _utf8(v, "value", name) if isinstance(v, str) else v
                if not isinstance(vb, (bytes, bytearray)):
                    raise ValidationError(f"header {str(name)[:100]!r}: a {type(v).__name__} value is not bytes, "
                                          "str or None")
                parts.append(_INT.pack(len(vb)))
                parts.append(vb)
    return b"".join(parts)
