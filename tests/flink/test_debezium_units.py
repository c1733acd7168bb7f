"""read_debezium's build-time pieces and the decode operator's row logic, without a job or servers."""

from __future__ import annotations

import json
import pickle

import cloudpickle
import pytest
from pyflink.common import RowKind, Types

from serdes import flink as sf
from serdes.cdc import parse_change
from serdes.flink._debezium import DebeziumDecodeFunction, _after_row, _metadata_spec

from tests.support import debezium_samples as ds
from tests.support.flink_context import RuntimeContext

REG = "http://127.0.0.1:1"  # never contacted: every case here gives the schema


def _fn(spec, metadata=None, mode="retract"):
    spec, _, conv = _after_row(spec, "t", None)
    fn = DebeziumDecodeFunction(spec, None, conv, _metadata_spec(metadata), mode)
    fn = pickle.loads(cloudpickle.dumps(fn))          # what the worker gets
    fn.open(RuntimeContext())                        # builds the (unused) deserializer locally
    return fn


def _specs():
    from serdes_test.dbz_accounts_pb2 import Envelope

    return [sf.avro(REG, ds.avro_envelope()), sf.json_schema(REG, ds.json_envelope()), sf.protobuf(Envelope, REG)]


def test_row_type_from_after_schema_all_formats():
    avro_t, json_t, pb_t = (sf.debezium_row_type(s, "t") for s in _specs())
    assert avro_t.get_field_names() == json_t.get_field_names() == pb_t.get_field_names() == ["id", "owner", "balance"]
    assert avro_t.get_field_types() == [Types.INT(), Types.STRING(), Types.LONG()]
    assert pb_t.get_field_types() == [Types.INT(), Types.STRING(), Types.LONG()]
    assert json_t.get_field_types() == [Types.LONG(), Types.STRING(), Types.LONG()]   # JSON integer
    # v2: the added nullable column
    assert sf.debezium_row_type(sf.avro(REG, ds.avro_envelope(True)), "t").get_field_names()[-1] == "email"
    assert sf.debezium_row_type(sf.json_schema(REG, ds.json_envelope(True)), "t").get_field_types()[-1] == Types.STRING()


def test_metadata_columns_types_and_errors():
    t = sf.debezium_row_type(sf.avro(REG, ds.avro_envelope()), "t",
                             metadata={"src_db": "db", "lsn": "lsn", "pos": "position", "op": "op"})
    assert t.get_field_names() == ["id", "owner", "balance", "src_db", "lsn", "pos", "op"]
    assert t.get_field_types()[3:] == [Types.STRING(), Types.LONG(), Types.STRING(), Types.STRING()]
    with pytest.raises(ValueError, match="unknown Debezium metadata 'nope'"):
        sf.debezium_row_type(sf.avro(REG, ds.avro_envelope()), "t", metadata=["nope"])
    with pytest.raises(ValueError, match="clashes"):
        sf.debezium_row_type(sf.avro(REG, ds.avro_envelope()), "t", metadata={"owner": "db"})


def test_not_an_envelope_is_rejected_when_the_job_is_built():
    with pytest.raises(ValueError, match="not a Debezium envelope"):
        sf.debezium_row_type(sf.avro(REG, json.dumps(ds.avro_value())), "t")
    with pytest.raises(ValueError, match="not a Debezium envelope"):
        sf.debezium_row_type(sf.json_schema(REG, json.dumps(ds.json_value())), "t")
    from serdes_test.dbz_accounts_pb2 import Value

    with pytest.raises(ValueError, match="not a Debezium envelope"):
        sf.debezium_row_type(sf.protobuf(Value, REG), "t")
    deep = {"type": "record", "name": "E", "fields": [{"name": "after", "type": "string"}, {"name": "op", "type": "string"}]}
    node = deep
    for _ in range(300):
        node["fields"].append({"name": "x", "type": {"type": "record", "name": "N", "fields": []}})
        node = node["fields"][-1]["type"]
    with pytest.raises(ValueError, match="nested deeper"):
        sf.debezium_row_type(sf.avro(REG, json.dumps(deep)), "t")


@pytest.mark.parametrize("i", [0, 1, 2], ids=["avro", "json", "protobuf"])
def test_rows_and_kinds_per_op(i):
    fn = _fn(_specs()[i], metadata=["op", "lsn"])
    convert = ds.to_proto if i == 2 else (lambda e: e)
    a, b = ds.row(1, "alice", 100), ds.row(1, "alice", 150)

    def rows(e):
        return [(r.get_row_kind(), tuple(r)) for r in fn.rows(parse_change(convert(e), before_required=True))]

    lsn = ds.source(1)["lsn"]
    assert rows(ds.envelope("r", None, a, 1)) == [(RowKind.INSERT, (1, "alice", 100, "r", lsn))]
    assert rows(ds.envelope("c", None, a, 1)) == [(RowKind.INSERT, (1, "alice", 100, "c", lsn))]
    assert rows(ds.envelope("u", a, b, 1)) == [(RowKind.UPDATE_BEFORE, (1, "alice", 100, "u", lsn)),
                                              (RowKind.UPDATE_AFTER, (1, "alice", 150, "u", lsn))]
    assert rows(ds.envelope("d", b, None, 1)) == [(RowKind.DELETE, (1, "alice", 150, "d", lsn))]
    assert fn.rows(parse_change(convert(ds.envelope("c", None, a, 1))))[0].as_dict()["owner"] == "alice"


def test_upsert_mode_rows():
    fn = _fn(sf.avro(REG, ds.avro_envelope()), mode="upsert")
    a, b = ds.row(1, "alice", 100), ds.row(1, "alice", 150)
    [r] = fn.rows(parse_change(ds.envelope("u", a, b, 1)))
    assert r.get_row_kind() == RowKind.UPDATE_AFTER and tuple(r) == (1, "alice", 150)
    [r] = fn.rows(parse_change(ds.envelope("d", None, None, 1), key={"id": 1}, before_required=False,
                               columns=fn.columns))
    assert r.get_row_kind() == RowKind.DELETE and tuple(r) == (1, None, None)


@pytest.mark.parametrize("mode", ["retract", "upsert"])
def test_an_unchanged_toast_placeholder_in_an_update_is_a_column_error(mode):
    """REPLICA IDENTITY DEFAULT: an update leaving a TOASTed column unchanged sends Debezium's
    placeholder in its place; a Flink row cannot say "unchanged", so the record is refused (then
    on_error applies), never written with the placeholder text as the column's value."""
    from serdes import ColumnValueError
    from serdes.cdc import PLACEHOLDER

    fn = _fn(sf.avro(REG, ds.avro_envelope()), mode=mode)
    a = ds.row(1, "alice", 100)
    unsent = dict(ds.row(1, "alice", 150), owner=PLACEHOLDER)
    with pytest.raises(ColumnValueError, match="column 'owner' of 'after' is the unavailable-value placeholder") as e:
        fn.rows(parse_change(ds.envelope("u", a, unsent, 1), before_required=mode == "retract"))
    assert e.value.column == "owner"
    # the text in an insert is the column's value (Debezium has the whole row there)
    [r] = fn.rows(parse_change(ds.envelope("c", None, unsent, 1)))
    assert tuple(r) == (1, PLACEHOLDER, 150)


def test_evolved_records_fit_the_row_type():
    """A v2 after (extra email) through a v1 row type drops it; a v1 after through v2 gets None."""
    v1 = _fn(sf.avro(REG, ds.avro_envelope()))
    v2 = _fn(sf.avro(REG, ds.avro_envelope(True)))
    [r] = v1.rows(parse_change(ds.envelope("c", None, ds.row(1, "a", 1, "x@y"), 1)))
    assert tuple(r) == (1, "a", 1)
    [r] = v2.rows(parse_change(ds.envelope("c", None, ds.row(1, "a", 1), 1)))
    assert tuple(r) == (1, "a", 1, None)


def test_options_are_validated():
    spec, _, conv = _after_row(sf.avro(REG, ds.avro_envelope()), "t", None)
    with pytest.raises(ValueError, match="changelog_mode"):
        DebeziumDecodeFunction(spec, None, conv, [], mode="full")
    with pytest.raises(ValueError, match="on_truncate"):
        DebeziumDecodeFunction(spec, None, conv, [], on_truncate="dead_letter")
    with pytest.raises(ValueError, match="on_error"):
        DebeziumDecodeFunction(spec, None, conv, [], on_error="ignore")


def test_benchmark_events_are_a_valid_history():
    """benchmarks/flink_cdc.py's generator: every envelope parses, retractions match the table."""
    from benchmarks.flink_cdc import debezium_events

    table, ops = {}, set()
    for key, e in debezium_events(3000):
        ch = parse_change(e)
        if ch is None:
            assert key["id"] not in table            # a tombstone follows its delete
            continue
        ops.add(ch.op.value)
        if ch.op.value in ("u", "d"):
            assert table.pop(ch.before["id"]) == ch.before
        if ch.after is not None:
            table[ch.after["id"]] = ch.after
    assert ops == {"c", "u", "d"}


@pytest.mark.parametrize("on_error", ["dead_letter", "skip", "fail"])
def test_registry_error_is_never_dead_lettered_or_skipped(on_error):
    """As in read_kafka: a registry failure (here a 401) fails the operator whatever on_error says."""
    import serdes

    spec, _, conv = _after_row(_specs()[0], "t", None)
    fn = DebeziumDecodeFunction(spec, None, conv, _metadata_spec(None), "retract", on_error=on_error)
    fn = pickle.loads(cloudpickle.dumps(fn))
    fn.open(RuntimeContext())

    def unauthorized(data, ctx):
        raise serdes.RegistryAuthError("fetching schema id 1: registry answered HTTP 401", http_status=401)

    fn._value_de = unauthorized
    with pytest.raises(serdes.RegistryAuthError) as info:
        list(fn.process_element(("t", 2, 7, 0, None, b"\x00\x00\x00\x00\x01\x02", None), None))
    assert (info.value.location.topic, info.value.location.partition, info.value.location.offset) == ("t", 2, 7)
