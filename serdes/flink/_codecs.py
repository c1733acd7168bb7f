"""Picklable *recipes* for the registry serializers used inside Flink workers.

A job graph is pickled and shipped to the Python workers; a ``SchemaRegistryClient`` (HTTP
pool, locks, caches) must not be.  :class:`SerdeSpec` records the format, the registry
configuration and the constructor arguments; :meth:`SerdeSpec.create` builds the registry
client and the serializer in the worker, from ``open()``, once per worker.

Implementation choice (``impl``):

* ``"serdes"``   - serdes' own drop-in classes (``serdes.avro.AvroSerializer``...);
* ``"confluent"`` - confluent-kafka's ``confluent_kafka.schema_registry.*`` classes;
* ``"auto"``     - serdes' when importable, else confluent-kafka's (default).

Both take the same constructor arguments and are called as ``(data, ctx)``.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Optional, Tuple

_CLASSES = {
    # (format, role) -> (serdes module, confluent module, class name)
    ("avro", "ser"): ("serdes.avro", "confluent_kafka.schema_registry.avro", "AvroSerializer"),
    ("avro", "de"): ("serdes.avro", "confluent_kafka.schema_registry.avro", "AvroDeserializer"),
    ("protobuf", "ser"): ("serdes.protobuf", "confluent_kafka.schema_registry.protobuf", "ProtobufSerializer"),
    ("protobuf", "de"): ("serdes.protobuf", "confluent_kafka.schema_registry.protobuf", "ProtobufDeserializer"),
    ("json", "ser"): ("serdes.json", "confluent_kafka.schema_registry.json_schema", "JSONSerializer"),
    ("json", "de"): ("serdes.json", "confluent_kafka.schema_registry.json_schema", "JSONDeserializer"),
}


def resolve_class(fmt: str, role: str, impl: str = "auto") -> type:
    """The serializer/deserializer class for ``fmt`` ("avro"/"protobuf"/"json")."""
    ours, theirs, name = _CLASSES[(fmt, role)]
    if impl in ("auto", "serdes"):
        try:
            cls: type = getattr(importlib.import_module(ours), name)
            return cls
        except (ImportError, AttributeError):
            if impl == "serdes":
                raise
    fallback: type = getattr(importlib.import_module(theirs), name)
    return fallback


#: confluent-kafka's SchemaRegistryClient has no request timeout by default; a registry that
#: never answers would stall the Flink operator (and with it the job) forever.
DEFAULT_REGISTRY_TIMEOUT = 30


def _registry_conf(registry: Any) -> Dict[str, Any]:
    if isinstance(registry, str):
        conf: Dict[str, Any] = {"url": registry}
    elif isinstance(registry, dict):
        conf = dict(registry)
    else:
        raise TypeError("registry must be a URL string or a SchemaRegistryClient config dict")
    conf.setdefault("timeout", DEFAULT_REGISTRY_TIMEOUT)
    return conf


class SerdeSpec:
    """How to build one serializer or deserializer in a worker.

    Use the constructors :func:`avro`, :func:`protobuf`, :func:`json_schema` (deserializers)
    and :func:`avro_serializer`, :func:`protobuf_serializer`, :func:`json_serializer`.
    """

    def __init__(
        self,
        fmt: str,
        role: str,
        registry: Any,
        kwargs: Dict[str, Any],
        impl: str = "auto",
        factory: Optional[Callable[..., Any]] = None,
    ) -> None:
        if (fmt, role) not in _CLASSES:
            raise ValueError(f"unknown format {fmt!r}")
        self.format = fmt
        self.role = role
        self.registry_conf = _registry_conf(registry) if registry is not None else None
        self.kwargs = kwargs
        self.impl = impl
        self.factory = factory

    def __repr__(self) -> str:
        return f"SerdeSpec({self.format!r}, {self.role!r}, impl={self.impl!r})"

    def create(self, client: Any = None) -> Callable[[Any, Any], Any]:
        """Build the ``(data, ctx)`` callable; call in ``open()`` (never pickled)."""
        if client is None and self.registry_conf is not None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            client = SchemaRegistryClient(self.registry_conf)
        serde: Callable[[Any, Any], Any]
        if self.factory is not None:
            serde = self.factory(client, **self.kwargs)
            return serde
        cls = resolve_class(self.format, self.role, self.impl)
        kw = dict(self.kwargs)
        if self.format == "avro":
            serde = cls(client, **kw)
        elif self.format == "protobuf":
            msg = kw.pop("message_type")
            if self.role == "ser":
                serde = cls(msg, client, **kw)
            else:
                serde = cls(msg, schema_registry_client=client, **kw)
        else:  # json
            schema_str = kw.pop("schema_str", None)
            if self.role == "ser":
                serde = cls(schema_str, client, **kw)
            else:
                serde = cls(schema_str, schema_registry_client=client, **kw)
        return serde


# -- deserializers -----------------------------------------------------------------------------


def avro(registry: Any, schema_str: Optional[str] = None, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    """Avro deserializer recipe (``from_dict``, ``return_record_name``, ``conf`` pass through)."""
    if schema_str is not None:
        kwargs["schema_str"] = schema_str
    return SerdeSpec("avro", "de", registry, kwargs, impl)


def protobuf(message_type: type, registry: Any = None, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    """Protobuf deserializer recipe for a generated message class."""
    kwargs["message_type"] = message_type
    kwargs.setdefault("conf", {"use.deprecated.format": False})
    return SerdeSpec("protobuf", "de", registry, kwargs, impl)


def json_schema(registry: Any, schema_str: Any = None, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    """JSON Schema deserializer recipe."""
    kwargs["schema_str"] = schema_str
    return SerdeSpec("json", "de", registry, kwargs, impl)


# -- serializers -------------------------------------------------------------------------------


def avro_serializer(registry: Any, schema_str: str, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    kwargs["schema_str"] = schema_str
    return SerdeSpec("avro", "ser", registry, kwargs, impl)


def protobuf_serializer(message_type: type, registry: Any, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    kwargs["message_type"] = message_type
    return SerdeSpec("protobuf", "ser", registry, kwargs, impl)


def json_serializer(registry: Any, schema_str: Any, impl: str = "auto", **kwargs: Any) -> SerdeSpec:
    kwargs["schema_str"] = schema_str
    return SerdeSpec("json", "ser", registry, kwargs, impl)


def custom(fmt: str, role: str, factory: Callable[..., Any], registry: Any = None, **kwargs: Any) -> SerdeSpec:
    """A recipe calling ``factory(registry_client, **kwargs)`` in the worker."""
    return SerdeSpec(fmt, role, registry, kwargs, factory=factory)


# -- in the worker -----------------------------------------------------------------------------


def create_in_worker(value: SerdeSpec, key: Optional[SerdeSpec]) -> Tuple[Callable[[Any, Any], Any],
                                                                        Optional[Callable[[Any, Any], Any]]]:
    """The value and key serdes of an operator, built in its ``open()`` (never pickled with the job);
    the key shares the value's registry client when both name the same registry."""
    client = None
    if value.registry_conf is not None:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        client = SchemaRegistryClient(value.registry_conf)
    value_serde = value.create(client)
    key_serde = None
    if key is not None:
        key_serde = key.create(client if key.registry_conf == value.registry_conf else None)
    return value_serde, key_serde
