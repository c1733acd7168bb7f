"""The one seam to confluent-kafka's private API.

serdes' drop-in classes subclass confluent-kafka's serdes, and its fast path needs configuration
that confluent-kafka keeps in private attributes (``_use_latest_version``, ``_subject_name_func``,
...) and private methods (``_get_reader_schema``). This module is the only place that names them.
Each is read once, by name, at the end of a serde's construction, with no default: an attribute a
confluent-kafka release renamed or dropped fails the construction with
:class:`ConfluentAPIError` naming the attribute and the installed confluent-kafka version, instead
of silently switching a feature off (``use.latest.version`` ignored on the fast path, say).

What the rest of serdes sees is small and typed: :class:`SerdeConfig`, a frozen snapshot taken at
construction, and the functions below for the private methods and modules. Nothing here runs per
record: the fast path reads plain attributes of the snapshot.

pyproject.toml allows confluent-kafka ``>=2.12,<3``. A name that a release inside that range lacks
is listed in :data:`ATTRIBUTE_SINCE` with the first release that has it, and the value serdes uses
before it (what confluent-kafka's behaviour then is: no lock, no option); a feature that cannot work
without a newer release (the builders, ``confluent_kafka.aio.AsyncDeserializingConsumer``, the remote
``$ref`` guard) fails its construction with :class:`ConfluentVersionError` naming that release
(:data:`FEATURE_SINCE`). Nothing here handles a release below 2.12.

The fast path's shared configuration lives in :class:`SerdeConfig`. The format-specific attributes
(:data:`FORMAT_ATTRIBUTES`: Avro's ``_parsed_schema``, ``_to_dict``, ``_strict``, JSON's
``_validators_lock``, ...) are checked here at construction too, so a missing one fails there;
the format modules then read them as attributes of their own instance.

The registry client (``_registry``) is checked at construction but read live: confluent-kafka's
own delegated call reads it live too, and a user may swap the client of a running serde.

No other module of serdes names a confluent-kafka private attribute, not even on ``self`` of a
class that subclasses confluent-kafka's: it calls the accessors below (``registry_of``,
``own_parsed_schema``, ...), each of which says which attribute it reads and why serdes needs it.
tests/unit/test_confluent_seam.py enforces this over serdes' source.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._cache import trim
from ._errors import ConfluentAPIError, ConfluentVersionError

__all__ = [
    "ConfluentAPIError",
    "ConfluentVersionError",
    "ATTRIBUTE_SINCE",
    "FEATURE_SINCE",
    "at_least",
    "require_release",
    "newer_class",
    "SerdeConfig",
    "confluent_version",
    "snapshot",
    "require",
    "get_reader_schema",
    "get_parsed_schema",
    "trim_parsed_schemas",
    "registry_of",
    "parsed_schema_cache",
    "own_schema",
    "own_parsed_schema",
    "reader_schema",
    "json_ref_registry",
    "to_dict",
    "from_dict",
    "avro_raw_bytes",
    "avro_strictness",
    "avro_return_record_name",
    "json_validates",
    "json_encoder",
    "json_decoder",
    "json_validators",
    "message_class",
    "set_message_class",
    "message_indexes",
    "resolve_dependencies",
    "consumer_deserializers",
    "httpx_module",
    "guard_external_uri",
    "json_dumps",
    "json_loads",
    "failed_response",
    "avro_schema_loads",
    "avro_parse_schema_with_repo",
]


def confluent_version() -> str:
    """The installed confluent-kafka (Python client) version, e.g. ``"2.16.1"``."""
    return importlib.metadata.version("confluent-kafka")


def _release(version: str) -> Tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@functools.lru_cache(maxsize=None)
def _installed_release() -> Tuple[int, int]:
    return _release(confluent_version())  # an installed distribution does not change under a process


def at_least(release: str) -> bool:
    """The installed confluent-kafka is ``release`` (``"2.16"``) or newer."""
    return _installed_release() >= _release(release)


#: the features of serdes that need a newer confluent-kafka than the range's oldest (2.12), with the
#: first release that has what they build on (docs/conformance.md, "confluent-kafka releases")
FEATURE_SINCE: Dict[str, str] = {
    # confluent_kafka.serialization.SerializerBuilder / DeserializerBuilder, _sync.serde.build_serde
    "builders": "2.16",
    # confluent_kafka.aio.AsyncDeserializingConsumer (2.13-2.15 have AIOConsumer only)
    "async consumer": "2.16",
    # common.json_schema._guard_external_uri: remote $ref targets checked for a public address
    "remote refs": "2.16",
    # BaseSerde.set_cluster_id_resolver / set_async_cluster_id_resolver (the associated subject
    # name strategy's Kafka cluster id)
    "cluster id resolver": "2.16",
}


def require_release(feature: str, release: str) -> None:
    """Raise :class:`ConfluentVersionError` for ``feature`` unless confluent-kafka ``release`` or
    newer is installed. Called at construction only."""
    if not at_least(release):
        raise ConfluentVersionError(feature, release)


def newer_class(module: str, name: str, release: str, feature: str) -> type:
    """confluent-kafka's class ``module.name`` (first in ``release``), or on an older release a
    stand-in base of that name whose construction raises :class:`ConfluentVersionError` for
    ``feature``: serdes' subclass still imports, and fails when it is built, never mid-stream."""
    if at_least(release):
        return require(importlib.import_module(module), name)  # type: ignore[no-any-return]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise ConfluentVersionError(feature, release)

    doc = f"Stands in for confluent-kafka's {module}.{name} (confluent-kafka {release}+): construction raises."
    return type(name, (), {"__init__": __init__, "__doc__": doc, "__module__": __name__})



def builder_bases(module: str, kind: str, package: str) -> Tuple[type, type, type, type]:
    """confluent-kafka's four builder classes of one format (``<kind>SerializerBuilder``,
    ``<kind>DeserializerBuilder`` and their ``Async`` forms in ``module``), each through
    :func:`newer_class`: on a release before the builders, stand-ins naming serdes' class in
    ``package`` and the release that added them."""
    names = (f"{kind}SerializerBuilder", f"{kind}DeserializerBuilder",
             f"Async{kind}SerializerBuilder", f"Async{kind}DeserializerBuilder")
    a, b, c, d = (newer_class(module, n, FEATURE_SINCE["builders"], f"{package}.{n}") for n in names)
    return a, b, c, d


_SENTINEL = object()


def require(obj: Any, name: str) -> Any:
    """``obj.<name>``, read by name; :class:`ConfluentAPIError` if it is missing."""
    value = getattr(obj, name, _SENTINEL)
    if value is not _SENTINEL:
        return value
    owner = obj.__name__ if isinstance(obj, (type, ModuleType)) else type(obj).__name__
    raise ConfluentAPIError(name, owner)


# -- per-instance configuration -------------------------------------------------------------------

#: the private attributes each kind of serde reads (beyond the common ones of SerdeConfig)
_COMMON_SERIALIZER = ("_schema_id_serializer", "_auto_register", "_normalize_schemas", "_use_schema_id", "_schema")
_COMMON_DESERIALIZER = ("_schema_id_deserializer", "_use_schema_id")
FORMAT_ATTRIBUTES: Dict[str, Tuple[str, ...]] = {
    "avro.serializer": _COMMON_SERIALIZER + (
        "_schema_name", "_parsed_schema", "_to_dict", "_strict", "_strict_allow_default", "_parsed_schemas",
    ),
    "avro.deserializer": _COMMON_DESERIALIZER + (
        "_reader_schema", "_from_dict", "_return_record_name", "_parsed_schemas",
    ),
    "json.serializer": _COMMON_SERIALIZER + (
        "_schema_name", "_parsed_schema", "_ref_registry", "_to_dict", "_json_encode", "_validate",
        "_validators", "_validators_lock", "_parsed_schemas",
    ),
    "json.deserializer": _COMMON_DESERIALIZER + (
        "_schema", "_reader_schema", "_ref_registry", "_from_dict", "_json_decode", "_validate",
        "_validators", "_validators_lock", "_parsed_schemas",
    ),
    "protobuf.serializer": _COMMON_SERIALIZER + ("_msg_class", "_index_array", "_resolve_dependencies"),
    "protobuf.deserializer": _COMMON_DESERIALIZER + ("_msg_class",),
}


@dataclass(frozen=True)
class SerdeConfig:
    """What serdes' fast path needs of a confluent-kafka serde's configuration, read once at the
    end of its construction. Fields that apply to serializers only are ``None`` on deserializers."""

    kind: str
    subject_name_func: Callable[..., Any]
    #: the strategy takes ``(ctx, record_name, client, conf)`` (associated / registry-backed ones)
    strategy_accepts_client: bool
    subject_name_conf: Any
    use_latest_version: bool
    use_latest_with_metadata: Optional[Dict[str, str]]
    use_schema_id: Optional[int]
    validation_rules_execution: Any
    schema_id_serializer: Optional[Callable[..., Any]] = None
    schema_id_deserializer: Optional[Callable[..., Any]] = None
    auto_register: Optional[bool] = None
    normalize_schemas: Optional[bool] = None
    schema: Any = None
    schema_name: Optional[str] = None

    @property
    def uses_rules(self) -> bool:
        """Inline validation rules are configured (``validation.rules.execution`` not DISABLED)."""
        return self.validation_rules_execution not in ("DISABLED", None)

    @property
    def subject_keyed(self) -> bool:
        """The reader schema depends on the subject (``use.latest.version`` and friends)."""
        return bool(self.use_latest_version or self.use_latest_with_metadata or self.use_schema_id is not None)


#: private attributes a release inside the range (>= 2.12) lacks: the first release that sets it,
#: and what serdes reads on an older one (the behaviour confluent-kafka then has)
ATTRIBUTE_SINCE: Dict[str, Tuple[str, Any]] = {
    # the associated subject name strategy (2.14): before it every strategy is (ctx, record_name)
    "_strategy_accepts_client": ("2.14", False),
    "_subject_name_conf": ("2.14", None),
    # inline validation rules (validation.rules.execution, 2.16): none before
    "_validation_rules_execution": ("2.16", "DISABLED"),
    # validate.strict and validate.strict.allow.default (2.13): the options do not exist before
    "_strict": ("2.13", False),
    "_strict_allow_default": ("2.13", False),
    # the JSON serdes' validator-cache lock (2.13): see json_validators
    "_validators_lock": ("2.13", None),
}


def require_since(obj: Any, name: str) -> Any:
    """:func:`require`, except that an attribute of :data:`ATTRIBUTE_SINCE` on a release before the
    one that introduced it reads as its documented stand-in value."""
    since = ATTRIBUTE_SINCE.get(name)
    if since is not None and not at_least(since[0]):
        return since[1]
    return require(obj, name)


def snapshot(serde: Any, kind: str) -> SerdeConfig:
    """Check every private attribute ``kind`` (a key of :data:`FORMAT_ATTRIBUTES`) reads on
    ``serde`` and return the configuration snapshot. Raises :class:`ConfluentAPIError`."""
    names = FORMAT_ATTRIBUTES[kind]
    for name in names + ("_registry", "_get_reader_schema"):
        require_since(serde, name)
    if kind.startswith("json.") and not at_least(ATTRIBUTE_SINCE["_validators_lock"][0]):
        # 2.12 keeps its validator cache without a lock; serdes'
        # _get_validator, which replaces confluent-kafka's on both call paths, takes this one
        serde._validators_lock = threading.Lock()
    is_ser = kind.endswith(".serializer")
    return SerdeConfig(
        kind=kind,
        subject_name_func=require(serde, "_subject_name_func"),
        strategy_accepts_client=bool(require_since(serde, "_strategy_accepts_client")),
        subject_name_conf=require_since(serde, "_subject_name_conf"),
        use_latest_version=bool(require(serde, "_use_latest_version")),
        use_latest_with_metadata=require(serde, "_use_latest_with_metadata"),
        use_schema_id=require(serde, "_use_schema_id"),
        # confluent-kafka runs inline validation rules in serializers only (its deserializers never
        # set the attribute): a deserializer's is DISABLED, as confluent-kafka behaves
        validation_rules_execution=require_since(serde, "_validation_rules_execution") if is_ser else "DISABLED",
        schema_id_serializer=require(serde, "_schema_id_serializer") if is_ser else None,
        schema_id_deserializer=None if is_ser else require(serde, "_schema_id_deserializer"),
        auto_register=bool(require(serde, "_auto_register")) if is_ser else None,
        normalize_schemas=bool(require(serde, "_normalize_schemas")) if is_ser else None,
        schema=require(serde, "_schema") if is_ser else None,
        schema_name=require(serde, "_schema_name") if "_schema_name" in names else None,
    )


def replace(config: SerdeConfig, **changes: Any) -> SerdeConfig:
    """A copy of ``config`` with ``changes`` (for a subclass that adjusts its own snapshot)."""
    return dataclasses.replace(config, **changes)


# -- private methods ------------------------------------------------------------------------------


def get_reader_schema(serde: Any, subject: str, fmt: Optional[str] = None) -> Any:
    """confluent-kafka's ``BaseSerde._get_reader_schema``: the registered schema ``use.schema.id``
    / ``use.latest.version`` / ``use.latest.with.metadata`` select for ``subject`` (or ``None``)."""
    if fmt is None:
        return serde._get_reader_schema(subject)
    return serde._get_reader_schema(subject, fmt)


def get_parsed_schema(serde: Any, schema: Any) -> Any:
    """The format class's ``_get_parsed_schema`` (serdes' override of confluent-kafka's: Avro's
    and JSON's resolve references within serdes' limits)."""
    return serde._get_parsed_schema(schema)


def trim_parsed_schemas(serde: Any, bound: int) -> None:
    """Keep confluent-kafka's per-instance parsed-schema cache (``_parsed_schemas``, a
    ``ParsedSchemaCache`` that never forgets) at ``bound`` schemas, the oldest dropped first. Called
    on serdes' miss path, the only place that adds to it; a serde without one is left alone."""
    cache = getattr(serde, "_parsed_schemas", None)
    parsed = getattr(cache, "parsed_schemas", None)
    if isinstance(parsed, dict) and len(parsed) > bound:
        with cache.lock:  # type: ignore[union-attr]
            trim(parsed, bound)


# -- per-instance state, read live ---------------------------------------------------------------
# Each is checked at construction (snapshot() / FORMAT_ATTRIBUTES); none is read per record, only on
# a cache miss (building a decoder or encoder) or once per batch.


def registry_of(serde: Any) -> Any:
    """``_registry``: the serde's schema registry client (``None`` when it was built without one).
    Read live: confluent-kafka's delegated call reads it live, and a user may swap it."""
    return serde._registry


def parsed_schema_cache(serde: Any) -> Any:
    """``_parsed_schemas``: confluent-kafka's per-instance ``ParsedSchemaCache``. serdes' overrides
    of ``_get_parsed_schema`` (Avro, JSON) keep their results there, where confluent-kafka's own
    call path looks for them."""
    return serde._parsed_schemas


def own_schema(serde: Any) -> Any:
    """``_schema``: the ``Schema`` the serde was constructed with (a serializer's schema to register;
    Protobuf's, built from the message class, which confluent-kafka replaces by the registry's
    with ``use.latest.version``; a JSON deserializer's ``schema_str``), or ``None``."""
    return serde._schema


def own_parsed_schema(serde: Any) -> Any:
    """``_parsed_schema``: an Avro or JSON serializer's own schema as confluent-kafka parsed it at
    construction (fastavro's parsed schema; JSON's dict), the schema records are written with when
    the registry does not choose another."""
    return serde._parsed_schema


def reader_schema(serde: Any) -> Any:
    """``_reader_schema``: an Avro or JSON deserializer's ``schema_str`` as confluent-kafka parsed it
    at construction (``None`` without one), the reader schema when the registry chooses none."""
    return serde._reader_schema


def json_ref_registry(serde: Any) -> Any:
    """``_ref_registry``: the ``referencing.Registry`` confluent-kafka's JSON serde built at
    construction for its own schema's references (through serdes' ``_get_parsed_schema``)."""
    return serde._ref_registry


def to_dict(serde: Any) -> Any:
    """``_to_dict``: a serializer's user ``to_dict`` callable (or ``None``)."""
    return serde._to_dict


def from_dict(serde: Any) -> Any:
    """``_from_dict``: a deserializer's user ``from_dict`` callable (or ``None``)."""
    return serde._from_dict


def avro_raw_bytes() -> bool:
    """confluent-kafka writes and reads an Avro schema of type ``"bytes"`` as the raw payload (no
    length): 2.13+. 2.12 encodes it as Avro ``bytes`` (a zigzag length first), as any other schema."""
    return at_least("2.13")


def avro_strictness(serde: Any) -> Tuple[bool, bool]:
    """``_strict``, ``_strict_allow_default``: an Avro serializer's ``validate.strict`` and
    ``validate.strict.allow.default``, which serdes' encoders apply as fastavro would."""
    return bool(require_since(serde, "_strict")), bool(require_since(serde, "_strict_allow_default"))


def avro_return_record_name(serde: Any) -> bool:
    """``_return_record_name``: an Avro deserializer's ``return_record_name`` (union branches as
    ``(name, value)`` tuples)."""
    return bool(serde._return_record_name)


def json_validates(serde: Any) -> bool:
    """``_validate``: a JSON serde's ``validate`` setting (check each value against its schema)."""
    return bool(serde._validate)


def json_encoder(serde: Any) -> Any:
    """``_json_encode``: a JSON serializer's user ``json_encode``, or ``None`` for confluent-kafka's
    default (compact orjson output), which serdes replaces by its own faster codec."""
    encode = serde._json_encode
    if at_least("2.15"):
        return None if encode is json_dumps() else encode
    # 2.12-2.14: the default is a lambda (orjson.dumps(x).decode()) made in confluent-kafka's
    # JSONSerializer / AsyncJSONSerializer constructor, one per instance: known by where it was made
    code = getattr(encode, "__code__", None)
    if code is not None and code.co_name == "<lambda>" and code.co_filename in _confluent_json_sources():
        return None
    return encode


def _confluent_json_sources() -> Tuple[str, ...]:
    from confluent_kafka.schema_registry._async import json_schema as async_json
    from confluent_kafka.schema_registry._sync import json_schema as sync_json

    return tuple(str(m.__file__) for m in (sync_json, async_json))


def json_decoder(serde: Any) -> Any:
    """``_json_decode``: a JSON deserializer's decoder (the user's ``json_decode``, or
    confluent-kafka's default, :func:`json_loads`)."""
    return serde._json_decode


def json_validators(serde: Any) -> Tuple[Any, Any]:
    """``_validators``, ``_validators_lock``: a JSON serde's validator cache and its lock. serdes'
    ``_get_validator`` (which replaces confluent-kafka's on both call paths) keeps its compiled
    validators there, under confluent-kafka's lock."""
    # 2.12 has no _validators_lock: snapshot() gave the serde one at construction
    return serde._validators, serde._validators_lock


def message_class(serde: Any) -> Any:
    """``_msg_class``: a Protobuf serde's generated message class (``None`` on a dynamic
    deserializer, whose class depends on the writer schema)."""
    return serde._msg_class


def set_message_class(serde: Any, cls: Any) -> None:
    """Set ``_msg_class``, the class confluent-kafka's Protobuf deserializer decodes into: a dynamic
    deserializer points a copy of itself at the writer's class before delegating a record."""
    serde._msg_class = cls


def message_indexes(serde: Any) -> List[int]:
    """``_index_array``: a Protobuf serializer's message indexes (the path of its message class
    within its file), written into every frame."""
    return list(serde._index_array)


def resolve_dependencies(serde: Any, ctx: Any, file_desc: Any) -> Any:
    """confluent-kafka's ``ProtobufSerializer._resolve_dependencies``: registers (or looks up) the
    imports of ``file_desc`` and returns their ``SchemaReference`` list, as confluent-kafka does
    before it registers a schema."""
    return serde._resolve_dependencies(ctx, file_desc)


def consumer_deserializers(consumer: Any) -> Tuple[Any, Any]:
    """``_key_deserializer``, ``_value_deserializer``: the deserializers a (sync or asyncio)
    ``DeserializingConsumer`` was configured with; serdes' ``consume`` applies them to a batch (read
    per batch, by name: a consumer has no construction step of serdes' to check them in)."""
    return require(consumer, "_key_deserializer"), require(consumer, "_value_deserializer")


# -- the registry client's REST layer -------------------------------------------------------------


def rest_client(registry: Any) -> Optional[Any]:
    """The ``_RestClient`` behind confluent-kafka's (sync) ``SchemaRegistryClient``: auth, TLS,
    retries and fail-over across its URLs, without the client's caches. ``None`` for anything else
    (another client class, or a ``mock://`` client, which answers from memory)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    if type(registry) is not SchemaRegistryClient:
        return None
    rest = require(registry, "_rest_client")
    urls = require(rest, "base_urls")
    if not urls or not all(str(u).startswith(("http://", "https://")) for u in urls):
        return None
    return rest


def registry_urls(rest: Any) -> Tuple[str, ...]:
    """The base URLs a ``_RestClient`` (from :func:`rest_client`) sends to."""
    return tuple(str(u) for u in require(rest, "base_urls"))


def rest_get(rest: Any, path: str, query: Optional[Dict[str, Any]] = None) -> Any:
    """``GET path`` through a ``_RestClient``: the decoded JSON answer, or the client's
    ``SchemaRegistryError`` / transport error (typed by :func:`serdes._registry.registry_call`)."""
    return require(rest, "get")(path, query)


def failed_response(e: BaseException, limit: int = 300) -> Optional[Tuple[str, str]]:
    """The URL and the start of the body (``limit`` characters) of the HTTP answer confluent-kafka's
    registry client raised ``e`` (its ``SchemaRegistryError``) for, or ``None``.

    The client keeps neither on the error (a 404 whose JSON has no ``error_code`` becomes
    ``SchemaRegistryError(404, None, None)``); they are the ``response`` local of the client's
    ``send_request``, the frame that raised it, and only ever read for an error message: nothing
    fails when a release renames the local, the message is then shorter.
    """
    tb = e.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    response = tb.tb_frame.f_locals.get("response")
    url = getattr(response, "url", None)
    try:
        text = response.text if url is not None else None  # type: ignore[union-attr]
    except Exception:  # an undecodable body: the URL alone still helps
        text = ""
    if url is None or not isinstance(text, str):
        return None
    return str(url), text[:limit]


# -- private modules ------------------------------------------------------------------------------


def httpx_module() -> ModuleType:
    """The httpx (or successor) module confluent-kafka's registry client talks through."""
    if not at_least("2.16"):
        # 2.12-2.15 import httpx itself (2.16 added common._httpx_compat to pick httpx or a successor)
        import httpx

        return httpx
    from confluent_kafka.schema_registry.common import _httpx_compat

    return require(_httpx_compat, "httpx")  # type: ignore[no-any-return]


def guard_external_uri(uri: str) -> None:
    """confluent-kafka's check that a remote ``$ref`` URI points at a public address (raises
    ``ValueError``). 2.16+; serdes' JSON serdes refuse ``serdes.allow.remote.refs`` at construction
    on an older release (:data:`FEATURE_SINCE`), so this is never reached there."""
    from confluent_kafka.schema_registry.common import json_schema

    require(json_schema, "_guard_external_uri")(uri)


def _json_schema_module() -> ModuleType:
    from confluent_kafka.schema_registry.common import json_schema

    return json_schema


def json_dumps() -> Callable[[Any], str]:
    """confluent-kafka's default JSON Schema encoder (``json_encode`` when none is given), 2.15+
    (:func:`json_encoder` tells the default apart on every release)."""
    return require(_json_schema_module(), "_json_dumps")  # type: ignore[no-any-return]


def json_loads() -> Callable[[Any], Any]:
    """confluent-kafka's default JSON decoder (``json_decode`` when none is given, and the parser
    of registry schema strings); serdes compares a user's ``json_decode`` with it by identity."""
    if not at_least("2.15"):
        # 2.12-2.14 default json_decode to orjson.loads itself (2.15 added _json_loads, with a
        # stdlib fallback for a missing orjson)
        import orjson

        return orjson.loads
    return require(_json_schema_module(), "_json_loads")  # type: ignore[no-any-return]


def avro_schema_loads(schema_str: str) -> Any:
    """confluent-kafka's ``common.avro._schema_loads``: an Avro schema string as the ``Schema``
    its ``_get_parsed_schema`` parses (a primitive declaration wrapped in ``{"type": ...}``)."""
    from confluent_kafka.schema_registry.common import avro

    return require(avro, "_schema_loads")(schema_str)


def avro_parse_schema_with_repo(schema_str: str, named_schemas: Dict[str, Any]) -> Any:
    """confluent-kafka's ``parse_schema_with_repo``: ``schema_str`` parsed by fastavro with the
    named schemas of its references."""
    from confluent_kafka.schema_registry.common import avro

    return require(avro, "parse_schema_with_repo")(schema_str, named_schemas)


# -- builders -------------------------------------------------------------------------------------


def builder_fields(builder: Any, *names: str) -> Tuple[Any, ...]:
    """The private fields of a confluent-kafka ``*SerializerBuilder`` / ``*DeserializerBuilder``
    (``_schema_str``, ``_serializer_conf``, ...) that serdes' ``build`` passes on, by name."""
    return tuple(require(builder, name) for name in names)


def build_serde(builder: Any, construct: Callable[[Any], Any], init: Optional[Callable[[Any], None]]) -> Any:
    """confluent-kafka's ``_sync.serde.build_serde`` for ``builder``'s registry client / conf."""
    from confluent_kafka.schema_registry._sync import serde

    client, conf = builder_fields(builder, "_schema_registry_client", "_schema_registry_conf")
    return require(serde, "build_serde")(client, conf, construct, init)


async def async_build_serde(builder: Any, construct: Callable[[Any], Any], init: Any) -> Any:
    """confluent-kafka's ``_async.serde.async_build_serde`` (the async counterpart)."""
    from confluent_kafka.schema_registry._async import serde

    client, conf = builder_fields(builder, "_schema_registry_client", "_schema_registry_conf")
    return await require(serde, "async_build_serde")(client, conf, construct, init)
