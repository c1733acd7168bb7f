"""Fast tests without a Flink job or servers."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from serdes import flink as sf
from serdes.flink import _jars
from serdes.demo.orders_pb2 import CustomerTotal, Order

from tests.support.flink_context import RuntimeContext
from tests.support.packed import pack_consumer_record


def test_explicit_jar_path_must_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("SERDES_FLINK_KAFKA_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(sf.ConnectorJarError, match="SERDES_FLINK_KAFKA_JAR"):
        sf.kafka_connector_jar()
    jar = tmp_path / "mine.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("SERDES_FLINK_KAFKA_JAR", str(jar))
    assert sf.kafka_connector_jar() == jar.resolve()


def test_missing_jar_without_fetch_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("SERDES_FLINK_KAFKA_JAR", raising=False)
    monkeypatch.setenv("SERDES_CACHE_DIR", str(tmp_path))
    with pytest.raises(sf.ConnectorJarError, match="SERDES_FLINK_KAFKA_JAR"):
        sf.kafka_connector_jar(fetch=False)


def test_missing_mvn_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SERDES_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_jars.shutil, "which", lambda name: None)
    with pytest.raises(sf.ConnectorJarError, match="mvn"):
        _jars.fetch_connector_jar()


def test_specs_pickle_without_clients():
    spec = sf.avro("http://127.0.0.1:1")
    fn = sf.DecodeFunction(spec, on_error="dead_letter")
    again = cloudpickle.loads(cloudpickle.dumps(fn))
    assert again.value_spec.registry_conf == {"url": "http://127.0.0.1:1", "timeout": 30}
    assert again._value_de is None


def test_type_info_codecs_roundtrip_and_pickle():
    t = sf.ProtobufTypeInformation(Order)
    msg = Order(order_id="1", customer="c", amount_cents=3)
    enc, dec = pickle.loads(pickle.dumps(t.encoder())), cloudpickle.loads(cloudpickle.dumps(t.decoder()))
    assert dec(enc(msg)) == msg
    dyn = sf.DynamicProtobufTypeInformation(CustomerTotal.DESCRIPTOR)
    d = cloudpickle.loads(cloudpickle.dumps(dyn.decoder()))
    back = d(CustomerTotal(customer="x", count=2).SerializeToString())
    assert back.customer == "x" and back.count == 2
    assert t == sf.ProtobufTypeInformation(Order) and t != sf.ProtobufTypeInformation(CustomerTotal)


def _decode_fn(on_error):
    def factory(client, **kw):
        def de(data, ctx):
            if data == b"bad":
                raise ValueError("cannot parse")
            return (data.decode(), ctx.topic, ctx.partition, ctx.offset)

        return de

    fn = sf.DecodeFunction(sf.custom("avro", "de", factory), on_error=on_error)
    ctx = RuntimeContext()
    fn.open(ctx)
    return fn, ctx.group.counters


#: DecodeFunction takes what serdes' sources emit (packed records) and read_records' rows alike
SHAPES = {"packed": pack_consumer_record, "row": lambda *fields: fields}


@pytest.mark.parametrize("shape", SHAPES)
def test_decode_function_fail_names_coordinates(shape):
    rec = SHAPES[shape]
    fn, counters = _decode_fn("fail")
    assert list(fn.process_element(rec("t", 2, 7, 0, None, b"ok", None), None)) == [("ok", "t", 2, 7)]
    with pytest.raises(sf.RecordDecodeError) as info:
        list(fn.process_element(rec("t", 2, 8, 0, None, b"bad", None), None))
    assert "topic='t'" in str(info.value) and "partition=2" in str(info.value) and "offset=8" in str(info.value)
    assert counters["serdes_failed"].n == 1  # failures are counted at once
    assert counters["serdes_decoded"].n == 0  # decoded records in batches (_metrics.py) ...
    fn.close()
    assert counters["serdes_decoded"].n == 1  # ... and all of them by close()
    # the error round-trips through pickle (it crosses the worker boundary)
    again = pickle.loads(pickle.dumps(info.value))
    assert again.location.offset == 8


@pytest.mark.parametrize("shape", SHAPES)
def test_decode_function_dead_letter_side_output(shape):
    rec = SHAPES[shape]
    fn, counters = _decode_fn("dead_letter")
    out = list(fn.process_element(rec("t", 0, 3, 11, b"k", b"bad", {"h": b"v"}), None))
    assert len(out) == 1
    tag, row = out[0]
    assert tag == sf.DEAD_LETTER_TAG
    assert (row[0], row[1], row[2], row[4], row[5]) == ("t", 0, 3, b"k", b"bad")
    assert "cannot parse" in row[7] and row[8] == "RecordDecodeError" and row[6] == {"h": b"v"}
    assert list(fn.process_element(rec("t", 0, 4, 0, None, None, None), None)) == []  # tombstone skipped
    assert counters["serdes_tombstones"].n == 1


def test_find_record_error_parses_worker_traceback():
    text = (
        "Caused by: java.lang.RuntimeException: Error received from SDK harness\n"
        "  File \"x.py\", line 1\n"
        "serdes._errors.InvalidMagicByteError: unknown magic byte 0x07 "
        "(topic='orders', field=value, partition=3, offset=42)\n"
    )
    err = sf.find_record_error(text)
    assert err.error_type == "InvalidMagicByteError"
    assert (err.topic, err.partition, err.offset) == ("orders", 3, 42)
    assert sf.find_record_error("nothing here") is None


def test_shim_without_javac_says_what_is_missing(tmp_path, monkeypatch):
    from serdes.flink import _shim

    connector = tmp_path / "flink-sql-connector-kafka-5.0.0-2.2.jar"  # same name as the pinned jar
    connector.write_bytes(b"PK")
    monkeypatch.setenv("SERDES_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_shim.shutil, "which", lambda name: None)
    monkeypatch.setattr(_shim, "PACKAGED_JAR", tmp_path / "none.jar")  # as in a checkout: no wheel's jar
    with pytest.raises(sf.ConnectorJarError, match="javac"):
        _shim.shim_jar(connector)


@pytest.mark.parametrize("on_error", ["dead_letter", "skip", "fail"])
def test_decode_function_registry_error_is_never_dead_lettered_or_skipped(on_error):
    """A registry failure is not the record's: whatever on_error says, the operator fails."""
    import serdes

    def factory(client, **kw):
        def de(data, ctx):
            raise serdes.RegistryAuthError("fetching schema id 1: registry answered HTTP 401", http_status=401)

        return de

    fn = sf.DecodeFunction(sf.custom("avro", "de", factory), on_error=on_error)
    ctx = RuntimeContext()
    fn.open(ctx)
    with pytest.raises(serdes.RegistryAuthError) as info:
        list(fn.process_element(("t", 1, 9, 0, b"k", b"\x00\x00\x00\x00\x01\x02", None), None))
    assert (info.value.location.topic, info.value.location.partition, info.value.location.offset) == ("t", 1, 9)
    counters = ctx.group.counters
    assert counters["serdes_registry_failures"].n == 1 and counters["serdes_failed"].n == 0
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is serdes.RegistryAuthError and again.http_status == 401 and again.location.offset == 9


def test_create_env_hides_beams_gcs_warning_only(caplog):
    """create_env() drops Beam's harmless "Failed to import GCSFileSystem" log line (the demo did it
    alone before) and nothing else Beam logs."""
    import logging

    sf.create_env()
    logger = logging.getLogger("apache_beam.io.filesystems")
    with caplog.at_level(logging.WARNING, logger="apache_beam.io.filesystems"):
        logger.warning("Failed to import GCSFileSystem; loading GCS filesystem will fail")
        logger.warning("some other Beam warning")
    messages = [r.getMessage() for r in caplog.records if r.name == "apache_beam.io.filesystems"]
    assert messages == ["some other Beam warning"]
    sf.create_env()  # a second environment adds no second filter
    assert sum(type(f).__name__ == "_DropBeamGcsWarning" for f in logger.filters) == 1
