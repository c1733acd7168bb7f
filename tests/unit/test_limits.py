"""serdes.* limit configuration keys: parsed, validated, removed before confluent-kafka sees the conf."""

import pytest

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
     {"serdes.max.depth": True}, {"serdes.max.items": "10"}, {"serdes.regex.timeout": 0}],
)
def test_bad_keys_and_values_raise_value_error(conf):
    with pytest.raises(ValueError, match="serdes"):
        split_limits_conf(conf)
