"""serdes.* limit configuration keys: parsed, validated, removed before confluent-kafka sees the conf."""

import pytest

from serdes import ConfluentVersionError
from serdes._confluent import at_least
from serdes._limits import DEFAULT_LIMITS, Limits, split_limits_conf


def test_defaults_round_trip_through_conf():
    rest, limits = split_limits_conf(DEFAULT_LIMITS.conf)
    assert rest == {} and limits == DEFAULT_LIMITS


def test_serdes_keys_are_split_off_and_parsed():
    rest, limits = split_limits_conf({"auto.register.schemas": False, "serdes.max.depth": 7, "serdes.regex.timeout": 1})
    assert rest == {"auto.register.schemas": False}
    assert limits == Limits(max_depth=7, regex_timeout=1.0)


def test_none_conf_keeps_the_base():
    base = Limits(max_items=5)
    assert split_limits_conf(None, base) == (None, base)


@pytest.mark.parametrize(
    "conf",
    [{"serdes.max.dept": 1}, {"serdes.max.depth": 0}, {"serdes.max.depth": -3}, {"serdes.max.depth": 2.5},
     {"serdes.max.depth": True}, {"serdes.max.items": "10"}, {"serdes.regex.timeout": 0},
     {"serdes.max.references": 0}, {"serdes.allow.remote.refs": 1}, {"serdes.allow.remote.refs": "yes"}],
)
def test_bad_keys_and_values_raise_value_error(conf):
    with pytest.raises(ValueError, match="serdes"):
        split_limits_conf(conf)


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), ("true", True), (" FALSE", False)])
def test_switches_take_bools_and_their_strings(value, expected):
    rest, limits = split_limits_conf({"serdes.allow.remote.refs": value, "serdes.max.references": 3})
    assert rest == {} and limits.allow_remote_refs is expected and limits.max_references == 3


def test_remote_refs_are_off_by_default():
    assert DEFAULT_LIMITS.allow_remote_refs is False


def test_constructor_args_split_positional_and_keyword_conf():
    from serdes._limits import split_limits_args

    args, kwargs, limits = split_limits_args(("s", "client", None, {"serdes.max.depth": 4, "a": 1}), {}, 3)
    assert args == ("s", "client", None, {"a": 1}) and kwargs == {} and limits.max_depth == 4
    args, kwargs, limits = split_limits_args(("s",), {"conf": {"serdes.max.references": 2}}, 3)
    assert args == ("s",) and kwargs == {"conf": {}} and limits.max_references == 2
    assert split_limits_args(("s",), {}, 3) == (("s",), {}, DEFAULT_LIMITS)


def test_json_and_protobuf_serdes_take_serdes_keys():
    import uuid

    from confluent_kafka.schema_registry import SchemaRegistryClient

    from serdes.json import JSONDeserializer, JSONSerializer
    from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf import timestamp_pb2

    client = SchemaRegistryClient.new_client({"url": f"mock://limits-{uuid.uuid4().hex}"})
    conf = {"serdes.max.depth": 7, "serdes.allow.remote.refs": "true"}
    if at_least("2.16"):
        assert JSONSerializer('{"type": "object"}', client, None, dict(conf))._limits.max_depth == 7
        assert JSONDeserializer('{"type": "object"}', conf=dict(conf))._limits.allow_remote_refs is True
    else:  # the opt-in fetches through confluent-kafka 2.16's public-address guard: refused at construction
        for make in (lambda: JSONSerializer('{"type": "object"}', client, None, dict(conf)),
                     lambda: JSONDeserializer('{"type": "object"}', conf=dict(conf))):
            with pytest.raises(ConfluentVersionError, match=r"serdes\.allow\.remote\.refs needs confluent-kafka 2\.16") as info:
                make()
            assert info.value.required == "2.16"
        assert JSONSerializer('{"type": "object"}', client, None, {"serdes.max.depth": 7})._limits.max_depth == 7
    assert ProtobufSerializer(timestamp_pb2.Timestamp, client, dict(conf))._limits.max_depth == 7
    assert ProtobufDeserializer(None, dict(conf), client)._limits.max_depth == 7
    with pytest.raises(ValueError, match="serdes.max.dept"):
        JSONSerializer('{"type": "object"}', client, conf={"serdes.max.dept": 1})
