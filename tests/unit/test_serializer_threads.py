"""One serializer shared by 8 threads, cold caches, several topics: every frame carries its own
subject's schema id (issue 9 item 3).

Each topic's subject holds a different number of earlier versions, so the serializer's schema gets
a distinct id under each subject. confluent-kafka keeps the last id it saw in per-instance state
(``_schema_id``) that a shared instance races on; serdes resolves each (topic, field) from the
subject alone. The expected frames come from a single-threaded run on a fresh serializer.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from typing import Any, Callable, Dict, List, Tuple

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import parse_frame
from serdes.avro import AvroSerializer
from serdes.json import JSONSerializer
from serdes.protobuf import ProtobufSerializer
from serdes_test import legacy_pb2

THREADS = 8
TOPICS = [f"topic-{i}" for i in range(6)]
TRIALS = 12
RECORDS_PER_TOPIC = 3

AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})
JSON = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})


def _filler(fmt: str, i: int) -> Schema:
    if fmt == "avro":
        return Schema(json.dumps({"type": "record", "name": f"F{i}", "fields": [{"name": "x", "type": "long"}]}), "AVRO")
    if fmt == "json":
        return Schema(json.dumps({"type": "object", "title": f"F{i}"}), "JSON")
    return Schema(f'syntax = "proto3"; message F{i} {{ int64 x = 1; }}', "PROTOBUF")


FORMATS: Dict[str, Tuple[Callable[[Any], Any], Any]] = {
    "avro": (lambda c: AvroSerializer(c, AVRO), {"a": 1}),
    "json": (lambda c: JSONSerializer(JSON, c), {"a": 1}),
    "protobuf": (lambda c: ProtobufSerializer(legacy_pb2.Legacy, c, {"use.deprecated.format": False}), legacy_pb2.Legacy(id=1)),
}


def _registry(fmt: str) -> SchemaRegistryClient:
    """A registry where topic i's subject already holds i other schemas (so ids differ per subject)."""
    client = SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4()}"})
    n = 0
    for i, topic in enumerate(TOPICS):
        for _ in range(i):
            client.register_schema(f"{topic}-value", _filler(fmt, n))
            n += 1
    return client


def _ids(frames: List[bytes], protobuf: bool) -> List[int]:
    return [parse_frame(f, protobuf).schema_id for f in frames]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_shared_serializer_frames_match_single_threaded(fmt):
    make, value = FORMATS[fmt]
    protobuf = fmt == "protobuf"
    # the single-threaded answer, per topic
    client = _registry(fmt)
    solo = make(client)
    expected = {t: solo(value, SerializationContext(t, MessageField.VALUE)) for t in TOPICS}
    assert len({parse_frame(f, protobuf).schema_id for f in expected.values()}) == len(TOPICS), "ids must differ per topic"

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows: races show up quickly
    wrong: List[Tuple[int, str, int, int]] = []
    try:
        for trial in range(TRIALS):
            shared = make(client)  # cold caches; the registry client already knows every subject
            barrier = threading.Barrier(THREADS)
            out: Dict[int, List[Tuple[str, bytes]]] = {i: [] for i in range(THREADS)}

            # this trial's objects, bound now (the threads are joined before the next trial)
            def work(i: int, barrier: threading.Barrier = barrier, out: Dict[int, List[Tuple[str, bytes]]] = out,
                     shared: Any = shared) -> None:
                order = TOPICS[i % len(TOPICS):] + TOPICS[:i % len(TOPICS)]
                barrier.wait()
                for _ in range(RECORDS_PER_TOPIC):
                    for t in order:
                        out[i].append((t, shared(value, SerializationContext(t, MessageField.VALUE))))

            threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(60)
            assert all(len(v) == len(TOPICS) * RECORDS_PER_TOPIC for v in out.values()), "a thread failed"
            for got in out.values():
                for t, frame in got:
                    if frame != expected[t]:
                        wrong.append((trial, t, parse_frame(frame, protobuf).schema_id, parse_frame(expected[t], protobuf).schema_id))
            # and what stays cached is right too
            for t in TOPICS:
                assert shared(value, SerializationContext(t, MessageField.VALUE)) == expected[t]
    finally:
        sys.setswitchinterval(old)
    assert not wrong, f"{len(wrong)} frames with another subject's id, e.g. {wrong[:5]}"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fresh_registry_client_per_trial(fmt):
    """Cold registry client too: registration itself runs concurrently for every subject."""
    make, value = FORMATS[fmt]
    protobuf = fmt == "protobuf"
    for _ in range(4):
        client = _registry(fmt)
        shared = make(client)
        barrier = threading.Barrier(THREADS)
        got: List[Tuple[str, bytes]] = []
        lock = threading.Lock()

        def work(i: int, barrier: threading.Barrier = barrier, shared: Any = shared,
                 lock: threading.Lock = lock, got: List[Tuple[str, bytes]] = got) -> None:
            barrier.wait()
            for t in TOPICS[i % 3:] + TOPICS[:i % 3]:
                f = shared(value, SerializationContext(t, MessageField.VALUE))
                with lock:
                    got.append((t, f))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert len(got) == THREADS * len(TOPICS)
        by_topic: Dict[str, set] = {}
        for t, f in got:
            by_topic.setdefault(t, set()).add(f)
        assert all(len(v) == 1 for v in by_topic.values()), {t: _ids(list(v), protobuf) for t, v in by_topic.items()}
        # each subject's own id: the one the registry holds for the serializer's schema under it
        for t, fs in by_topic.items():
            (frame,) = fs
            assert parse_frame(frame, protobuf).schema_id == client.get_latest_version(f"{t}-value").schema_id
