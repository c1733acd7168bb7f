"""Builders: confluent-kafka's ``*SerializerBuilder`` / ``*DeserializerBuilder`` producing serdes' classes.

Each serdes builder subclasses confluent-kafka's builder of the same name, so the constructor,
the chaining ``set_*`` setters and what a ``SerializingProducer`` / ``DeserializingConsumer``
(``value.serializer.builder``, ...) expects are confluent-kafka's. Only ``build`` differs: it
constructs serdes' class, through confluent-kafka's own ``build_serde`` / ``async_build_serde``
(client creation from ``schema_registry_config``, client ownership, the ``*_init`` callback and
cleanup on failure are theirs).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from ._confluent import async_build_serde, build_serde

__all__ = ["build_with", "async_build_with"]


def build_with(
    builder: Any, construct: Callable[[Any], Any], init: Optional[Callable[[Any], None]], conf: Dict[str, Any]
) -> Tuple[Any, Dict[str, Any]]:
    """``builder.build``'s result: ``construct(client)`` built as confluent-kafka builds its serdes."""
    serde = build_serde(builder, construct, init)
    return serde, dict(conf)


async def async_build_with(
    builder: Any, construct: Callable[[Any], Any], init: Any, conf: Dict[str, Any]
) -> Tuple[Any, Dict[str, Any]]:
    """The async counterpart of :func:`build_with` (``construct`` returns an awaitable)."""
    serde = await async_build_serde(builder, construct, init)
    return serde, dict(conf)
