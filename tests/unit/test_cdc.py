"""serdes.cdc: Debezium envelopes -> Change, every rule, for dicts, Mappings and Protobuf messages."""

from __future__ import annotations

import pickle
import types
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

import serdes
from serdes import MalformedEnvelopeError, RecordLocation, ValidationError
from serdes.cdc import Change, ChangeParser, Op, parse_change

from tests.support import debezium_samples as ds

A1 = ds.row(1, "alice", 100)
A2 = ds.row(1, "alice", 150)


def env(op, before=None, after=None):
    return ds.envelope(op, before, after, 1)


# -- the rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("code,op", [("c", Op.CREATE), ("r", Op.READ)])
def test_create_and_read(code, op):
    ch = parse_change(env(code, None, A1))
    assert isinstance(ch, Change)
    assert ch.op is op and ch.before is None and ch.after == A1
    assert ch.source["table"] == "accounts" and ch.source["lsn"] == 24_000_100
    assert ch.ts_ms == ds.BASE_TS + 6 and ch.transaction is None


def test_update_has_before_and_after():
    ch = parse_change(env("u", A1, A2))
    assert (ch.op, ch.before, ch.after) == (Op.UPDATE, A1, A2)


def test_delete_has_before():
    ch = parse_change(env("d", A1, None))
    assert (ch.op, ch.before, ch.after) == (Op.DELETE, A1, None)


def test_truncate_is_a_change_without_rows():
    ch = parse_change(env("t"))
    assert (ch.op, ch.before, ch.after) == (Op.TRUNCATE, None, None)
    assert ch.source["db"] == "inventory"


def test_truncate_drops_before_and_after_the_envelope_carries():
    """docs/cdc.md: a truncate's before/after are None, whatever the envelope holds."""
    ch = parse_change(env("t", A1, A2))
    assert (ch.op, ch.before, ch.after) == (Op.TRUNCATE, None, None)
    assert ch.source["table"] == "accounts"
    ch = ChangeParser(columns=["id", "owner", "balance"]).parse(env("t", {"x": 1}, {}))
    assert (ch.before, ch.after) == (None, None)


COLUMNS = frozenset(("id", "owner", "balance"))


@pytest.mark.parametrize("e, part, missing", [
    (env("c", None, {}), "after", "'balance', 'id', 'owner'"),
    (env("r", None, {"id": 1, "owner": "a"}), "after", "'balance'"),
    (env("u", A1, {"id": 1, "balance": 5}), "after", "'owner'"),
    (env("u", {"id": 1}, A2), "before", "'balance', 'owner'"),
    (env("d", {"owner": "a", "balance": 1}, None), "before", "'id'"),
])
def test_a_missing_column_is_malformed(e, part, missing):
    loc = RecordLocation("t", "value", 2, 9)
    with pytest.raises(MalformedEnvelopeError) as info:
        parse_change(e, columns=COLUMNS, location=loc)
    assert f"{part!r} has no column {missing}" in str(info.value)
    assert (info.value.location.partition, info.value.location.offset) == (2, 9)
    # the same through ChangeParser, with the columns as a list
    with pytest.raises(MalformedEnvelopeError, match="has no column"):
        ChangeParser(columns=["id", "owner", "balance"]).parse(e)
    # without columns the rule does not apply (the caller does not know the table)
    assert parse_change(e) is not None


def test_null_columns_extra_columns_and_optional_columns():
    ch = parse_change(env("c", None, {"id": 1, "owner": None, "balance": None, "extra": 1}), columns=COLUMNS)
    assert ch.after == {"id": 1, "owner": None, "balance": None, "extra": 1}
    ch = parse_change(env("c", None, {"id": 1, "owner": "a"}), columns=COLUMNS, optional_columns={"balance"})
    assert ch.after == {"id": 1, "owner": "a"}
    with pytest.raises(MalformedEnvelopeError, match="has no column 'owner'"):
        parse_change(env("c", None, {"id": 1}), columns=COLUMNS, optional_columns={"balance"})


def test_delete_by_key_fills_every_column_and_needs_key_fields_that_are_columns():
    ch = parse_change(env("d"), key={"id": 3}, before_required=False, columns=COLUMNS)
    assert ch.before == {"id": 3, "owner": None, "balance": None}
    with pytest.raises(MalformedEnvelopeError, match="key field 'pk' is not a column of the table"):
        parse_change(env("d"), key={"pk": 3}, before_required=False, columns=COLUMNS)
    with pytest.raises(MalformedEnvelopeError, match="the key has no fields"):
        parse_change(env("d"), key={}, before_required=False, columns=COLUMNS)
    # without columns: the key as it is (the caller's own rule)
    assert parse_change(env("d"), key={"pk": 3}, before_required=False).before == {"pk": 3}


def test_transaction_block_is_kept():
    e = env("c", None, A1)
    e["transaction"] = {"id": "7:1", "total_order": 3, "data_collection_order": 1}
    assert parse_change(e).transaction == {"id": "7:1", "total_order": 3, "data_collection_order": 1}


def test_tombstone_is_not_a_change():
    assert parse_change(None) is None


@pytest.mark.parametrize("mutate,match", [
    (lambda e: e.pop("op"), "no 'op'"),
    (lambda e: e.update(op=None), "no 'op'"),
    (lambda e: e.update(op=""), "no 'op'"),
    (lambda e: e.update(op=1), "'op' is a int"),
    (lambda e: e.update(op="x"), "unknown op 'x'"),
    (lambda e: e.update(op="m"), "unknown op 'm'"),
    (lambda e: e.update(op="create"), "unknown op 'create'"),
    (lambda e: e.update(after="not a row"), "'after' is a str"),
    (lambda e: e.update(source=[1]), "'source' is a list"),
    (lambda e: e.update(transaction=5), "'transaction' is a int"),
    (lambda e: e.update(ts_ms="late"), "'ts_ms' is a str"),
])
def test_malformed_envelopes(mutate, match):
    e = env("c", None, A1)
    mutate(e)
    with pytest.raises(MalformedEnvelopeError, match=match):
        parse_change(e)


@pytest.mark.parametrize("code,name", [("c", "create"), ("r", "read"), ("u", "update")])
def test_after_missing(code, name):
    with pytest.raises(MalformedEnvelopeError, match=f"{name} event .* has no 'after'"):
        parse_change(env(code, A1 if code == "u" else None, None))


def test_before_missing_on_update_and_delete():
    with pytest.raises(MalformedEnvelopeError, match="update event .* no 'before'"):
        parse_change(env("u", None, A2))
    with pytest.raises(MalformedEnvelopeError, match="delete event .* no 'before'"):
        parse_change(env("d", None, None))


def test_envelope_not_a_record():
    for bad in (b"bytes", "str", 3, [1]):
        with pytest.raises(MalformedEnvelopeError, match="not a record"):
            parse_change(bad)


def test_replica_identity_default_updates_and_deletes_by_key():
    ch = parse_change(env("u", None, A2), before_required=False)
    assert (ch.op, ch.before, ch.after) == (Op.UPDATE, None, A2)
    ch = parse_change(env("d", None, None), key={"id": 1}, before_required=False)
    assert (ch.op, ch.before, ch.after) == (Op.DELETE, {"id": 1}, None)
    # a before that is present is kept (DEFAULT identity sends the key columns)
    ch = parse_change(env("d", {"id": 1, "owner": None, "balance": None}, None), before_required=False)
    assert ch.before["id"] == 1
    with pytest.raises(MalformedEnvelopeError, match="neither 'before' nor a record key"):
        parse_change(env("d", None, None), before_required=False)
    with pytest.raises(MalformedEnvelopeError, match="no 'after'"):
        parse_change(env("u", None, None), before_required=False)


def test_mapping_that_is_not_a_dict():
    e = env("u", A1, A2)
    proxy = types.MappingProxyType({**e, "after": types.MappingProxyType(A2)})
    ch = parse_change(proxy)
    assert ch.after == A2 and type(ch.after) is dict


# -- errors -------------------------------------------------------------------------------------

def test_error_class_location_and_pickle():
    assert issubclass(MalformedEnvelopeError, ValidationError)
    assert issubclass(MalformedEnvelopeError, serdes.SerdesError)
    loc = RecordLocation("dbserver1.public.accounts", "value", 2, 41)
    with pytest.raises(MalformedEnvelopeError) as info:
        parse_change({"after": A1}, location=loc)
    err = info.value
    assert "topic='dbserver1.public.accounts'" in str(err) and "partition=2" in str(err) and "offset=41" in str(err)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is MalformedEnvelopeError and str(back) == str(err)
    assert back.location.offset == 41 and back.reason == err.reason
    # the caller's location object is not mutated by a later .at()
    err.at(offset=99)
    assert loc.offset == 41


# -- Protobuf --------------------------------------------------------------------------------

def test_protobuf_message_envelopes():
    ev, _ = ds.history()
    for _key, e in ev:
        if e is None:
            continue
        got = parse_change(ds.to_proto(e))
        want = parse_change(e)
        assert got.op is want.op and got.before == want.before and got.after == want.after
        assert got.ts_ms == want.ts_ms and got.transaction == want.transaction
        assert got.source == want.source      # optional fields keep presence: xmin is None


def test_protobuf_missing_op_and_after():
    from serdes_test.dbz_accounts_pb2 import Envelope, Value

    with pytest.raises(MalformedEnvelopeError, match="no 'op'"):
        parse_change(Envelope(after=Value(id=1)))
    with pytest.raises(MalformedEnvelopeError, match="create event .* no 'after'"):
        parse_change(Envelope(op="c"))
    ch = parse_change(Envelope(op="d", before=Value(id=1, owner="a", balance=0)))
    assert ch.before == {"id": 1, "owner": "a", "balance": 0} and ch.ts_ms is None


# message_to_dict itself: tests/unit/test_protobuf_todict.py (the same cases as output="dict")


# -- ChangeParser -------------------------------------------------------------------------------

def _apply(table, ch):
    """Apply one parsed change to ``table`` (id -> row); a tombstone (``None``) changes nothing."""
    if ch is None:
        return
    if ch.op is Op.DELETE:
        del table[ch.before["id"]]
    else:
        table[ch.after["id"]] = ch.after


def _balance_per_owner(table):
    totals = {}
    for r in table.values():
        totals[r["owner"]] = totals.get(r["owner"], 0) + r["balance"]
    return totals


def test_change_parser_counts_tombstones_and_ops():
    ev, _ = ds.history()
    p = ChangeParser()
    table = {}
    for key, e in ev:
        _apply(table, p.parse(e, key))
    assert p.tombstones == 2
    assert p.counts == {Op.READ: 3, Op.CREATE: 3, Op.UPDATE: 3, Op.DELETE: 2, Op.TRUNCATE: 0}
    assert p.changes == 11
    assert _balance_per_owner(table) == ds.history()[1]


class _Msg:
    def __init__(self, topic, partition, offset, key, value):
        self._t, self._p, self._o, self._k, self._v = topic, partition, offset, key, value

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def key(self):
        return self._k

    def value(self):
        return self._v

    def headers(self):
        return None


def test_parse_message_with_registry_serdes_avro_and_json():
    from serdes.avro import AvroDeserializer, AvroSerializer
    from serdes.json import JSONDeserializer, JSONSerializer

    client = SchemaRegistryClient.new_client({"url": f"mock://cdc-{uuid.uuid4().hex}"})
    topic = f"{ds.NS}"
    pairs = [
        (AvroSerializer(client, ds.avro_envelope()), AvroDeserializer(client),
         AvroSerializer(client, ds.AVRO_KEY), AvroDeserializer(client)),
        (JSONSerializer(ds.json_envelope(), client), JSONDeserializer(ds.json_envelope()),
         JSONSerializer(ds.JSON_KEY, client), JSONDeserializer(ds.JSON_KEY)),
    ]
    ev, totals = ds.history()
    for vser, vde, kser, kde in pairs:
        p = ChangeParser()
        table = {}
        for off, (key, e) in enumerate(ev):
            raw_v = None if e is None else vser(e, SerializationContext(topic, MessageField.VALUE))
            raw_k = kser(key, SerializationContext(topic, MessageField.KEY))
            _apply(table, p.parse_message(_Msg(topic, 0, off, raw_k, raw_v), vde, kde))
        assert p.tombstones == 2 and p.changes == 11
        assert _balance_per_owner(table) == totals
        # a malformed envelope carries the record's coordinates
        bad = dict(ev[0][1], op="z")
        raw = vser(bad, SerializationContext(topic, MessageField.VALUE))
        with pytest.raises(MalformedEnvelopeError, match="offset=77"):
            p.parse_message(_Msg(topic, 3, 77, None, raw), vde)


def test_parse_message_locates_deserializer_errors():
    from serdes.avro import AvroDeserializer

    client = SchemaRegistryClient.new_client({"url": f"mock://cdc-{uuid.uuid4().hex}"})
    with pytest.raises(serdes.SerdesError, match="partition=1, offset=5"):
        ChangeParser().parse_message(_Msg("t", 1, 5, None, b"\x07junk"), AvroDeserializer(client))
