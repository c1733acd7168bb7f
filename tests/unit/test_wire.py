"""Wire format: byte-for-byte against confluent-kafka's SchemaId, and property tests."""

from __future__ import annotations

import io
import uuid

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from hypothesis import given
from hypothesis import strategies as st

import serdes
from serdes import (
    Frame,
    InvalidMagicByteError,
    SerdesError,
    TruncatedFrameError,
    decode_message_indexes,
    encode_message_indexes,
    frame_prefix,
    parse_frame,
)
from serdes._wire import find_schema_id_header, parse_header_value

indexes_st = st.lists(st.integers(min_value=0, max_value=2**31 - 1), min_size=1, max_size=6)


def _confluent_indexes(indexes):
    buf = io.BytesIO()
    SchemaId._encode_varints(buf, list(indexes), zigzag=True)
    return buf.getvalue()


# Published vectors (Confluent's wire-format docs and the Java/Go serializers' tests):
@pytest.mark.parametrize(
    "indexes, expected",
    [
        ([0], b"\x00"),
        ([1], b"\x02\x02"),
        ([0, 0], b"\x04\x00\x00"),
        ([1, 0], b"\x04\x02\x00"),
        ([2, 1], b"\x04\x04\x02"),
        ([64], b"\x02\x80\x01"),
    ],
)
def test_message_index_vectors(indexes, expected):
    assert encode_message_indexes(indexes) == expected
    assert _confluent_indexes(indexes) == expected
    assert decode_message_indexes(expected + b"rest", 0) == (indexes, len(expected))


def test_id_prefix_vector():
    assert frame_prefix(1) == b"\x00\x00\x00\x00\x01"
    assert frame_prefix(0x01020304) == b"\x00\x01\x02\x03\x04"
    assert frame_prefix(7, [0]) == b"\x00\x00\x00\x00\x07\x00"


@given(st.integers(min_value=0, max_value=2**32 - 1), st.one_of(st.none(), indexes_st))
def test_id_prefix_matches_confluent(schema_id, indexes):
    ours = frame_prefix(schema_id, indexes)
    theirs = SchemaId("PROTOBUF" if indexes else "AVRO", schema_id, None, indexes).id_to_bytes()
    assert ours == theirs
    frame = parse_frame(ours + b"payload", protobuf=indexes is not None)
    assert frame.schema_id == schema_id
    assert frame.message_indexes == (indexes if indexes is not None else None)
    assert (ours + b"payload")[frame.offset:] == b"payload"


@given(st.uuids(), st.one_of(st.none(), indexes_st))
def test_guid_prefix_matches_confluent(guid, indexes):
    ours = frame_prefix(guid, indexes)
    theirs = SchemaId("PROTOBUF" if indexes else "AVRO", None, str(guid), indexes).guid_to_bytes()
    assert ours == theirs
    frame = parse_frame(ours, protobuf=indexes is not None)
    assert frame.schema_id == guid and frame.offset == len(ours)


@given(st.binary(max_size=40), st.booleans())
def test_garbage_raises_only_typed_errors(data, protobuf):
    try:
        frame = parse_frame(data, protobuf)
    except SerdesError:
        return
    # whatever parsed must survive a re-encode (non-canonical index arrays such as [0] written
    # as count 1 + index 0 re-encode to the canonical single 0 byte)
    again = parse_frame(frame_prefix(frame.schema_id, frame.message_indexes), protobuf)
    assert (again.schema_id, again.message_indexes) == (frame.schema_id, frame.message_indexes)
    assert frame.offset <= len(data)


@pytest.mark.parametrize(
    "data, error",
    [
        (b"", TruncatedFrameError),
        (b"\x00\x00\x00", TruncatedFrameError),
        (b"\x01" + b"\x00" * 10, TruncatedFrameError),
        (b"\x02\x00\x00\x00\x01", InvalidMagicByteError),
        (b"{\"a\": 1}", InvalidMagicByteError),
    ],
)
def test_bad_frames(data, error):
    with pytest.raises(error) as info:
        parse_frame(data, location=serdes.RecordLocation("orders", "value", 3, 42))
    msg = str(info.value)
    assert "topic='orders'" in msg and "partition=3" in msg and "offset=42" in msg


def test_truncated_message_indexes():
    with pytest.raises(TruncatedFrameError):
        parse_frame(b"\x00\x00\x00\x00\x01", protobuf=True)
    with pytest.raises(TruncatedFrameError):
        parse_frame(b"\x00\x00\x00\x00\x01\x04\x02", protobuf=True)  # count 2, one index
    with pytest.raises(TruncatedFrameError):
        parse_frame(b"\x00\x00\x00\x00\x01\x80", protobuf=True)  # unterminated varint


def test_header_value_and_lookup():
    guid = uuid.uuid4()
    value = frame_prefix(guid, [1, 0])
    headers = [("other", b"x"), ("__value_schema_id", value)]
    assert find_schema_id_header(headers, is_key=False) == value
    assert find_schema_id_header(headers, is_key=True) is None
    assert find_schema_id_header({"__key_schema_id": value}, is_key=True) == value
    frame = parse_header_value(value, protobuf=True)
    assert frame == Frame(guid, [1, 0], 0)


def test_errors_are_confluent_serialization_errors_and_pickle():
    import pickle

    from confluent_kafka.serialization import SerializationError

    err = serdes.CorruptPayloadError("bad bytes", serdes.RecordLocation("t", "value", 1, 2), 5)
    assert isinstance(err, SerializationError)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is serdes.CorruptPayloadError
    assert str(back) == str(err) and back.location.offset == 2 and back.schema_id == 5
    err.at(offset=9)
    assert "offset=9" in str(err)
