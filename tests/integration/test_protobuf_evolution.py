"""Protobuf schema evolution in the real registry (BACKWARD, set by serdes.testing on Apicurio).

v1 is produced, the subject evolves compatibly to v2 (an added field, an added enum value) and v2
is produced; a consumer whose message class is v2 reads both (v1 records get the new field's
default). An incompatible v3 (a field's type changed) is rejected by the registry, and the
serializer raises serdes.SchemaMismatchError naming the subject.
"""

from __future__ import annotations

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import serdes
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

from tests.support.kafka_io import consume_keyed, produce_values
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

F = descriptor_pb2.FieldDescriptorProto


def reading_class(version: int):
    """``evo.Reading`` as it looks in schema version 1, 2 or 3, each in a pool of its own."""
    fdp = descriptor_pb2.FileDescriptorProto(name="evo/reading.proto", package="evo", syntax="proto3")
    unit = fdp.enum_type.add(name="Unit")
    unit.value.add(name="UNIT_UNSPECIFIED", number=0)
    unit.value.add(name="CELSIUS", number=1)
    msg = fdp.message_type.add(name="Reading")
    msg.field.add(name="sensor", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    # v3 changes `value` from double to string: not BACKWARD compatible
    msg.field.add(name="value", number=2, type=F.TYPE_STRING if version == 3 else F.TYPE_DOUBLE,
                  label=F.LABEL_OPTIONAL)
    msg.field.add(name="unit", number=3, type=F.TYPE_ENUM, type_name=".evo.Unit", label=F.LABEL_OPTIONAL)
    if version >= 2:
        unit.value.add(name="FAHRENHEIT", number=2)
        msg.field.add(name="site", number=4, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("evo.Reading"))


def test_protobuf_evolution_in_real_registry(kafka_bootstrap, registry_url, unique_name):
    topic = unique_name
    client = registry_client(registry_url)
    V1, V2, V3 = reading_class(1), reading_class(2), reading_class(3)

    produce_values(kafka_bootstrap, topic, [V1(sensor=f"s{i}", value=i + 0.5, unit=1) for i in range(5)],
                   ProtobufSerializer(V1, client))
    produce_values(kafka_bootstrap, topic, [V2(sensor=f"s{i}", value=i, unit=2, site="lab") for i in range(5, 10)],
                   ProtobufSerializer(V2, client), start=5)
    assert client.get_versions(f"{topic}-value") == [1, 2]

    reader = ProtobufDeserializer(V2, None, registry_client(registry_url))
    got = [m for _, m in consume_keyed(kafka_bootstrap, topic, 10, reader)]
    assert len(got) == 10 and all(isinstance(m, V2) for m in got)
    assert [m.sensor for m in got] == [f"s{i}" for i in range(10)]
    assert [m.site for m in got] == [""] * 5 + ["lab"] * 5        # v1 records: the new field's default
    assert [m.unit for m in got] == [1] * 5 + [2] * 5              # the added enum value reads as itself

    with pytest.raises(serdes.SchemaMismatchError) as info:
        ProtobufSerializer(V3, client)(V3(sensor="x", value="hot"), SerializationContext(topic, MessageField.VALUE))
    assert topic in str(info.value)
    assert client.get_versions(f"{topic}-value") == [1, 2]
