"""Every public name of confluent-kafka's three serde modules exists in serdes' module of the format."""

from __future__ import annotations

import types

import pytest
from confluent_kafka.schema_registry import avro as c_avro
from confluent_kafka.schema_registry import json_schema as c_json
from confluent_kafka.schema_registry import protobuf as c_protobuf

import serdes.avro
import serdes.json
import serdes.protobuf

PAIRS = [(c_avro, serdes.avro), (c_protobuf, serdes.protobuf), (c_json, serdes.json)]
SERDE_SUFFIXES = ("Serializer", "Deserializer", "SerializerBuilder", "DeserializerBuilder")


def _public(module: types.ModuleType) -> set:
    return {n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)}


@pytest.mark.parametrize("theirs,ours", PAIRS, ids=lambda m: m.__name__)
def test_every_public_name_exists(theirs: types.ModuleType, ours: types.ModuleType) -> None:
    assert sorted(_public(theirs) - _public(ours)) == []


@pytest.mark.parametrize("theirs,ours", PAIRS, ids=lambda m: m.__name__)
def test_serde_classes_are_serdes_subclasses_of_confluents(theirs: types.ModuleType, ours: types.ModuleType) -> None:
    names = [n for n in _public(theirs) if n.endswith(SERDE_SUFFIXES) and isinstance(getattr(theirs, n), type)]
    # 2 classes + 2 builders, sync and async: 8 per format (18 of the 24 were missing before);
    # confluent-kafka < 2.16 has no builders
    assert len(names) == (8 if hasattr(theirs, "AvroSerializerBuilder") or hasattr(theirs, "JSONSerializerBuilder")
                          or hasattr(theirs, "ProtobufSerializerBuilder") else 4)
    for n in names:
        cls = getattr(ours, n)
        assert cls is not getattr(theirs, n), n
        assert issubclass(cls, getattr(theirs, n)), n
        assert cls.__module__.startswith("serdes."), n
        assert n in ours.__all__, n
