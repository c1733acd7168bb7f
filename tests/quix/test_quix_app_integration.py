"""A quixstreams ``Application`` on serdes.quix, on the real broker and registry.

confluent-kafka's own serializers write Avro, Protobuf and JSON Schema orders to three topics; one
Application reads them with serdes.quix's deserializers, transforms each record and writes it to an
output topic with serdes.quix's serializers; confluent-kafka's own deserializers then read the
output, which must be exactly the expected records.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as ConfluentJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as ConfluentProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer

from serdes.demo.orders_pb2 import Order

from tests.support.kafka_io import consume_keyed, produce_values
from tests.support.registry_client import registry_client

from .conftest import QUIX_REASON

pytest.importorskip("quixstreams", reason=QUIX_REASON)

from quixstreams import Application  # noqa: E402

import serdes.quix as sq  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

N = 200  # records per format

AVRO_IN = {"type": "record", "name": "Order", "namespace": "quixit", "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "amount_cents", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": None},
]}
AVRO_OUT = {"type": "record", "name": "PricedOrder", "namespace": "quixit", "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "amount_cents", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "doubled", "type": "boolean"},
]}
JSON_IN = {"title": "Order", "type": "object", "properties": {
    "order_id": {"type": "string"}, "amount_cents": {"type": "integer"}}, "required": ["order_id", "amount_cents"]}
JSON_OUT = {"title": "PricedOrder", "type": "object", "properties": {
    "order_id": {"type": "string"}, "amount_cents": {"type": "integer"}, "source": {"const": "quix"}},
    "required": ["order_id", "amount_cents", "source"], "additionalProperties": False}


def _avro_in(i: int) -> Dict[str, Any]:
    return {"order_id": f"a-{i}", "amount_cents": 1000 + i, "note": None if i % 3 else f"note {i}"}


def _json_in(i: int) -> Dict[str, Any]:
    return {"order_id": f"j-{i}", "amount_cents": 5 * i}


def _order_in(i: int) -> Order:
    return Order(order_id=f"p-{i}", customer=f"c{i % 7}", amount_cents=3 * i + 1, currency="EUR", tags=["t"] * (i % 2))


def _double_avro(value: Dict[str, Any]) -> Dict[str, Any]:
    return {**value, "amount_cents": value["amount_cents"] * 2, "doubled": True}


def _double_json(value: Dict[str, Any]) -> Dict[str, Any]:
    return {**value, "amount_cents": value["amount_cents"] * 2, "source": "quix"}


def _double_protobuf(value: Dict[str, Any]) -> Dict[str, Any]:
    # quixstreams' protobuf dict (MessageToDict): camelCase names, int64 as a string
    return {**value, "amountCents": str(int(value["amountCents"]) * 2), "tags": value["tags"] + ["quix"]}


def test_application_reads_transforms_and_writes_three_formats(
    kafka_bootstrap: str, registry_url: str, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    topics = {f: (f"quix-{f}-in-{run}", f"quix-{f}-out-{run}") for f in ("avro", "protobuf", "json")}
    writer = registry_client(registry_url)
    produce_values(kafka_bootstrap, topics["avro"][0], [_avro_in(i) for i in range(N)],
                   ConfluentAvroSerializer(writer, json.dumps(AVRO_IN)))
    produce_values(kafka_bootstrap, topics["protobuf"][0], [_order_in(i) for i in range(N)],
                   ConfluentProtobufSerializer(Order, writer, {"use.deprecated.format": False}))
    produce_values(kafka_bootstrap, topics["json"][0], [_json_in(i) for i in range(N)],
                   ConfluentJSONSerializer(json.dumps(JSON_IN), writer))

    client = registry_client(registry_url)  # one client for the app's serializers (finite timeout)
    app = Application(
        broker_address=kafka_bootstrap, consumer_group=f"quix-it-{run}", auto_offset_reset="earliest",
        state_dir=str(tmp_path / "state"), loglevel="WARNING",
    )
    avro_in = app.topic(topics["avro"][0], value_deserializer=sq.AvroDeserializer(schema_registry_client=client))
    avro_out = app.topic(topics["avro"][1], value_serializer=sq.AvroSerializer(AVRO_OUT, schema_registry_client=client))
    proto_in = app.topic(topics["protobuf"][0],
                         value_deserializer=sq.ProtobufDeserializer(Order, schema_registry_client=client))
    proto_out = app.topic(topics["protobuf"][1],
                          value_serializer=sq.ProtobufSerializer(Order, schema_registry_client=client))
    json_in = app.topic(topics["json"][0],
                        value_deserializer=sq.JSONDeserializer(schema=JSON_IN, schema_registry_client=client))
    json_out = app.topic(topics["json"][1],
                         value_serializer=sq.JSONSerializer(schema=JSON_OUT, schema_registry_client=client))
    app.dataframe(avro_in).apply(_double_avro).to_topic(avro_out)
    app.dataframe(proto_in).apply(_double_protobuf).to_topic(proto_out)
    app.dataframe(json_in).apply(_double_json).to_topic(json_out)
    # stops after every input record's output, or 60 s without a new record (then the checks fail)
    app.run(count=3 * N, timeout=60, collect=False)

    reader = registry_client(registry_url)
    got_avro = consume_keyed(kafka_bootstrap, topics["avro"][1], N, ConfluentAvroDeserializer(reader))
    got_proto = consume_keyed(kafka_bootstrap, topics["protobuf"][1], N,
                              ConfluentProtobufDeserializer(Order, {"use.deprecated.format": False}))
    got_json = consume_keyed(kafka_bootstrap, topics["json"][1], N,
                             ConfluentJSONDeserializer(json.dumps(JSON_OUT), schema_registry_client=reader))

    assert got_avro == [(i, _double_avro(_avro_in(i))) for i in range(N)]
    expected_orders: List[Order] = []
    for i in range(N):
        order = _order_in(i)
        order.amount_cents *= 2
        order.tags.append("quix")
        expected_orders.append(order)
    assert got_proto == list(enumerate(expected_orders))
    assert got_json == [(i, _double_json(_json_in(i))) for i in range(N)]
    # the output subjects hold the output schemas serdes registered
    assert json.loads(reader.get_latest_version(f"{topics['avro'][1]}-value").schema.schema_str)["name"] == \
        "PricedOrder"
    assert json.loads(reader.get_latest_version(f"{topics['json'][1]}-value").schema.schema_str)["title"] == \
        "PricedOrder"
