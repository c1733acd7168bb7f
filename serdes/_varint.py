"""Varints as Avro and the Confluent Protobuf message-index array write them (runtime helpers).

One place for the out-of-line varint code called at run time: the wire-format message-index
array (``serdes._wire``, writer and bounded reader), the generated Avro encoders (``_wl`` in their namespace) and the
generated Avro decoders (``_ru``, and ``_rl`` in their namespace). The generated code keeps its own *inline* loops for the
common one-byte case and the decoder's multi-byte longs; those are there for speed and are not
calls into this module.
"""

from __future__ import annotations

from typing import Any, Tuple

from ._errors import CorruptPayloadError, TruncatedFrameError

__all__ = ["MASK64", "write_zigzag", "read_zigzag_tail", "read_varint_tail", "read_zigzag_bounded"]

MASK64 = 0xFFFFFFFFFFFFFFFF


def write_zigzag(buf: bytearray, n: int) -> None:
    """Append ``n`` as a 64-bit zigzag varint, as confluent-kafka and the Java serializers write it."""
    n = ((n << 1) ^ (n >> 63)) & MASK64
    while n > 0x7F:
        buf.append((n & 0x7F) | 0x80)
        n >>= 7
    buf.append(n)


def read_varint_tail(data: Any, pos: int) -> Tuple[int, int]:
    """Multi-byte varint at ``pos``, *before* zigzag decoding; the caller saw the continuation bit.

    Returns ``(raw value, position after it)``; more than 10 bytes raise CorruptPayloadError.
    """
    b = data[pos]
    n = b & 0x7F
    shift = 7
    pos += 1
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise CorruptPayloadError("varint longer than 10 bytes")
    return n & MASK64, pos


def read_zigzag_tail(data: Any, pos: int) -> Tuple[int, int]:
    """Multi-byte zigzag varint at ``pos`` (the caller saw the continuation bit): ``(value, pos)``.

    Generated decoders inline this loop for speed; this is the out-of-line form.
    """
    n, pos = read_varint_tail(data, pos)
    return (n >> 1) ^ -(n & 1), pos


def read_zigzag_bounded(data: Any, pos: int, end: int) -> Tuple[int, int]:
    """Zigzag varint at ``pos`` of the Protobuf message-index array, read no further than ``end``.

    Unlike the Avro readers above it checks the end itself and raises TruncatedFrameError (a
    framing error, not a payload one) for a varint cut short or longer than 10 bytes.
    """
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise TruncatedFrameError("record ends inside the Protobuf message-index array")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise TruncatedFrameError("varint longer than 10 bytes in the Protobuf message-index array")
    result &= MASK64
    return (result >> 1) ^ -(result & 1), pos
