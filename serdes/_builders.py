"""Builders: confluent-kafka's ``*SerializerBuilder`` / ``*DeserializerBuilder`` producing serdes' classes.

Each serdes builder subclasses confluent-kafka's builder of the same name, so the constructor,
the chaining ``set_*`` setters and what a ``SerializingProducer`` / ``DeserializingConsumer``
(``value.serializer.builder``, ...) expects are confluent-kafka's. Only ``build`` differs: it
constructs serdes' class, through confluent-kafka's own ``build_serde`` / ``async_build_serde``
(client creation from ``schema_registry_config``, client ownership, the ``*_init`` callback and
cleanup on failure are theirs).

A format's builder is a declaration: :class:`SerdeBuilder` (or :class:`AsyncSerdeBuilder`) first
among its bases, the serdes class it builds as ``_serde`` and that class's constructor as a
:class:`Construction` of the builder's fields.
"""

from __future__ import annotations

from typing import Any, Callable, Coroutine, Dict, Generic, Mapping, NamedTuple, Tuple, TypeVar

from ._confluent import async_build_serde, build_serde, builder_fields

__all__ = ["CLIENT", "Construction", "SerdeBuilder", "AsyncSerdeBuilder"]

S = TypeVar("S")

#: stands in a :attr:`Construction.arguments` for the registry client ``build_serde`` makes or takes
CLIENT = "client"


class Construction(NamedTuple):
    """How a builder calls its serde's constructor, as confluent-kafka's builder of that name does."""

    #: the positional arguments, in order: the builder's private fields (``"_schema_str"``, ...) and
    #: :data:`CLIENT` for the registry client
    arguments: Tuple[str, ...]
    #: the field holding the ``serializer_init`` / ``deserializer_init`` callback
    init: str
    #: fields that must not be ``None`` when ``build`` is called, each with the ``ValueError``
    #: message confluent-kafka's builder raises for it
    required: Mapping[str, str] = {}


class _Builder(Generic[S]):
    #: the serdes class (sync or asyncio) ``build`` constructs
    _serde: Callable[..., S]
    _construction: Construction

    def _constructor(self) -> Tuple[Callable[[Any], S], Any]:
        """``(construct, init)`` for ``build_serde``: the fields are read now, when ``build`` is called."""
        construction = self._construction
        for field, message in construction.required.items():
            if builder_fields(self, field)[0] is None:
                raise ValueError(message)
        fields = [name for name in construction.arguments if name != CLIENT]
        values = dict(zip(fields, builder_fields(self, *fields), strict=True))
        init = builder_fields(self, construction.init)[0]
        serde = self._serde

        def construct(client: Any) -> S:
            return serde(*(client if name == CLIENT else values[name] for name in construction.arguments))

        return construct, init


class SerdeBuilder(_Builder[S]):
    """``build`` of the sync builders: serdes' class as confluent-kafka's ``build_serde`` builds its own."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Tuple[S, Dict[str, Any]]:
        construct, init = self._constructor()
        return build_serde(self, construct, init), dict(conf)


class AsyncSerdeBuilder(_Builder[S]):
    """``build`` of the asyncio builders: ``await build(conf, is_key)`` gives serdes' asyncio class."""

    def build(self, conf: Dict[str, Any], is_key: bool) -> Coroutine[Any, Any, Tuple[S, Dict[str, Any]]]:
        # not ``async def``: the fields are read (and a missing required one refused) at the call
        construct, init = self._constructor()
        return self._build(construct, init, conf)

    async def _build(self, construct: Callable[[Any], Any], init: Any, conf: Dict[str, Any]) -> Tuple[S, Dict[str, Any]]:
        serde: S = await async_build_serde(self, construct, init)
        return serde, dict(conf)
