"""Keyed jobs with one Python operator after the shuffle (``read_kafka_keyed``), thread-mode and
strict-type checks.  Real Kafka + registry + PyFlink MiniCluster jobs.

Each keyed shape runs against the two-crossing job users write today
(``read_kafka(...).key_by(fn).process(f)``) on the same input; the outputs must be identical.
"""

from __future__ import annotations

import json
import sys

import cloudpickle
import pytest
from confluent_kafka.serialization import MessageField, SerializationContext
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor

from serdes import flink as sf

from tests.support.flink_sources import from_sequence
from tests.support.registry_client import registry_client

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(300)]

N = 90
CUSTOMERS = 4
ORDER_AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "serdes.test.keyed",
    "fields": [{"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"},
               {"name": "amount_cents", "type": "long"}]})
TOTAL_AVRO = json.dumps({
    "type": "record", "name": "CustomerTotal", "namespace": "serdes.test.keyed",
    "fields": [{"name": "customer", "type": "string"}, {"name": "order_id", "type": "string"},
               {"name": "key", "type": "string"}, {"name": "count", "type": "long"},
               {"name": "total_cents", "type": "long"}]})


def orders(n=N):
    return [{"order_id": f"o{i}", "customer": f"c{i % CUSTOMERS}", "amount_cents": 100 + i} for i in range(n)]


class RunningTotal(KeyedProcessFunction):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("total", Types.TUPLE([Types.LONG(), Types.LONG()])))

    def process_element(self, order, ctx):
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + order["amount_cents"]
        self.state.update((count, total))
        yield {"customer": order["customer"], "order_id": order["order_id"], "key": str(ctx.get_current_key()),
               "count": count, "total_cents": total}


class PickledStateTotal(RunningTotal):
    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))


def by_customer(o):
    return o["customer"]


def produce_orders(registry_url, topic, produce, inputs, keyed=True, bad_at=()):
    from confluent_kafka.schema_registry.avro import AvroSerializer

    ser = AvroSerializer(registry_client(registry_url), ORDER_AVRO)
    records = []
    for i, o in enumerate(inputs):
        if i in bad_at:
            records.append((b"c0", b"\x07not-avro" if i == bad_at[0] else b"\x00\x00\x00\x7f\xff\x01\x02", None))
        else:
            records.append((o["customer"].encode() if keyed else None,
                            ser(o, SerializationContext(topic, MessageField.VALUE)), None))
    produce(topic, records)
    return [o for i, o in enumerate(inputs) if i not in bad_at]


def read_totals(registry_url, topic, consume, expected):
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    de = AvroDeserializer(registry_client(registry_url))
    msgs = consume(topic, expected)
    assert len(msgs) == expected
    out = []
    for m in msgs:
        t = de(m.value(), SerializationContext(topic, MessageField.VALUE))
        assert m.key().decode() == t["customer"]
        out.append((t["order_id"], t["customer"], t["key"], t["count"], t["total_cents"]))
    return sorted(out)


def expected_totals(inputs):
    acc, out = {}, []
    for o in inputs:
        c, s = acc.get(o["customer"], (0, 0))
        acc[o["customer"]] = (c + 1, s + o["amount_cents"])
        out.append((o["order_id"], o["customer"], o["customer"]) + acc[o["customer"]])
    return sorted(out)


def two_crossing_job(env, bootstrap, registry, t_in, t_out):
    decoded = sf.read_kafka(env, bootstrap, t_in, sf.avro(registry), bounded=True)
    totals = decoded.key_by(by_customer, key_type=Types.STRING()).process(RunningTotal())
    sf.write_kafka(totals, bootstrap, t_out, sf.avro_serializer(registry, TOTAL_AVRO), key_fn=by_customer)


def keyed_job(env, bootstrap, registry, t_in, t_out, shape, fn=None, **kw):
    key_kw = {"key_by": by_customer} if shape == "value" else {"key_by": "customer"} if shape == "field" else {}
    keyed = sf.read_kafka_keyed(env, bootstrap, t_in, sf.avro(registry), key_type=Types.STRING(),
                                bounded=True, **key_kw, **kw)
    totals = keyed.process(fn or RunningTotal())
    sf.write_kafka(totals, bootstrap, t_out, sf.avro_serializer(registry, TOTAL_AVRO), key_fn=by_customer)
    return keyed


def plan_nodes(env):
    return [n["type"] for n in json.loads(env.get_execution_plan())["nodes"]]


SHAPES = ("kafka", "value", "field")  # field: key_by="customer" on Avro, a Python key


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("shape", SHAPES)
def test_keyed_shape_fuses_its_operators(shape, mode, kafka_bootstrap, registry_url, new_topic):
    """The Python operators after fusion: reference job 2, keyed job 1 (kafka key) or 2 (value key)."""
    t_in = new_topic("keyed-plan")
    env = sf.create_env(execution_mode=mode)
    two_crossing_job(env, kafka_bootstrap, registry_url, t_in, t_in + "-ref")
    keyed_job(env, kafka_bootstrap, registry_url, t_in, t_in + "-out", shape)
    nodes = plan_nodes(env)
    if shape == "kafka":
        assert "serdes-keyed, serdes-encode" in nodes, nodes
        assert not any(n.startswith("serdes-decode") and "serdes-keyed" not in n for n in nodes
                       if "_stream_key_by_map_operator" not in n), nodes
    else:
        assert "serdes-decode-key" in nodes and "serdes-keyed, serdes-encode" in nodes, nodes
    assert not any("_stream_key_by_map_operator" in n for n in nodes if "serdes-decode-key" in n), nodes


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_keyed_shapes_match_two_crossing_job(mode, kafka_bootstrap, registry_url, new_topic, produce, consume):
    """Every keyed shape and the two-crossing reference in one job (a MiniCluster job costs seconds):
    the Kafka-keyed shape reads the orders with their Kafka keys, the value and field shapes the same
    orders without keys, as users produce them."""
    t_keyed, t_plain = new_topic("keyed-in"), new_topic("keyed-in-plain")
    inputs = produce_orders(registry_url, t_keyed, produce, orders(), keyed=True)
    assert produce_orders(registry_url, t_plain, produce, orders(), keyed=False) == inputs
    t_ref = new_topic("keyed-ref")
    t_out = {shape: new_topic(f"keyed-out-{shape}") for shape in SHAPES}

    env = sf.create_env(execution_mode=mode)
    two_crossing_job(env, kafka_bootstrap, registry_url, t_plain, t_ref)
    for shape in SHAPES:
        keyed_job(env, kafka_bootstrap, registry_url, t_keyed if shape == "kafka" else t_plain, t_out[shape], shape)
    sf.execute(env, f"keyed-shapes-{mode}")

    reference = read_totals(registry_url, t_ref, consume, len(inputs))
    assert reference == expected_totals(inputs)
    for shape in SHAPES:
        assert read_totals(registry_url, t_out[shape], consume, len(inputs)) == reference, shape


@pytest.mark.parametrize("shape", ["kafka", "value"])
def test_keyed_dead_letters(shape, kafka_bootstrap, registry_url, new_topic, produce, consume):
    """Poison pills go to the dead-letter topic from the keyed operator, which still is the job's
    only per-record Python operator after the shuffle (process_to_kafka: encode inside it)."""
    t_in, t_out, t_dlq = new_topic("kdl-in"), new_topic("kdl-out"), new_topic("kdl-dlq")
    good = produce_orders(registry_url, t_in, produce, orders(30), keyed=shape == "kafka", bad_at=(5, 17))
    env = sf.create_env(strict_types=True)
    keyed = sf.read_kafka_keyed(env, kafka_bootstrap, t_in, sf.avro(registry_url), key_type=Types.STRING(),
                                bounded=True, on_error="dead_letter",
                                **({"key_by": by_customer} if shape == "value" else {}))
    keyed.process_to_kafka(RunningTotal(), kafka_bootstrap, t_out, sf.avro_serializer(registry_url, TOTAL_AVRO),
                           key_fn=by_customer)
    sf.write_dead_letters(keyed, kafka_bootstrap, t_dlq)
    nodes = plan_nodes(env)
    assert "serdes-keyed" in nodes, nodes  # decode + RunningTotal + encode: one operator
    sf.execute(env, f"keyed-dead-letter-{shape}")

    assert read_totals(registry_url, t_out, consume, len(good)) == expected_totals(good)
    dead = consume(t_dlq, 2)
    assert len(dead) == 2
    got = []
    for m in dead:
        h = dict(m.headers())
        assert h["serdes.dlq.topic"].decode() == t_in and h["serdes.dlq.partition"] == b"0"
        assert h["serdes.dlq.reason"]
        got.append((int(h["serdes.dlq.offset"]), h["serdes.dlq.error"].decode(), m.value(), m.key()))
    assert sorted(got) == [(5, "InvalidMagicByteError", b"\x07not-avro", b"c0"),
                           (17, "UnknownSchemaError", b"\x00\x00\x00\x7f\xff\x01\x02", b"c0")], got


def test_keyed_poison_pill_fails_with_coordinates(kafka_bootstrap, registry_url, new_topic, produce):
    t_in, t_out = new_topic("kfail-in"), new_topic("kfail-out")
    produce_orders(registry_url, t_in, produce, orders(20), bad_at=(7,))
    env = sf.create_env()
    keyed_job(env, kafka_bootstrap, registry_url, t_in, t_out, "kafka")
    with pytest.raises(sf.FlinkJobError) as info:
        sf.execute(env, "keyed-poison-fail")
    assert info.value.error_type == "InvalidMagicByteError", info.value.error_type
    assert (info.value.topic, info.value.partition, info.value.offset) == (t_in, 0, 7)


# --- thread mode ---------------------------------------------------------------------------------


def test_thread_mode_refuses_a_process_mode_operator(kafka_bootstrap, registry_url):
    """A Table API pandas UDF has no embedded (thread-mode) operator in PyFlink: PyFlink would run it
    in process mode silently; serdes' thread-mode environment refuses to build the job."""
    from pyflink.table import DataTypes, StreamTableEnvironment
    from pyflink.table.udf import udf

    env = sf.create_env(execution_mode="thread")
    t_env = StreamTableEnvironment.create(env)
    numbers = t_env.from_data_stream(from_sequence(env, 1, 10))

    @udf(result_type=DataTypes.BIGINT(), func_type="pandas")
    def double(x):
        return x * 2

    doubled = t_env.to_data_stream(numbers.select(double(numbers.f0).alias("d")))
    doubled.map(lambda r: r[0], output_type=Types.LONG()).name("after-table")
    with pytest.raises(sf.ThreadModeError) as info:
        env.get_execution_plan()
    names = [cls for _, cls in info.value.operators]
    assert any("Arrow" in cls for cls in names), info.value.operators
    assert "process mode" in str(info.value)

    # the same job in a process-mode environment builds
    env2 = sf.create_env(execution_mode="process")
    t_env2 = StreamTableEnvironment.create(env2)
    n2 = t_env2.from_data_stream(from_sequence(env2, 1, 10))
    t_env2.to_data_stream(n2.select(double(n2.f0).alias("d"))).map(lambda r: r[0], output_type=Types.LONG())
    assert env2.get_execution_plan()


def test_thread_mode_keyed_job_is_all_embedded(kafka_bootstrap, registry_url, new_topic):
    """serdes' read/keyed/write operators are all embedded operators in thread mode (no error)."""
    env = sf.create_env(execution_mode="thread")
    t = new_topic("thread-check")
    two_crossing_job(env, kafka_bootstrap, registry_url, t, t + "-a")
    keyed = keyed_job(env, kafka_bootstrap, registry_url, t, t + "-b", "kafka", on_error="dead_letter")
    sf.write_dead_letters(keyed, kafka_bootstrap, t + "-dlq")
    keyed_job(env, kafka_bootstrap, registry_url, t, t + "-c", "value")
    from serdes.flink._graph import problems, stream_graph

    stream_graph(env, clear_transformations=False)  # raises ThreadModeError if any were not
    assert problems(env._j_stream_execution_environment, True, False)["thread"] == []


# --- strict types --------------------------------------------------------------------------------


def test_strict_types_names_the_pickled_operator(kafka_bootstrap, registry_url, new_topic):
    env = sf.create_env(strict_types=True)
    t = new_topic("strict")
    decoded = sf.read_kafka(env, kafka_bootstrap, t, sf.avro(registry_url), bounded=True)
    decoded.key_by(by_customer).map(lambda o: o["customer"], output_type=Types.STRING()).name("untyped-key")
    with pytest.raises(sf.StrictTypeError) as info:
        env.get_execution_plan()
    names = [n for n, _ in info.value.operators]
    # the decode + PyFlink key-by operators emit pickled values / a pickled key
    assert any("serdes-decode" in n for n in names), info.value.operators
    assert "PickledByteArrayTypeInfo" in str(info.value)


def test_strict_types_accepts_typed_keyed_job(kafka_bootstrap, registry_url, new_topic):
    """Typed end to end: Kafka-keyed job with its output fused into the encoder builds."""
    env = sf.create_env(strict_types=True)
    t = new_topic("strict-ok")
    keyed_job(env, kafka_bootstrap, registry_url, t, t + "-out", "kafka")
    keyed_job(env, kafka_bootstrap, registry_url, t, t + "-out2", "value")
    assert "serdes-keyed, serdes-encode" in plan_nodes(env)


def test_strict_types_refuses_pickled_state(kafka_bootstrap, registry_url, new_topic, produce):
    t_in, t_out = new_topic("strict-state"), new_topic("strict-state-out")
    produce_orders(registry_url, t_in, produce, orders(5))
    env = sf.create_env(strict_types=True)
    keyed_job(env, kafka_bootstrap, registry_url, t_in, t_out, "kafka", fn=PickledStateTotal())
    with pytest.raises(Exception) as info:
        env.execute("strict-state")
    text = str(info.value)
    assert "StrictTypeError" in text and "'total'" in text and "serdes-keyed" in text, text[-2000:]

    # without strict_types the same job runs
    env = sf.create_env()
    keyed_job(env, kafka_bootstrap, registry_url, t_in, t_out, "kafka", fn=PickledStateTotal())
    env.execute("non-strict-state")
