"""CDC from a real database: PostgreSQL 15 -> Debezium 3.6.1 (Kafka Connect standalone) -> Kafka ->
serdes.cdc, checked against the table itself.

Debezium's PostgreSQL connector captures two tables of the same columns -- one with
``REPLICA IDENTITY DEFAULT`` (updates without ``before``), one with ``FULL`` -- through
Apicurio's Avro converter writing the Confluent wire format (4-byte content id, no headers) to
the session's Apicurio registry.  The test snapshots three rows (``r``), then updates (one leaving
a TOASTed column unchanged), deletes (with tombstones), a two-statement transaction, a truncate,
``ALTER TABLE ADD COLUMN`` and more rows while streaming; ``ChangeParser`` with ``SemanticTypes``
must yield exactly those changes, every value of its documented Python type, and the table
materialized from them must equal ``SELECT * FROM`` the table, row for row.  A PyFlink job with
``read_debezium`` over a third table must do the same with the Flink types of the semantic types
(``semantic_types=True``): the rows Flink emits equal ``SELECT *``, with no conversion afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
import pickle
import time
import uuid
from decimal import Decimal
from typing import Any, Dict, List, Optional, Tuple

import pytest

from serdes.avro import AvroDeserializer
from serdes.cdc import UNAVAILABLE, Change, ChangeParser, Op, SemanticTypes
from serdes.testing import debezium_postgres_config

from tests.support.registry_client import registry_client

# one worker runs the whole module (scripts/test.sh: -n 2 --dist loadgroup): its pipeline is
# module-scoped, and a second worker would start its own PostgreSQL and Connect for it
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

pg8000 = pytest.importorskip("pg8000.native")

COLUMNS = """
    id int PRIMARY KEY, big bigint, amount numeric(10,2), ratio numeric, name text, code varchar(16),
    active boolean, born date, seen timestamp, seen_tz timestamptz, at_time time, uid uuid, doc jsonb,
    feeling {mood}, tags text[], blob text, big_tags text[], big_doc jsonb"""

# TOASTed columns, stored out of line (no compression): an update that leaves them unchanged does
# not log them, and Debezium sends its placeholder (under REPLICA IDENTITY DEFAULT)
TOASTED = ("blob", "big_tags", "big_doc")

# the documented Python type of each column's values (docs/cdc.md, "Semantic types")
TYPES: Dict[str, Any] = {
    "id": int, "big": int, "amount": Decimal, "ratio": Decimal, "name": str, "code": str, "active": bool,
    "born": dt.date, "seen": dt.datetime, "seen_tz": dt.datetime, "at_time": dt.time, "uid": uuid.UUID,
    "doc": (dict, list, str, int, float, bool), "feeling": str, "tags": list, "blob": str, "email": str,
    "big_tags": list, "big_doc": dict,
}

BIG_TEXT = "".join(chr(0x41 + (i * 7919) % 26) for i in range(6000))  # > 2 kB: stored out of line

ROW1 = ("1, 9000000000, 12.34, 3.14159, 'alice', 'A1', true, '2024-02-29', '2024-01-02 03:04:05.123456', "
        "'2024-01-02 03:04:05.5+02', '13:14:15.5', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
        "'{{\"k\": [1, 2.5, null]}}', 'happy', ARRAY['x', 'y'], '{big}', {big_tags}, {big_doc}")
ROW3 = ("3, -9223372036854775808, -99999999.99, 0.00000000000000000001, 'zoë ☃', '', false, '0001-01-01', "
        "'1969-12-31 23:59:59.999999', '1999-12-31 23:59:59.999999-08', '00:00:00', "
        "'00000000-0000-0000-0000-000000000000', '[1, \"two\", {\"three\": 3.5}]', 'sad', '{a,NULL}', 'short', ARRAY['small'], '{\"small\": true}'")
ROW_N = ("{id}, {id}00, {id}.5, {id}e-3, 'row{id}', 'c{id}', true, '2020-01-{id:02d}', '2020-01-01 00:00:{id:02d}', "
         "'2020-01-01 00:00:{id:02d}+00', '01:02:{id:02d}', '{uid}', '{{\"n\": {id}}}', 'ok', ARRAY['t{id}'], "
         "'{big}', {big_tags}, {big_doc}")
BIG_TAGS = "array_fill('abcdefghij'::text, ARRAY[600])"                      # ~6 kB
BIG_DOC = "jsonb_build_object('text', repeat('q', 5000), 'n', 1)"           # ~5 kB


def _row(id_: int) -> str:
    return ROW_N.format(id=id_, uid=uuid.UUID(int=id_), big=BIG_TEXT, big_tags=BIG_TAGS, big_doc=BIG_DOC)


def _streaming(t: str, truncate: bool = True) -> List[Tuple[str, List[Tuple[Op, Optional[int]]]]]:
    """(SQL run while streaming, the changes it makes in order: (op, id)); ``truncate=False``
    leaves the truncate out (a Flink changelog has no form for it)."""
    statements = [
        (f"UPDATE {t} SET name = 'bob', big = big + 1 WHERE id = 1", [(Op.UPDATE, 1)]),  # blob unchanged
        (f"UPDATE {t} SET blob = repeat('y', 5000) WHERE id = 3", [(Op.UPDATE, 3)]),
        (f"DELETE FROM {t} WHERE id = 3", [(Op.DELETE, 3)]),                          # + tombstone
        (f"BEGIN; INSERT INTO {t} VALUES ({_row(4)}); UPDATE {t} SET doc = '{{\"n\": [4]}}' WHERE id = 4; "
         "COMMIT", [(Op.CREATE, 4), (Op.UPDATE, 4)]),
        (f"INSERT INTO {t} VALUES ({_row(5)}), ({_row(6)})", [(Op.CREATE, 5), (Op.CREATE, 6)]),
        (f"TRUNCATE {t}", [(Op.TRUNCATE, None)]),
        (f"INSERT INTO {t} VALUES ({_row(7)}), ({_row(8)}), ({_row(10)})",
         [(Op.CREATE, 7), (Op.CREATE, 8), (Op.CREATE, 10)]),
        # the schema changes mid-stream: a new column, then rows with and without it
        (f"ALTER TABLE {t} ADD COLUMN email varchar(64)", []),
        (f"INSERT INTO {t} (id, name, email) VALUES (9, 'nine', 'nine@example.com')", [(Op.CREATE, 9)]),
        (f"UPDATE {t} SET email = 'seven@example.com' WHERE id = 7", [(Op.UPDATE, 7)]),  # blob unchanged
        (f"UPDATE {t} SET name = 'eight' WHERE id = 8", [(Op.UPDATE, 8)]),
        (f"DELETE FROM {t} WHERE id = 5", []),  # truncated already: no row, no event
        (f"INSERT INTO {t} (id, name) VALUES (1000, 'the end')", [(Op.CREATE, 1000)]),
    ]
    return [st for st in statements if truncate or not st[0].startswith("TRUNCATE")]


class Captured:
    """What the pipeline produced for one table: the changes in order, and the parser."""

    def __init__(self, table: str, topic: str, parser: ChangeParser) -> None:
        self.table, self.topic, self.parser = table, topic, parser
        self.changes: List[Change] = []
        self.keys: List[Any] = []
        self.value_schema_ids: List[int] = []


def _consume(consumer: Any, captured: Dict[str, Captured], deserialize: Any, until: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            got = {c.table: [(ch.op.value, _id(ch)) for ch in c.changes] for c in captured.values()}
            raise AssertionError(f"the pipeline did not deliver the changes in {timeout:.0f}s; got {got}")
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        cap = captured[msg.topic()]
        change = cap.parser.parse_message(msg, deserialize, deserialize)
        if change is not None:
            cap.changes.append(change)
            cap.value_schema_ids.append(int.from_bytes(msg.value()[1:5], "big"))


def _wait_topics(consumer: Any, topics: List[str], timeout: float) -> None:
    """Until the connector's producer has created ``topics`` (it writes the snapshot into them)."""
    deadline = time.monotonic() + timeout
    while True:
        known = consumer.list_topics(timeout=5).topics
        if all(t in known and not known[t].error for t in topics):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topics {topics} not created in {timeout:.0f}s (have {sorted(known)})")
        time.sleep(0.5)


def _id(change: Change) -> Optional[int]:
    row = change.after if change.after is not None else change.before
    return None if row is None else row["id"]


@pytest.fixture(scope="module")
def pipeline(postgres, kafka_connect, kafka_bootstrap, registry_url, apicurio_v2_url):
    # apicurio_v2_url: skips on a registry that is not Apicurio (its converters need one)
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    run = uuid.uuid4().hex[:8]
    mood = f"mood_{run}"
    # "flink": REPLICA IDENTITY FULL without the truncate, for the read_debezium job
    tables = {"default": f"items_default_{run}", "full": f"items_full_{run}", "flink": f"items_flink_{run}"}
    db = pg8000.Connection(**postgres.connect_kwargs)
    db.run(f"CREATE TYPE {mood} AS ENUM ('sad', 'ok', 'happy')")
    for identity, t in tables.items():
        db.run(f"CREATE TABLE {t} ({COLUMNS.format(mood=mood)})")
        for col in TOASTED:
            db.run(f"ALTER TABLE {t} ALTER COLUMN {col} SET STORAGE EXTERNAL")  # no compression: out of line
        db.run(f"ALTER TABLE {t} REPLICA IDENTITY {'DEFAULT' if identity == 'default' else 'FULL'}")
        # a Flink LIST has no null elements, and a numeric without scale becomes DECIMAL(38, 18):
        # read_debezium fails a '{a,NULL}' array and 1E-20 with ColumnValueError
        row3 = ROW3 if identity != "flink" else ROW3.replace("'{a,NULL}'", "'{a,b}'").replace(
            "0.00000000000000000001", "0.000000000000000001")
        row1 = ROW1.format(big=BIG_TEXT, big_tags=BIG_TAGS, big_doc=BIG_DOC)
        db.run(f"INSERT INTO {t} VALUES ({row1}), (2, {', '.join(['NULL'] * (len(TYPES) - 2))}), ({row3})")

    prefix = f"cdc{run}"
    name = f"pg-{run}"
    config = debezium_postgres_config(postgres, tables.values(), run_id=run, topic_prefix=prefix,
                                      registry_url=registry_url, **{
                                          "skipped.operations": "none",   # the default skips truncates
                                          "provide.transaction.metadata": "true"})
    client = registry_client(registry_url)
    deserialize = AvroDeserializer(client)
    types = SemanticTypes(client)
    captured = {
        f"{prefix}.public.{t}": Captured(t, f"{prefix}.public.{t}",
                                         ChangeParser(before_required=(identity != "default"), semantic_types=types))
        for identity, t in tables.items()
    }
    by_identity = {identity: captured[f"{prefix}.public.{t}"] for identity, t in tables.items()}
    t0 = time.monotonic()
    kafka_connect.create_connector(name, config)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"cdc-{run}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        kafka_connect.wait_running(name)
        # assigned, not subscribed: without committed offsets a rebalance when the second topic
        # appears would start the first one over from the beginning (duplicates)
        _wait_topics(consumer, list(captured), 120)
        consumer.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in captured])
        # the snapshot first: streaming changes made while it runs could be read by it too
        _consume(consumer, captured, deserialize, lambda: all(len(c.changes) >= 3 for c in captured.values()), 180)
        snapshot_seconds = time.monotonic() - t0
        expected: Dict[str, List[Tuple[Op, Optional[int]]]] = {}
        for identity, t in tables.items():
            expected[identity] = [(Op.READ, 1), (Op.READ, 2), (Op.READ, 3)]
            for sql, changes in _streaming(t, truncate=identity != "flink"):
                for statement in sql.split("; "):
                    db.run(statement)
                expected[identity] += changes
        _consume(consumer, captured, deserialize,
                 lambda: all(len(c.changes) >= len(expected[i]) for i, c in by_identity.items()), 180)
        # anything beyond the expected changes (a duplicate, a stray event) would arrive meanwhile
        quiet_until = time.monotonic() + 3
        _consume(consumer, captured, deserialize, lambda: time.monotonic() > quiet_until, 10)
        rows, names = {}, {}
        for identity, t in tables.items():
            rows[identity] = db.run(f"SELECT * FROM {t} ORDER BY id")
            names[identity] = [c["name"] for c in db.columns]
        print(f"\n[cdc] postgres started in {postgres.startup_seconds:.1f}s, connect in "
              f"{kafka_connect.startup_seconds:.1f}s; connector created -> snapshot read "
              f"{snapshot_seconds:.1f}s -> every change consumed {time.monotonic() - t0:.1f}s")
        yield {"captured": by_identity, "expected": expected, "rows": rows, "names": names,
               "topics": {identity: f"{prefix}.public.{t}" for identity, t in tables.items()}}
    finally:
        consumer.close()
        kafka_connect.delete_connector(name)
        for t in tables.values():
            db.run(f"DROP TABLE IF EXISTS {t}")
        db.run(f"DROP TYPE IF EXISTS {mood}")
        db.close()


def _materialize(changes: List[Change]) -> Dict[int, Dict[str, Any]]:
    table: Dict[int, Dict[str, Any]] = {}
    for ch in changes:
        if ch.op is Op.TRUNCATE:
            table.clear()
        elif ch.op is Op.DELETE:
            del table[ch.before["id"]]
        else:
            old = table.get(ch.after["id"], {})
            table[ch.after["id"]] = {c: old[c] if v is UNAVAILABLE else v for c, v in ch.after.items()}
    return table


@pytest.mark.parametrize("identity", ["default", "full"])
def test_yields_exactly_the_changes_made(pipeline, identity):
    cap = pipeline["captured"][identity]
    assert [(ch.op, _id(ch)) for ch in cap.changes] == pipeline["expected"][identity]
    assert cap.parser.tombstones == 1  # one row deleted: one tombstone
    snapshot = [ch.source["snapshot"] for ch in cap.changes[:3]]
    # "last" for the last table of the snapshot, "last_in_data_collection" for the others
    assert snapshot[-1] in ("last", "last_in_data_collection") and all(s in ("true", "first", "first_in_data_collection", "last",
                                                "last_in_data_collection") for s in snapshot)
    assert all(ch.source["snapshot"] == "false" for ch in cap.changes[3:] if ch.op is not Op.TRUNCATE)
    assert {ch.source["table"] for ch in cap.changes} == {cap.table}


@pytest.mark.parametrize("identity", ["default", "full"])
def test_values_have_their_documented_python_types(pipeline, identity):
    cap = pipeline["captured"][identity]
    seen = set()
    for ch in cap.changes:
        for row in (ch.before, ch.after):
            for col, value in (row or {}).items():
                if value is None or value is UNAVAILABLE:
                    continue
                assert isinstance(value, TYPES[col]), (col, type(value), value)
                seen.add(col)
    assert seen == set(TYPES)
    first = cap.changes[0].after
    assert first["seen"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456) and first["seen"].tzinfo is None
    assert first["seen_tz"] == dt.datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=dt.timezone.utc)
    assert first["ratio"] == Decimal("3.14159") and first["amount"] == Decimal("12.34")
    assert first["at_time"] == dt.time(13, 14, 15, 500000) and first["born"] == dt.date(2024, 2, 29)
    assert first["doc"] == {"k": [1, 2.5, None]} and first["tags"] == ["x", "y"] and first["feeling"] == "happy"
    third = cap.changes[2].after
    assert third["big"] == -2**63 and third["ratio"] == Decimal("1E-20") and third["born"] == dt.date(1, 1, 1)
    assert third["tags"] == ["a", None] and third["name"] == "zoë ☃"


def test_replica_identity_default_updates_have_no_before_and_unavailable_toast(pipeline):
    cap = pipeline["captured"]["default"]
    update1 = cap.changes[3]
    assert update1.op is Op.UPDATE and update1.before is None
    assert all(update1.after[c] is UNAVAILABLE for c in TOASTED) and update1.after["name"] == "bob"
    delete = next(ch for ch in cap.changes if ch.op is Op.DELETE)
    # the key identifies the row; Debezium sends None for the columns PostgreSQL did not log
    assert delete.before == dict.fromkeys(TYPES.keys() - {"email"}, None) | {"id": 3} and delete.after is None


def test_replica_identity_full_updates_have_the_old_row(pipeline):
    cap = pipeline["captured"]["full"]
    update1 = cap.changes[3]
    assert update1.op is Op.UPDATE and update1.before == cap.changes[0].after
    assert update1.after["blob"] == BIG_TEXT  # an unchanged TOASTed column: Debezium has it from the old row
    assert update1.after["big_tags"] == ["abcdefghij"] * 600 and update1.after["big_doc"]["n"] == 1
    update3, delete3 = cap.changes[4], cap.changes[5]
    assert (update3.op, delete3.op) == (Op.UPDATE, Op.DELETE)
    assert delete3.before == update3.after and delete3.before["blob"] == "y" * 5000


def test_transaction_block_groups_the_statements_of_one_transaction(pipeline):
    for cap in pipeline["captured"].values():
        create4, update4 = [ch for ch in cap.changes if _id(ch) == 4]
        # PostgreSQL's transaction is source.txId; Debezium's transaction.id is "<txId>:<lsn>" with
        # the LSN of each event's position, so it differs between the events of one transaction
        assert create4.source["txId"] == update4.source["txId"]
        for ch in (create4, update4):
            assert ch.transaction["id"].startswith(f"{ch.source['txId']}:")
        assert update4.transaction["total_order"] == create4.transaction["total_order"] + 1
        assert update4.transaction["data_collection_order"] == create4.transaction["data_collection_order"] + 1


def test_schema_change_mid_stream_decodes_across_it(pipeline):
    for cap in pipeline["captured"].values():
        ids = [_id(ch) for ch in cap.changes]
        at = ids.index(9)  # the first event after ADD COLUMN
        assert "email" not in cap.changes[at - 1].after and cap.changes[at].after["email"] == "nine@example.com"
        assert len(set(cap.value_schema_ids[at:])) == 1
        assert cap.value_schema_ids[at] != cap.value_schema_ids[at - 1]  # a new version of <topic>-value


@pytest.mark.parametrize("identity", ["default", "full", "flink"])
def test_materialized_table_equals_select_star(pipeline, identity):
    _assert_equals_select_star(_materialize(pipeline["captured"][identity].changes), pipeline, identity)


def _assert_equals_select_star(table: Dict[int, Dict[str, Any]], pipeline: Dict[str, Any], identity: str) -> None:
    names = pipeline["names"][identity]
    selected = [dict(zip(names, r, strict=True)) for r in pipeline["rows"][identity]]
    assert [r["id"] for r in selected] == sorted(table)
    for want in selected:
        got = table[want["id"]]
        for col in names:
            if col not in got:
                # the row's last event predates ADD COLUMN: the column was added as NULL for it
                assert col == "email" and want[col] is None, (want["id"], col)
                continue
            assert got[col] == want[col], (want["id"], col, got[col], want[col])
            assert type(got[col]) is type(want[col]) or want[col] is None, (want["id"], col)
        assert set(got) <= set(names)



def _pickled_row(r: Any) -> bytes:
    """A changelog row as (kind, dict), pickled: what the job hands back to the test."""
    import pickle

    return pickle.dumps((r.get_row_kind(), r.as_dict()))


#: the Python values read_debezium's Flink types have where they differ from pg8000's for the same
#: column (docs/cdc.md, "Semantic types"): TIMESTAMP_LTZ is PyFlink's Instant; uuid and jsonb are
#: STRING columns holding the connector's text -- checked to be of these types, then read as pg8000
#: reads them, so the rest of the comparison is value and type equality
FLINK_TEXT = {"uid": uuid.UUID, "doc": json.loads, "big_doc": json.loads}


def _as_selected(col: str, v: Any) -> Any:
    if v is None:
        return None
    if col == "seen_tz":
        from pyflink.common.time import Instant

        assert isinstance(v, Instant), (col, v)
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=v.seconds,
                                                                                microseconds=v.nanos // 1000)
    if col in FLINK_TEXT:
        assert isinstance(v, str), (col, v)
        return FLINK_TEXT[col](v)
    return v


@pytest.mark.flink
@pytest.mark.timeout(600)
def test_read_debezium_job_materializes_the_table(pipeline, kafka_bootstrap, registry_url):
    """A PyFlink job with ``read_debezium`` (retract mode, the row type from the latest registered
    envelope, ``semantic_types=True``: the default) over the real topic: its column types are the
    documented Flink types, and its changelog applied to a dict equals ``SELECT * FROM`` the table
    row for row -- ``date`` a date, ``timestamp`` a datetime to the microsecond, ``numeric`` a
    Decimal, no conversion after the job but reading PyFlink's Instant and the text of uuid/jsonb
    (:func:`_as_selected`).  The rows are collected after a shuffle (``rebalance``), so they went
    through Flink's serializers of their types, not just PyFlink's coders."""
    pytest.importorskip("pyflink")
    import re

    from pyflink.common import RowKind, Types
    from pyflink.table import StreamTableEnvironment

    from serdes import flink as sf

    topic = pipeline["topics"]["flink"]
    env = sf.create_env()
    stream = sf.read_debezium(env, kafka_bootstrap, topic, value=sf.avro(registry_url), bounded=True)
    names = stream.get_type().get_field_names()
    assert names == pipeline["names"]["flink"]  # the latest envelope: with the added column

    # the Table API's column types (from_changelog_stream, as docs/cdc.md shows)
    t_env = StreamTableEnvironment.create(env)
    schema = str(t_env.from_changelog_stream(stream).get_resolved_schema())
    types = dict(re.findall(r"(?m)^\s*`(\w+)` (.+?),?$", schema))
    assert types == {
        "id": "INT", "big": "BIGINT", "amount": "DECIMAL(38, 18)", "ratio": "DECIMAL(38, 18)", "name": "STRING",
        "code": "STRING", "active": "BOOLEAN", "born": "DATE", "seen": "TIMESTAMP(9)",
        "seen_tz": "TIMESTAMP_LTZ(9)", "at_time": "TIME(9)", "uid": "STRING", "doc": "STRING",
        "feeling": "STRING", "tags": "ARRAY<STRING>", "blob": "STRING", "big_tags": "ARRAY<STRING>",
        "big_doc": "STRING", "email": "STRING"}, schema

    # cloudpickle pickles a function of an importable module by reference; the Python worker
    # imports no test modules
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        collected = [pickle.loads(b) for b in stream.rebalance().map(_pickled_row, output_type=Types.PICKLED_BYTE_ARRAY())
                     .execute_and_collect()]
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    table: Dict[int, Dict[str, Any]] = {}
    kinds = []
    for kind, flink_row in collected:
        kinds.append(kind)
        row = {c: _as_selected(c, v) for c, v in flink_row.items()}
        if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            table[row["id"]] = row
        else:
            assert table.pop(row["id"]) == row, "a retraction of another row than the one materialized"
    assert kinds.count(RowKind.UPDATE_BEFORE) == kinds.count(RowKind.UPDATE_AFTER) > 0
    _assert_equals_select_star(table, pipeline, "flink")
