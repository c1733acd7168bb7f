"""The dead-letter path during a registry auth outage (issue 9): real Kafka, a PyFlink MiniCluster
job with ``on_error="dead_letter"``, and a real HTTP server on 127.0.0.1 standing in for the
registry, answering 401 to every request (an expired credential on a real registry).

Good records must not be dead-lettered: the decode operator fails the job with
``RegistryAuthError`` (Flink's restart strategy is what retries) and the dead-letter topic stays
empty.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import flink as sf
from serdes.avro import AvroSerializer

from tests.support.registry_http import FailingRegistry
from tests.support.registry_client import registry_client

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "serdes.test", "fields": [
    {"name": "order_id", "type": "string"}, {"name": "amount_cents", "type": "long"}]})
N = 8


def test_registry_401_fails_the_job_and_dead_letters_nothing(kafka_bootstrap, registry_url, new_topic, produce, consume):
    t_in, t_out, t_dlq = new_topic("auth-in"), new_topic("auth-out"), new_topic("auth-dlq")
    ser = AvroSerializer(registry_client(registry_url), ORDER)
    ctx = SerializationContext(t_in, MessageField.VALUE)
    produce(t_in, [(b"k", ser({"order_id": str(i), "amount_cents": i}, ctx), None) for i in range(N)])

    with FailingRegistry("401") as reg:
        env = sf.create_env()
        decoded = sf.read_kafka(env, kafka_bootstrap, t_in, sf.avro(reg.client_conf(timeout=5)), bounded=True,
                                on_error="dead_letter")
        sf.write_kafka(decoded, kafka_bootstrap, t_out, sf.avro_serializer(registry_url, ORDER))
        sf.write_dead_letters(decoded, kafka_bootstrap, t_dlq)
        with pytest.raises(sf.FlinkJobError) as info:
            sf.execute(env, "registry-401")
        assert reg.requests, "the job never asked the stand-in registry"
    assert info.value.error_type == "RegistryAuthError", info.value
    assert info.value.topic == t_in and info.value.offset == 0
    assert consume(t_dlq, 0, timeout=8, idle=3) == []
    assert consume(t_out, 0, timeout=5, idle=2) == []
