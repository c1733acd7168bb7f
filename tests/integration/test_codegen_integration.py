"""``python -m serdes.codegen registry`` against the real registry (Apicurio, Confluent API): schemas
with references registered by confluent-kafka's clients, generated through the CLI's own client,
and records produced to Kafka read back into the generated classes."""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from pathlib import Path
from typing import Any, Optional

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer

from serdes.avro import AvroDeserializer
from serdes.codegen.__main__ import main
from serdes.protobuf import ProtobufDeserializer

from tests.support.kafka_io import consume_keyed, produce_values
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _load(path: Path) -> Any:
    name = f"serdes_codegen_it_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_avro_with_reference_from_real_registry(kafka_bootstrap: str, registry_url: str, unique_name: str,
                                                tmp_path: Path) -> None:
    from serdes import typed

    client = registry_client(registry_url)
    address = {"type": "record", "name": "Address", "namespace": "com.shared",
               "fields": [{"name": "street", "type": "string"}]}
    client.register_schema(f"{unique_name}-address", Schema(json.dumps(address), "AVRO"))
    root = {"type": "record", "name": "Order", "namespace": "com.example", "fields": [
        {"name": "id", "type": "long"}, {"name": "ship", "type": "com.shared.Address"},
        {"name": "from", "type": ["null", "string"], "default": None}]}
    refs = [SchemaReference("com.shared.Address", f"{unique_name}-address", 1)]
    subject = f"{unique_name}-value"
    client.register_schema(subject, Schema(json.dumps(root), "AVRO", refs))
    out = tmp_path / "orders.py"
    assert main(["registry", "--url", registry_url, "--subject", subject, "--version", "1", "-o", str(out)]) == 0
    mod = _load(out)
    assert mod.Order.__serdes_name__ == "com.example.Order" and mod.Address.__serdes_name__ == "com.shared.Address"

    # SCHEMA is self-contained (the reference inlined): confluent-kafka writes with it as is
    serializer = ConfluentAvroSerializer(client, mod.SCHEMA)
    produce_values(kafka_bootstrap, unique_name, [{"id": i, "ship": {"street": f"s{i}"}, "from": None if i % 2 else "w"}
                                                  for i in range(4)], serializer)
    reader = AvroDeserializer(registry_client(registry_url), schema_str=mod.SCHEMA, from_dict=typed.from_dict(mod.Order))
    got = [v for _, v in consume_keyed(kafka_bootstrap, unique_name, 4, reader)]
    assert got == [mod.Order(id=i, ship=mod.Address(street=f"s{i}"), from_=None if i % 2 else "w") for i in range(4)]


def test_protobuf_with_imports_from_real_registry(registry_url: str, unique_name: str, tmp_path: Path) -> None:
    from serdes_test import order_pb2

    client = registry_client(registry_url)
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext(unique_name, MessageField.VALUE)
    data = ConfluentProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})(
        order_pb2.Order(id=3, customer="c"), ctx)
    out = tmp_path / "orders_pb.py"
    assert main(["registry", "--url", registry_url, "--subject", f"{unique_name}-value", "--style", "msgspec",
                 "-o", str(out)]) == 0
    mod = _load(out)
    from serdes import typed

    got = ProtobufDeserializer(None, {"use.deprecated.format": False}, client,
                               from_dict=typed.from_dict(mod.Order))(data, ctx)
    assert got == mod.Order(id=3, customer="c")
    assert mod.Address.__serdes_name__ == "serdes.test.common.Address"  # from the referenced subject


def test_protobuf_source_registered_as_text(registry_url: str, unique_name: str, tmp_path: Path) -> None:
    # what a Java client registers: .proto source, with a well-known import
    from serdes.codegen import generate_from_registry

    client = registry_client(registry_url)
    text = 'syntax = "proto3";\npackage it;\nimport "google/protobuf/timestamp.proto";\n' \
           "message Event { string id = 1; google.protobuf.Timestamp at = 2; repeated int32 n = 3; }\n"
    client.register_schema(f"{unique_name}-value", Schema(text, "PROTOBUF"))
    out = tmp_path / "events.py"
    out.write_text(generate_from_registry(client, f"{unique_name}-value"), encoding="utf-8")
    mod = _load(out)
    assert mod.Event.__serdes_name__ == "it.Event" and mod.Timestamp.__serdes_name__ == "google.protobuf.Timestamp"
    assert mod.Event() == mod.Event(id="", at=None, n=[])


def test_unknown_subject_and_unreachable_registry(registry_url: str, capsys: Any) -> None:
    assert main(["registry", "--url", registry_url, "--subject", f"nope-{uuid.uuid4().hex}"]) == 2
    err = capsys.readouterr().err
    assert "no such schema" in err and "Traceback" not in err
    unreachable: Optional[str] = "http://127.0.0.1:9"  # the discard port: nothing listens
    assert main(["registry", "--url", str(unreachable), "--subject", "s"],
                client_factory=lambda url: registry_client(url, **{"max.retries": 0})) == 1
    assert "registry error" in capsys.readouterr().err
