"""The ``serdes.*`` limit keys of an Avro serializer's or deserializer's ``conf`` argument."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .._limits import Limits, split_limits_conf

__all__ = ["limits_from_args"]


def limits_from_args(args: Tuple[Any, ...], kwargs: Dict[str, Any], conf_index: int) -> Tuple[Tuple[Any, ...], Dict[str, Any], Limits]:
    """Take the ``serdes.*`` keys out of the ``conf`` argument (positional ``conf_index`` or keyword),
    before confluent-kafka's constructor validates the conf. The caller's dict is not modified."""
    if len(args) > conf_index:
        rest, limits = split_limits_conf(args[conf_index])
        args = args[:conf_index] + (rest,) + args[conf_index + 1:]
    elif "conf" in kwargs:
        rest, limits = split_limits_conf(kwargs["conf"])
        kwargs = dict(kwargs, conf=rest)
    else:
        _, limits = split_limits_conf(None)
    return args, kwargs, limits
