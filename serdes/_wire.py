"""Confluent wire format: every framing, no I/O.

Framings (byte-for-byte what confluent-kafka writes):

* magic byte ``0`` + 4-byte big-endian schema id, then the payload;
* magic byte ``1`` + 16-byte schema GUID, then the payload;
* header framing: the record header ``__value_schema_id`` (or ``__key_schema_id``) holds the magic
  byte and id/GUID (``1`` + GUID when confluent-kafka writes it), and the record value is the bare
  payload;
* Protobuf adds, right after the id/GUID (in the payload prefix, or in the header value), the
  message-index array: a zigzag-varint count followed by zigzag-varint indexes, where the common
  ``[0]`` (first message of the file) is written as the single byte ``0``.
"""

from __future__ import annotations

import uuid
from typing import Any, List, Optional, Sequence, Tuple, Union

from ._errors import FramingError, InvalidMagicByteError, RecordLocation, SerdesError, TruncatedFrameError
from ._varint import read_zigzag_bounded, write_zigzag

__all__ = [
    "MAGIC_ID",
    "MAGIC_GUID",
    "KEY_SCHEMA_ID_HEADER",
    "VALUE_SCHEMA_ID_HEADER",
    "Frame",
    "frame_prefix",
    "encode_message_indexes",
    "decode_message_indexes",
    "parse_frame",
    "parse_header_value",
    "header_value_bytes",
    "canonical_header_value",
    "find_schema_id_header",
    "schema_id_header_name",
]

MAGIC_ID = 0
MAGIC_GUID = 1
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"

# A message-index array longer than this is garbage, not a schema (confluent-kafka uses the same cap).
_MAX_INDEXES = 100_000

SchemaRef = Union[int, uuid.UUID]


class Frame:
    """A parsed frame header.

    Attributes:
        schema_id: the int schema id (magic 0) or the ``uuid.UUID`` GUID (magic 1).
        message_indexes: Protobuf message indexes (``[0]`` when absent/zero), else ``None``.
        offset: where the payload starts in the record bytes (0 for header framing).
    """

    __slots__ = ("schema_id", "message_indexes", "offset")

    def __init__(self, schema_id: SchemaRef, message_indexes: Optional[List[int]], offset: int) -> None:
        self.schema_id = schema_id
        self.message_indexes = message_indexes
        self.offset = offset

    def __repr__(self) -> str:
        return f"Frame(schema_id={self.schema_id!r}, message_indexes={self.message_indexes!r}, offset={self.offset})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frame) and (self.schema_id, self.message_indexes, self.offset) == (
            other.schema_id, other.message_indexes, other.offset)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """Encode a Protobuf message-index array; ``[0]`` (or empty) is the single byte ``0``."""
    if not indexes or (len(indexes) == 1 and indexes[0] == 0):
        return b"\x00"
    out = bytearray()
    write_zigzag(out, len(indexes))
    for i in indexes:
        write_zigzag(out, i)
    return bytes(out)


def decode_message_indexes(data: Any, pos: int, end: Optional[int] = None) -> Tuple[List[int], int]:
    """Read a message-index array at ``pos``; returns ``(indexes, position after it)``."""
    if end is None:
        end = len(data)
    if pos >= end:
        raise TruncatedFrameError("record ends before the Protobuf message-index array")
    if data[pos] == 0:
        return [0], pos + 1
    count, pos = read_zigzag_bounded(data, pos, end)
    if count < 0 or count > _MAX_INDEXES:
        raise TruncatedFrameError(f"invalid Protobuf message-index array length {count}")
    indexes = []
    for _ in range(count):
        idx, pos = read_zigzag_bounded(data, pos, end)
        if idx < 0:
            raise TruncatedFrameError(f"negative Protobuf message index {idx}")
        indexes.append(idx)
    return indexes, pos


def frame_prefix(schema_id: SchemaRef, message_indexes: Optional[Sequence[int]] = None) -> bytes:
    """The bytes that precede the payload: magic + id (int) or magic + GUID, plus message indexes.

    This is also the value confluent-kafka writes into the schema-id record header.
    """
    if isinstance(schema_id, int):
        if not 0 <= schema_id <= 0xFFFFFFFF:
            raise ValueError(f"schema id {schema_id} does not fit in 4 bytes")
        head = bytes((MAGIC_ID,)) + schema_id.to_bytes(4, "big")
    else:
        guid = schema_id if isinstance(schema_id, uuid.UUID) else uuid.UUID(str(schema_id))
        head = bytes((MAGIC_GUID,)) + guid.bytes
    if message_indexes is not None:
        head += encode_message_indexes(message_indexes)
    return head


def parse_frame(data: Any, protobuf: bool = False, location: Optional[RecordLocation] = None) -> Frame:
    """Parse the frame at the start of ``data`` (bytes, bytearray or memoryview).

    Raises:
        InvalidMagicByteError: the first byte is not 0 or 1.
        TruncatedFrameError: the record ends inside the frame.
    """
    try:
        n = len(data)
        if n == 0:
            raise TruncatedFrameError("empty record: expected a magic byte")
        magic = data[0]
        if magic == MAGIC_ID:
            if n < 5:
                raise TruncatedFrameError(f"record of {n} bytes ends inside the 4-byte schema id")
            sid: SchemaRef = int.from_bytes(data[1:5], "big")
            pos = 5
        elif magic == MAGIC_GUID:
            if n < 17:
                raise TruncatedFrameError(f"record of {n} bytes ends inside the 16-byte schema GUID")
            sid = uuid.UUID(bytes=bytes(data[1:17]))
            pos = 17
        else:
            raise InvalidMagicByteError(
                f"unknown magic byte {magic:#04x}: not produced by a Schema Registry serializer"
            )
        indexes = None
        if protobuf:
            indexes, pos = decode_message_indexes(data, pos, n)
        return Frame(sid, indexes, pos)
    except SerdesError as e:
        if location is not None:
            e.location = location
            e.args = (e._format(),)
        raise


def header_value_bytes(value: Any, name: str = VALUE_SCHEMA_ID_HEADER, location: Optional[RecordLocation] = None) -> bytes:
    """A schema-id header value as bytes: ``bytes``, ``bytearray``, ``memoryview``, or a ``str`` of
    code points up to U+00FF (one byte each, as a header written as text). Anything else --
    another type, a ``str`` above U+00FF -- is a :class:`FramingError` naming the header."""
    if value.__class__ is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError as e:
            raise FramingError(
                f"record header {name!r} is text with a character above U+00FF at position {e.start}: "
                "not a schema id", location,
            ) from None
    raise FramingError(
        f"record header {name!r} is a {type(value).__name__}, not bytes: not a schema id", location,
    )


def parse_header_value(
    value: Any, protobuf: bool = False, location: Optional[RecordLocation] = None, name: str = VALUE_SCHEMA_ID_HEADER,
) -> Frame:
    """Parse a schema-id header value (the whole value: magic byte, id or GUID, and for Protobuf the
    message indexes); the returned frame's ``offset`` is 0 (bare payload).

    Raises:
        FramingError: the value is not bytes (or latin-1 text), or has bytes after the frame.
        InvalidMagicByteError, TruncatedFrameError: as :func:`parse_frame`.
    """
    raw = header_value_bytes(value, name, location)
    try:
        frame = parse_frame(raw, protobuf, location)
    except SerdesError as e:
        e.reason = f"record header {name!r}: {e.reason}"
        e.args = (e._format(),)
        raise
    if frame.offset != len(raw):
        what = "schema id" if frame.offset == 5 else "schema GUID"
        if protobuf:
            what += " and message indexes"
        raise FramingError(
            f"record header {name!r} has {len(raw) - frame.offset} bytes after the {what}: not a schema-id header",
            location,
        )
    frame.offset = 0
    return frame


def canonical_header_value(frame: Frame) -> bytes:
    """The one header value of a parsed frame (shortest varints, ``[0]`` as one zero byte): what a
    schema-id header cache is keyed by, so two spellings of one frame share one entry."""
    return frame_prefix(frame.schema_id, frame.message_indexes)


def schema_id_header_name(is_key: bool) -> str:
    """``__key_schema_id`` for keys, ``__value_schema_id`` for values."""
    return KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER


def find_schema_id_header(headers: Any, is_key: bool, location: Optional[RecordLocation] = None) -> Optional[Any]:
    """The schema-id header value from a list of ``(name, value)`` pairs or a dict, else ``None``.

    Raises:
        FramingError: ``headers`` is neither a dict nor a sequence of ``(name, value)`` pairs.
    """
    if not headers:
        return None
    name = KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER
    if isinstance(headers, dict):
        return headers.get(name)
    try:
        for k, v in headers:
            if k == name:
                return v
    except (TypeError, ValueError) as e:  # not iterable, or an entry that is not a pair
        raise FramingError(
            f"record headers are not a list of (name, value) pairs or a dict, looking for {name!r}: "
            f"{type(e).__name__}: {e}", location,
        ) from None
    return None
