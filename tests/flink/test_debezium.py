"""Debezium CDC topics -> changelog Rows -> Table API, on the real broker, registry and a PyFlink
MiniCluster.

Envelopes in Debezium's PostgreSQL shape (tests/support/debezium_samples.py) are written with serdes'
serializers (Avro, JSON Schema, Protobuf; keys too), including a snapshot, inserts, updates (one
moving a row to another group), deletes and their tombstones.  A Table API job aggregates
``SUM(balance) GROUP BY owner`` over ``from_changelog_stream`` and its final table must equal the
expected one exactly (a group whose rows were all updated away or deleted must disappear).
"""

from __future__ import annotations

import json
import sys
import uuid

import cloudpickle
import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import flink as sf

from tests.support import debezium_samples as ds
from tests.support.registry_client import registry_client

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.flink, pytest.mark.integration, pytest.mark.timeout(400)]


def _serializers(fmt, registry_url):
    client = registry_client(registry_url)
    if fmt == "avro":
        from serdes.avro import AvroSerializer

        return AvroSerializer(client, ds.avro_envelope()), AvroSerializer(client, ds.AVRO_KEY), (lambda e: e)
    if fmt == "json":
        from serdes.json import JSONSerializer

        return JSONSerializer(ds.json_envelope(), client), JSONSerializer(ds.JSON_KEY, client), (lambda e: e)
    from serdes.protobuf import ProtobufSerializer
    from serdes_test.dbz_accounts_pb2 import Envelope, Key

    return (ProtobufSerializer(Envelope, client), _KeyToProto(ProtobufSerializer(Key, client), Key), ds.to_proto)


class _KeyToProto:
    def __init__(self, ser, cls):
        self.ser, self.cls = ser, cls

    def __call__(self, key, ctx):
        return self.ser(self.cls(**key), ctx)


def _specs(fmt, registry_url):
    if fmt == "avro":
        return sf.avro(registry_url), sf.avro(registry_url)                 # schema from the registry
    if fmt == "json":
        return sf.json_schema(registry_url, ds.json_envelope()), sf.json_schema(registry_url, ds.JSON_KEY)
    from serdes_test.dbz_accounts_pb2 import Envelope, Key

    return sf.protobuf(Envelope, registry_url), sf.protobuf(Key, registry_url)


def produce_events(produce, topic, fmt, registry_url, events):
    vser, kser, convert = _serializers(fmt, registry_url)
    recs = []
    for key, env in events:
        k = kser(key, SerializationContext(topic, MessageField.KEY))
        v = None if env is None else vser(convert(env), SerializationContext(topic, MessageField.VALUE))
        recs.append((k, v))
    produce(topic, recs)


def materialize(rows):
    """Apply a collected changelog (+I/-U/+U/-D) to a dict keyed by the first column."""
    from pyflink.common import RowKind

    table = {}
    for r in rows:
        kind = r.get_row_kind()
        if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            table[r[0]] = tuple(r[1:])
        else:
            assert table.pop(r[0], None) is not None, f"retraction of an unknown row {r}"
    return table


def sum_per_owner(stream, env, mode="retract", with_datastream_sinks=False):
    """Final SUM(balance) per owner.  ``with_datastream_sinks``: run the query as a changelog
    DataStream so the job also runs the environment's other sinks (e.g. the dead letters); a
    Table's own ``execute()`` runs the query alone."""
    from pyflink.table import StreamTableEnvironment

    t_env = StreamTableEnvironment.create(env)
    if mode == "upsert":
        from pyflink.table import DataTypes, Schema
        from pyflink.table.changelog_mode import ChangelogMode

        schema = (Schema.new_builder().column("id", DataTypes.INT().not_null())
                  .column("owner", DataTypes.STRING()).column("balance", DataTypes.BIGINT())
                  .primary_key("id").build())
        table = t_env.from_changelog_stream(stream, schema, ChangelogMode.upsert())
    else:
        table = t_env.from_changelog_stream(stream)
    t_env.create_temporary_view("accounts", table)
    result = t_env.sql_query("SELECT owner, SUM(balance) AS total FROM accounts GROUP BY owner")
    if with_datastream_sinks:
        rows = list(t_env.to_changelog_stream(result).execute_and_collect())
    else:
        with result.execute().collect() as it:
            rows = list(it)
    return {k: v[0] for k, v in materialize(rows).items()}


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_changelog_sum_per_owner(fmt, kafka_bootstrap, registry_url, new_topic, produce):
    topic = new_topic(f"{ds.NS}-{fmt}")
    events, expected = ds.history()
    produce_events(produce, topic, fmt, registry_url, events)
    value, key = _specs(fmt, registry_url)
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=value, key=key, bounded=True)
    assert stream.get_type().get_field_names() == ["id", "owner", "balance"]
    assert sum_per_owner(stream, env) == expected
    assert expected == {"alice": 150, "carol": 285, "dave": 10}   # bob's rows all went away


def test_changelog_rows_kinds_and_metadata(kafka_bootstrap, registry_url, new_topic, produce):
    """The stream itself: row kinds per op, metadata columns, tombstones skipped."""
    from pyflink.common import RowKind

    topic = new_topic(f"{ds.NS}-rows")
    events, _ = ds.history()
    produce_events(produce, topic, "avro", registry_url, events)
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url), bounded=True,
                              metadata={"src_db": "db", "src_table": "table", "lsn": "lsn",
                                        "position": "position", "op": "op", "src_ts": "source_ts_ms",
                                        "tx": "tx_id"})
    got = list(stream.execute_and_collect())
    kinds = [(r.get_row_kind(), r[0], r[7]) for r in got]
    expect = []
    for _, e in events:
        if e is None:
            continue
        if e["op"] in ("r", "c"):
            expect.append((RowKind.INSERT, e["after"]["id"], e["op"]))
        elif e["op"] == "u":
            expect += [(RowKind.UPDATE_BEFORE, e["before"]["id"], "u"), (RowKind.UPDATE_AFTER, e["after"]["id"], "u")]
        else:
            expect.append((RowKind.DELETE, e["before"]["id"], "d"))
    assert kinds == expect
    moved = [r for r in got if r[0] == 2 and r[7] == "u"]
    assert [tuple(r[:3]) for r in moved] == [(2, "bob", 200), (2, "carol", 210)]
    first = got[0]
    assert (first[3], first[4]) == ("inventory", "accounts")
    assert first[5] == 24_000_100 and first[6] == "24000100" and first[8] == ds.BASE_TS + 1
    assert first[9] is None and got[4][9] == "701:24000500"   # transaction id when present


def test_upsert_mode_replica_identity_default(kafka_bootstrap, registry_url, new_topic, produce):
    """REPLICA IDENTITY DEFAULT: updates without before, deletes with only the key columns
    (or none: delete by the record key) -> +U / -D by key, through ChangelogMode.upsert()."""
    topic = new_topic(f"{ds.NS}-upsert")
    events, expected = ds.history()
    stripped = []
    for i, (key, e) in enumerate(events):
        if e is not None and e["op"] == "u":
            e = dict(e, before=None)
        elif e is not None and e["op"] == "d":
            # one delete without before at all, the other with the key column only
            e = dict(e, before=None if i % 2 else {"id": key["id"], "owner": "", "balance": 0})
        stripped.append((key, e))
    assert any(e and e["op"] == "d" and e["before"] is None for _, e in stripped)
    produce_events(produce, topic, "avro", registry_url, stripped)
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url),
                              key=sf.avro(registry_url), changelog_mode="upsert", bounded=True)
    assert sum_per_owner(stream, env, mode="upsert") == expected


def _bad_events():
    good = ds.envelope("c", None, ds.row(9, "erin", 5), 90)
    no_op = dict(ds.envelope("c", None, ds.row(10, "x", 1), 91), op="")
    unknown = dict(ds.envelope("c", None, ds.row(11, "x", 1), 92), op="q")
    create_without_after = ds.envelope("c", None, None, 93)
    delete_without_before = ds.envelope("d", None, None, 94)
    truncate = ds.envelope("t", None, None, 95)
    return [({"id": 9}, good), ({"id": 10}, no_op), ({"id": 11}, unknown), ({"id": 12}, create_without_after),
            ({"id": 13}, delete_without_before), ({"id": 14}, truncate)]


def test_malformed_envelope_fails_the_job(kafka_bootstrap, registry_url, new_topic, produce):
    topic = new_topic(f"{ds.NS}-fail")
    produce_events(produce, topic, "avro", registry_url, _bad_events()[:3])
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url), bounded=True)
    stream.map(lambda r: r[0]).print()
    with pytest.raises(sf.FlinkJobError) as info:
        sf.execute(env, "debezium-fail")
    err = info.value
    assert err.error_type == "MalformedEnvelopeError", err
    assert (err.topic, err.partition, err.offset) == (topic, 0, 1)
    assert "no 'op'" in str(err)


TOTAL_JSON = json.dumps({"type": "object", "properties": {
    "owner": {"type": "string"}, "total": {"type": ["integer", "null"]}, "kind": {"type": "string"}}})


def _total_dict(r):
    return {"owner": r[0], "total": r[1], "kind": r.get_row_kind().name}


def test_malformed_envelopes_dead_letter(kafka_bootstrap, registry_url, new_topic, produce, consume):
    topic, dlq, totals_topic = new_topic(f"{ds.NS}-dl"), new_topic("dbz-dlq"), new_topic("dbz-totals")
    events, expected = ds.history()
    bad = _bad_events()
    produce_events(produce, topic, "json", registry_url, events + bad[1:])
    produce(topic, [(b"k", b"\x07garbage")])          # not a registry frame at all
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=_specs("json", registry_url)[0],
                              on_error="dead_letter", bounded=True)
    sf.write_dead_letters(stream, kafka_bootstrap, dlq)
    # one job runs both sinks: the aggregate's changelog goes to Kafka too (a Table's own
    # execute().collect() would run the query alone, and a collect iterator cancels the job)
    from pyflink.table import StreamTableEnvironment

    t_env = StreamTableEnvironment.create(env)
    t_env.create_temporary_view("accounts", t_env.from_changelog_stream(stream))
    result = t_env.sql_query("SELECT owner, SUM(balance) AS total FROM accounts GROUP BY owner")
    sf.write_kafka(t_env.to_changelog_stream(result), kafka_bootstrap, totals_topic,
                   sf.json_serializer(registry_url, TOTAL_JSON), value_fn=_total_dict)
    sf.execute(env, "debezium-dead-letters")
    from pyflink.common import Row, RowKind

    outs = []
    for m in consume(totals_topic, expected=1, timeout=60):
        t = json.loads(m.value()[5:])
        r = Row(t["owner"], t["total"])
        r.set_row_kind(RowKind[t["kind"]])
        outs.append(r)
    assert {k: v[0] for k, v in materialize(outs).items()} == expected
    msgs = consume(dlq, expected=6, timeout=60)
    got = sorted((int(dict(m.headers())["serdes.dlq.offset"]), dict(m.headers())["serdes.dlq.error"].decode())
                 for m in msgs)
    first_bad = len(events)
    assert got == [(first_bad, "MalformedEnvelopeError"), (first_bad + 1, "MalformedEnvelopeError"),
                   (first_bad + 2, "MalformedEnvelopeError"), (first_bad + 3, "MalformedEnvelopeError"),
                   (first_bad + 4, "UnsupportedChangeError"), (first_bad + 5, "InvalidMagicByteError")]
    reasons = {int(dict(m.headers())["serdes.dlq.offset"]): dict(m.headers())["serdes.dlq.reason"].decode() for m in msgs}
    assert "unknown op 'q'" in reasons[first_bad + 1]
    assert "has no 'after'" in reasons[first_bad + 2]
    assert "truncate" in reasons[first_bad + 4]


def test_truncate_skipped_when_configured(kafka_bootstrap, registry_url, new_topic, produce):
    topic = new_topic(f"{ds.NS}-trunc")
    events, expected = ds.history()
    produce_events(produce, topic, "protobuf", registry_url, events + [({"id": 0}, ds.envelope("t", None, None, 99))])
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=_specs("protobuf", registry_url)[0],
                              on_truncate="skip", bounded=True)
    assert sum_per_owner(stream, env) == expected


def test_schema_evolution_added_nullable_column(kafka_bootstrap, registry_url, new_topic, produce):
    """ALTER TABLE accounts ADD COLUMN email varchar: Debezium's next events carry envelope v2
    (a new registry version).  A job built on the latest version reads v1 events with email =
    null (the reader default) and v2 events with their email; a job pinned to v1 keeps running
    on v2 events (the column is dropped by Avro resolution)."""
    from serdes.avro import AvroSerializer

    topic = new_topic(f"{ds.NS}-evo")
    client = registry_client(registry_url)
    v1 = AvroSerializer(client, ds.avro_envelope())
    v2 = AvroSerializer(client, ds.avro_envelope(with_email=True))
    ctx = SerializationContext(topic, MessageField.VALUE)
    recs = [(b"1", v1(ds.envelope("c", None, ds.row(1, "alice", 100), 1), ctx)),
            (b"2", v1(ds.envelope("c", None, ds.row(2, "bob", 20), 2), ctx)),
            (b"3", v2(ds.envelope("c", None, ds.row(3, "carol", 30, "c@x"), 3), ctx)),
            (b"1", v2(ds.envelope("u", ds.row(1, "alice", 100, None), ds.row(1, "alice", 110, "a@x"), 4), ctx)),
            (b"2", v2(ds.envelope("d", ds.row(2, "bob", 20, None), None, 5), ctx))]
    produce(topic, recs)
    versions = client.get_versions(f"{topic}-value")
    assert len(versions) == 2

    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url), bounded=True)
    assert stream.get_type().get_field_names() == ["id", "owner", "balance", "email"]
    assert materialize(stream.execute_and_collect()) == {1: ("alice", 110, "a@x"), 3: ("carol", 30, "c@x")}

    env = sf.create_env()
    pinned = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url, ds.avro_envelope()),
                              bounded=True)
    assert pinned.get_type().get_field_names() == ["id", "owner", "balance"]
    assert materialize(pinned.execute_and_collect()) == {1: ("alice", 110), 3: ("carol", 30)}


def test_row_type_needs_a_registered_envelope(registry_url):
    """No job: the row type comes from the registry's latest `<topic>-value` (or schema=)."""
    with pytest.raises(ValueError, match="has no version in the registry"):
        sf.debezium_row_type(sf.avro(registry_url), f"no-such-topic-{uuid.uuid4().hex[:6]}")
    t = sf.debezium_row_type(sf.avro(registry_url), "unused", schema=ds.avro_envelope(with_email=True))
    assert t.get_field_names() == ["id", "owner", "balance", "email"]


def _pickled(r):
    import pickle

    return pickle.dumps((r.get_row_kind(), r.as_dict()))


def test_semantic_types_become_flink_types(kafka_bootstrap, registry_url, new_topic, produce):
    """read_debezium(semantic_types=True) on constructed envelopes with every semantic type: the
    Table's column types; the rows after a shuffle (PyFlink's coders and Flink's Java serializers of
    those types, both ways) equal the expected values exactly; the Table holds the same values (read
    as SQL CASTs: PyFlink's Table collect keeps milliseconds of a TIMESTAMP and cannot collect
    TIMESTAMP_LTZ); a record its types cannot hold is skipped (on_error="skip")."""
    import datetime as dt
    import pickle
    from decimal import Decimal

    from pyflink.common import RowKind, Types
    from pyflink.table import StreamTableEnvironment

    from serdes.avro import AvroSerializer
    from tests.support import debezium_semantic_samples as ss

    topic = new_topic("pg.public.kinds")
    ser = AvroSerializer(registry_client(registry_url), ss.envelope_schema())
    ctx = SerializationContext(topic, MessageField.VALUE)
    edge = dict(ss.PHYSICAL, id=2, born=-719_162, seen=253_402_300_799_999_999, seen_tz="0001-01-01T00:00:00Z",
                ratio=ss.vsd(-(10**38 - 1), 18), at=86_399_999_000, span=-1, days=[], uids=[])
    nulls = dict({c: None for c in ss.PHYSICAL}, id=3)
    bad = dict(ss.PHYSICAL, id=4, uid="not-a-uuid")
    moved = dict(ss.PHYSICAL, seen=-1, name="bob")
    events = [ss.change("r", None, ss.PHYSICAL, 1), ss.change("r", None, edge, 2), ss.change("c", None, nulls, 3),
              ss.change("c", None, bad, 4), ss.change("u", ss.PHYSICAL, moved, 5), ss.change("d", nulls, None, 6)]
    produce(topic, [(str(i).encode(), ser(e, ctx)) for i, e in enumerate(events)])

    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url), on_error="skip",
                              bounded=True)
    assert dict(zip(stream.get_type().get_field_names(), stream.get_type().get_field_types(), strict=True)) == \
        ss.flink_types()
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set_local_timezone("UTC")
    table = t_env.from_changelog_stream(stream)
    import re

    types = dict(re.findall(r"(?m)^\s*`(\w+)` (.+?),?$", str(table.get_resolved_schema())))
    assert {c: types[c] for c in ("born", "at", "seen", "seen_tz", "ratio", "amount", "span", "uid", "bits", "days")} == {
        "born": "DATE", "at": "TIME(9)", "seen": "TIMESTAMP(9)", "seen_tz": "TIMESTAMP_LTZ(9)",
        "ratio": "DECIMAL(38, 18)", "amount": "DECIMAL(38, 18)", "span": "BIGINT", "uid": "STRING",
        "bits": "BYTES", "days": "ARRAY<DATE>"}

    # the stream's rows, through a shuffle: encoded by PyFlink, decoded by Flink's serializers and back
    got = [pickle.loads(b) for b in stream.rebalance().map(_pickled, output_type=Types.PICKLED_BYTE_ARRAY())
           .execute_and_collect()]
    table_rows = {}
    for kind, row in got:
        if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            table_rows[row["id"]] = row
        else:
            assert table_rows.pop(row["id"]) == row
    want_edge = dict(ss.flink_row(), id=2, born=dt.date(1, 1, 1), seen=dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                     seen_tz=ss.instant(-62_135_596_800, 0), ratio=Decimal("-99999999999999999999.999999999999999999"),
                     at=dt.time(23, 59, 59, 999000), span=-1, days=[], uids=[])
    want_moved = dict(ss.flink_row(), seen=dt.datetime(1969, 12, 31, 23, 59, 59, 999999), name="bob")
    assert table_rows == {1: want_moved, 2: want_edge}
    assert [k for k, _ in got].count(RowKind.UPDATE_BEFORE) == 1   # the bad record was skipped, nothing else

    t_env.create_temporary_view("kinds", table)
    query = ("SELECT id, CAST(born AS STRING), CAST(seen AS STRING), CAST(seen_tz AS STRING), CAST(ratio AS STRING), "
             "EXTRACT(MILLISECOND FROM `at`), CAST(days AS STRING), EXTRACT(YEAR FROM c_ts) FROM kinds")
    with t_env.sql_query(query).execute().collect() as results:
        cast = {}
        for r in results:
            if r.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                cast[r[0]] = tuple(r[1:])
            else:
                cast.pop(r[0])
    assert cast == {
        1: ("2024-02-29", "1969-12-31 23:59:59.999999000", "2024-01-02 01:04:05.123456000", "3.141590000000000000",
            500, "[1970-01-01, 1969-12-31, 2024-02-29]", 2024),
        2: ("0001-01-01", "9999-12-31 23:59:59.999999000", "0001-01-01 00:00:00.000000000",
            "-99999999999999999999.999999999999999999", 999, "[]", 2024)}
