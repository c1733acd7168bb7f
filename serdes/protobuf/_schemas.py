"""Registry Protobuf schemas -> descriptors, without generated code.

A Protobuf schema in the registry is one ``.proto`` file plus references (each a subject/version
holding another file, named by its import path). This module fetches a writer schema and its
references, turns each into a ``FileDescriptorProto``, builds a private ``DescriptorPool`` and
selects messages by Confluent message indexes.

Schema text comes in three shapes, all accepted:

* base64 of a serialized ``FileDescriptorProto`` -- what Confluent Schema Registry returns for
  ``?format=serialized`` and what confluent-kafka's Python serializer registers (Apicurio stores
  and returns it verbatim);
* ``.proto`` source -- what Confluent Schema Registry returns without ``format`` and what Java
  clients register; parsed by :mod:`serdes.protobuf._proto_text`;
* the raw serialized bytes as a JSON string -- what Apicurio 3 returns for ``?format=serialized``
  of a schema registered as ``.proto`` text (a registry quirk; used only when it parses cleanly).

Well-known imports (``google/protobuf/*.proto``, ``google/type/*.proto``, ``confluent/*.proto``)
resolve from the protobuf runtime's default pool when no reference provides them.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple
from urllib.parse import quote

from confluent_kafka.schema_registry import RegisteredSchema, Schema
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError

from .._errors import (
    CorruptPayloadError,
    RecordLocation,
    RegistryAuthError,
    RegistryError,
    RegistryRateLimitedError,
    SchemaMismatchError,
    UnknownSchemaError,
)
from .._confluent import registry_urls, rest_client, rest_get
from .._limits import DEFAULT_LIMITS, Limits
from .._registry import checked_schema, registry_call
from .._wire import SchemaRef
from ._names import check_import_name

__all__ = [
    "schema_to_file_proto",
    "fetch_schema",
    "fetch_version",
    "build_pool",
    "message_at",
    "message_index",
    "MessageIndex",
    "index_path",
    "first_message_name",
]

FileDescriptorProto = descriptor_pb2.FileDescriptorProto

# Importing these registers the well-known files in the default pool (confluent-kafka's protobuf
# module, which serdes subclasses, also registers confluent/*.proto and google/type/*.proto).
from google.protobuf import (  # noqa: E402,F401
    any_pb2,
    api_pb2,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    source_context_pb2,
    struct_pb2,
    timestamp_pb2,
    type_pb2,
    wrappers_pb2,
)

_BUILTIN_PREFIXES = ("google/protobuf/", "google/type/", "confluent/")


def is_builtin(name: str) -> bool:
    return name.startswith(_BUILTIN_PREFIXES)


def _looks_like_proto_source(text: str) -> bool:
    return any(tok in text for tok in (";", "{", "syntax", "message ", "enum "))


def schema_to_file_proto(
    name: Optional[str], schema_str: str, deps: Optional[Dict[str, FileDescriptorProto]] = None
) -> FileDescriptorProto:
    """Turn registry schema text (base64 descriptor, ``.proto`` source or raw bytes) into a
    ``FileDescriptorProto``; ``name`` (the import path) replaces the file name when given."""
    fdp = FileDescriptorProto()
    s = schema_str.strip()
    parsed = False
    try:
        raw = base64.b64decode(s, validate=True)
        fdp.ParseFromString(raw)
        parsed = bool(fdp.message_type or fdp.enum_type or fdp.package or fdp.name or not raw)
    except (binascii.Error, ValueError, DecodeError):
        parsed = False
    if not parsed:
        fdp.Clear()
        if _looks_like_proto_source(s) and not _is_raw_descriptor(s):
            from ._proto_text import parse_proto

            fdp = parse_proto(schema_str, name or "default.proto", deps)
        else:
            try:
                fdp.ParseFromString(schema_str.encode("latin-1"))
            except (UnicodeEncodeError, DecodeError) as e:
                raise SchemaMismatchError(
                    f"registry schema {name or ''} is neither a base64 FileDescriptorProto nor .proto source"
                ) from e
    if name:
        fdp.name = name
    elif not fdp.name:
        fdp.name = "default.proto"
    return fdp


def _is_raw_descriptor(s: str) -> bool:
    # A serialized FileDescriptorProto starts with a field tag (name=1 -> 0x0a, package=2 -> 0x12,
    # message_type=4 -> 0x22 ...); .proto source starts with printable text.
    return bool(s) and ord(s[0]) < 0x20 and s[0] not in "\t\n\r "


#: Registries (their base URLs) that failed a ``format=serialized`` request in this process (besides
#: Apicurio's ccompat API, recognised by its URL): later fetches from them ask without a format first.
_SERIALIZED_REFUSED: Set[Tuple[str, ...]] = set()


def _plain_first(rest: Any) -> bool:
    """Whether to ask for a schema without a format first.

    Apicurio (its Confluent-compatible API lives under ``/apis/ccompat/``) answers
    ``format=serialized`` of a schema registered as base64 (what confluent-kafka's and serdes'
    Python serializers register) with HTTP 500. confluent-kafka's client retries a 500 with
    back-off (``max.retries``, ``retries.wait.ms``): 1-7 s per schema on every worker's first
    record, and each 500 counts against Apicurio's own liveness check.
    """
    urls = registry_urls(rest)
    return urls in _SERIALIZED_REFUSED or any("/apis/ccompat/" in u for u in urls)


def _is_base64_descriptor(schema_str: str) -> bool:
    try:
        descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema_str.strip(), validate=True))
    except (binascii.Error, ValueError, DecodeError):
        return False
    return True


def _with_format_fallback(what: str, fn_serialized: Any, fn_plain: Any, location: Optional[RecordLocation], ref: Any,
                          registry: Any = None, path: str = "", query: Optional[Dict[str, Any]] = None,
                          answer: Any = None) -> Any:
    """The schema (or registered version) from the registry, preferring ``format=serialized``.

    Confluent's way first: ask for ``format=serialized``; when the registry fails that request
    with an HTTP error other than 404, 401, 403 or 429 (Apicurio answers 500), ask again without a
    format and remember the registry (:data:`_SERIALIZED_REFUSED`).

    From a registry that refuses it (:func:`_plain_first`), ask without a format first, past the
    client's caches (``GET path``, turned into a result by ``answer``): a base64 descriptor is the
    answer; ``.proto`` text is asked for again with ``format=serialized`` (served for text
    schemas, and spares compiling the text), through the client so that its cache ends up with
    the serialized form, as confluent-kafka's own deserializers on a shared client expect.
    Every failure is typed by :func:`registry_call`.
    """
    rest = rest_client(registry) if registry is not None else None
    if rest is not None and _plain_first(rest):
        got = registry_call(what, lambda: answer(rest_get(rest, path, query)), location, ref)
        text = getattr(got, "schema_str", None) or getattr(getattr(got, "schema", None), "schema_str", None)
        if not isinstance(text, str) or _is_base64_descriptor(text):
            return got  # a base64 descriptor, or no schema (checked_schema says so)
        serialized = _ask_serialized(what, fn_serialized, location, ref)
        return got if serialized is _REFUSED else serialized  # refused: .proto text, compiled by _proto_text
    serialized = _ask_serialized(what, fn_serialized, location, ref)
    if serialized is not _REFUSED:
        return serialized
    got = registry_call(what, fn_plain, location, ref)
    if rest is not None:
        _SERIALIZED_REFUSED.add(registry_urls(rest))
    return got


_REFUSED = object()


def _ask_serialized(what: str, fn_serialized: Any, location: Optional[RecordLocation], ref: Any) -> Any:
    """``fn_serialized()``, or :data:`_REFUSED` when the registry answered it with an HTTP error other
    than 404, 401, 403 or 429. Other failures raise, typed: an unreachable registry or an unreadable
    answer is not helped by asking again without a format."""
    try:
        return registry_call(what, fn_serialized, location, ref)
    except (UnknownSchemaError, RegistryAuthError, RegistryRateLimitedError):
        raise
    except RegistryError as e:
        if e.http_status is None:
            raise
        return _REFUSED


def _schema_answer(response: Any) -> Schema:
    return RegisteredSchema.from_dict(response).schema


def fetch_schema(registry: Any, schema_id: SchemaRef, location: Optional[RecordLocation] = None) -> Schema:
    """The writer schema by id or GUID, preferring ``format=serialized`` like confluent-kafka.

    Fetching ``serialized`` first also matters for a client shared with confluent-kafka's own
    deserializers: the client caches one schema per id whatever the format asked for.
    """
    if isinstance(schema_id, int):
        what = f"fetching schema id {schema_id}"
        got = _with_format_fallback(
            what,
            lambda: registry.get_schema(schema_id, None, "serialized"),
            lambda: registry.get_schema(schema_id, None, None),
            location, schema_id, registry, f"schemas/ids/{schema_id}", None, _schema_answer,
        )
    else:
        what = f"fetching schema GUID {schema_id}"
        got = _with_format_fallback(
            what,
            lambda: registry.get_schema_by_guid(str(schema_id), "serialized"),
            lambda: registry.get_schema_by_guid(str(schema_id), None),
            location, schema_id, registry, f"schemas/guids/{quote(str(schema_id), safe='')}", None, _schema_answer,
        )
    return checked_schema(what, got, location, schema_id)


def fetch_version(registry: Any, subject: str, version: int, location: Optional[RecordLocation] = None) -> Any:
    """A referenced subject version (``RegisteredSchema``), preferring ``format=serialized``."""
    what = f"fetching reference {subject!r} version {version}"
    got = _with_format_fallback(
        what,
        lambda: registry.get_version(subject, version, True, "serialized"),
        lambda: registry.get_version(subject, version, True),
        location, None, registry, f"subjects/{quote(subject, safe='')}/versions/{quote(str(version), safe='')}",
        {"deleted": True}, RegisteredSchema.from_dict,
    )
    checked_schema(what, getattr(got, "schema", None), location, None)
    return got


def _add_from_default_pool(pool: descriptor_pool.DescriptorPool, name: str, added: Set[str]) -> bool:
    try:
        fd = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return False
    for dep in fd.dependencies:
        if dep.name not in added:
            _add_from_default_pool(pool, dep.name, added)
    proto = FileDescriptorProto()
    fd.CopyToProto(proto)
    pool.Add(proto)
    added.add(name)
    return True


def build_pool(
    registry: Any,
    schema: Schema,
    location: Optional[RecordLocation] = None,
    schema_id: Any = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Tuple[descriptor_pool.DescriptorPool, FileDescriptor, FileDescriptorProto]:
    """A private pool holding ``schema`` and everything it imports; returns ``(pool, file, proto)``.

    Reference names are checked (:func:`~serdes.protobuf._names.check_import_name`) before use;
    the reference graph may be at most ``limits.max_schema_depth`` deep and pull at most
    ``limits.max_references`` schemas from the registry (a cycle is followed once).
    """
    protos: Dict[str, FileDescriptorProto] = {}
    fetched = 0

    def collect(s: Schema, visiting: Set[str], depth: int) -> None:
        nonlocal fetched
        for ref in s.references or []:
            name = check_import_name(ref.name, "schema reference", location, schema_id)
            if name in protos or name in visiting:
                continue
            if is_builtin(name) and in_default_pool(name):
                continue
            subject, version = ref.subject, ref.version
            if subject is None or version is None:
                raise SchemaMismatchError(
                    f"schema reference {name!r} has no subject or version", location, schema_id,
                )
            if depth >= limits.max_schema_depth:
                raise SchemaMismatchError(
                    f"schema reference {name!r} is nested deeper than serdes.max.schema.depth={limits.max_schema_depth}",
                    location, schema_id,
                )
            fetched += 1
            if fetched > limits.max_references:
                raise SchemaMismatchError(
                    f"schema reference {name!r}: the schema pulls more than serdes.max.references="
                    f"{limits.max_references} references from the registry",
                    location, schema_id,
                )
            visiting.add(name)
            if registry is None:
                raise SchemaMismatchError(f"schema references {name!r} but there is no registry client", location, schema_id)
            registered = fetch_version(registry, subject, version, location)
            collect(registered.schema, visiting, depth + 1)
            protos[name] = _parse(name, registered.schema.schema_str, location, schema_id, protos)

    collect(schema, set(), 0)
    root = _parse(None, schema.schema_str, location, schema_id, protos)
    if root.name in protos:
        root.name = "default.proto"
    pool = pool_of(protos, root, lambda msg: SchemaMismatchError(msg, location, schema_id))
    return pool, pool.FindFileByName(root.name), root


def pool_of(
    protos: Dict[str, FileDescriptorProto], root: FileDescriptorProto, fail: Callable[[str], Exception],
) -> descriptor_pool.DescriptorPool:
    """A private pool of ``root`` and the ``protos`` (by import path) it needs, each added after
    its imports; an import that is neither one of ``protos`` nor a well-known file, or files the
    pool finds inconsistent, raise ``fail(message)``."""
    pool = descriptor_pool.DescriptorPool()
    added: Set[str] = set()

    def add(proto: FileDescriptorProto) -> None:
        for dep in proto.dependency:
            if dep in added:
                continue
            if dep in protos:
                add(protos[dep])
            elif not _add_from_default_pool(pool, dep, added):
                raise fail(f"schema imports {dep!r}, which is neither a schema reference nor a well-known file")
        if proto.name not in added:
            try:
                pool.Add(proto)
            except Exception as e:  # TypeError/KeyError from the pool for inconsistent files
                raise fail(f"cannot build descriptors for {proto.name!r}: {e}") from e
            added.add(proto.name)

    for p in protos.values():
        add(p)
    add(root)
    return pool


def in_default_pool(name: str) -> bool:
    """Whether the protobuf runtime's default pool has the file ``name`` (a well-known type's)."""
    try:
        descriptor_pool.Default().FindFileByName(name)
        return True
    except KeyError:
        return False


def _parse(
    name: Optional[str],
    schema_str: Optional[str],
    location: Optional[RecordLocation],
    schema_id: Any,
    deps: Optional[Dict[str, FileDescriptorProto]] = None,
) -> FileDescriptorProto:
    if schema_str is None:
        raise SchemaMismatchError(f"registry returned no schema text for {name or 'the writer schema'}", location, schema_id)
    try:
        return schema_to_file_proto(name, schema_str, deps)
    except SchemaMismatchError as e:
        if e.location.topic is None and location is not None:
            e.location = location
        if e.schema_id is None:
            e.schema_id = schema_id
        e.args = (e._format(),)
        raise


class MessageIndex:
    """Confluent message-index paths of one file's messages, both ways.

    The file's top-level messages (in declaration order: the order message indexes count in) are
    read once, in O(N) -- ``FileDescriptor`` has no ordered sequence of them, only a copy of the
    whole file (``CopyToProto``) and a by-name lookup per message -- so that every later lookup
    costs O(depth) (nested types are an indexable sequence), whatever the number of messages.
    """

    __slots__ = ("fd", "_top", "_positions")

    def __init__(self, fd: FileDescriptor) -> None:
        self.fd = fd
        self._top: Optional[Sequence[Descriptor]] = None
        self._positions: Optional[Dict[str, int]] = None

    def top_level(self) -> Sequence[Descriptor]:
        if self._top is None:
            self._top = tuple(_top_level(self.fd))
        return self._top

    def message_at(self, indexes: Sequence[int]) -> Descriptor:
        """The message a message-index path points at (``[0]`` = first top-level message).

        Raises:
            CorruptPayloadError: an index is out of range for the schema.
        """
        if not indexes:
            indexes = (0,)
        messages: Sequence[Descriptor] = self.top_level()
        desc: Optional[Descriptor] = None
        where = "the schema's top-level messages"
        for i in indexes:
            if i < 0 or i >= len(messages):
                raise CorruptPayloadError(
                    f"message index {i} out of range (message indexes {list(indexes)}; {where} has {len(messages)})"
                )
            desc = messages[i]
            messages = desc.nested_types
            where = f"message {desc.full_name}"
        assert desc is not None
        return desc

    def position(self, desc: Descriptor) -> int:
        """The index of top-level message ``desc`` in the file."""
        if self._positions is None:
            self._positions = {m.full_name: i for i, m in enumerate(self.top_level())}
        return self._positions[desc.full_name]


#: files whose :class:`MessageIndex` is kept (least recently used evicted first); each entry holds
#: its ``FileDescriptor`` (so its ``id`` is not reused while cached) and one reference per message
MESSAGE_INDEX_CACHE_SIZE = 64
_message_indexes: "OrderedDict[int, MessageIndex]" = OrderedDict()
_message_indexes_lock = threading.Lock()


def message_index(fd: FileDescriptor) -> MessageIndex:
    """The (cached, bounded LRU) :class:`MessageIndex` of ``fd``."""
    key = id(fd)
    with _message_indexes_lock:
        index = _message_indexes.get(key)
        if index is not None and index.fd is fd:
            _message_indexes.move_to_end(key)
            return index
        index = _message_indexes[key] = MessageIndex(fd)
        while len(_message_indexes) > MESSAGE_INDEX_CACHE_SIZE:
            _message_indexes.popitem(last=False)
        return index


def message_at(fd: FileDescriptor, indexes: Sequence[int]) -> Descriptor:
    """The message a Confluent message-index path points at (``[0]`` = first top-level message);
    O(depth) after the file's first lookup (:class:`MessageIndex`).

    Raises:
        CorruptPayloadError: an index is out of range for the schema.
    """
    return message_index(fd).message_at(indexes)


def _top_level(fd: FileDescriptor) -> List[Descriptor]:
    proto = FileDescriptorProto()
    fd.CopyToProto(proto)
    prefix = f"{fd.package}." if fd.package else ""
    return [fd.pool.FindMessageTypeByName(prefix + m.name) for m in proto.message_type]


def index_path(desc: Descriptor) -> List[int]:
    """The message-index path of a message descriptor within its file."""
    path: List[int] = []
    cur = desc
    while cur.containing_type is not None:
        parent = cur.containing_type
        path.append(list(parent.nested_types).index(cur))
        cur = parent
    path.append(message_index(cur.file).position(cur) if cur.file is not None else 0)
    path.reverse()
    return path


def first_message_name(schema_str: Optional[str]) -> Optional[str]:
    """Full name of the first message in a schema (for record-based subject strategies)."""
    if not schema_str:
        return None
    try:
        fdp = schema_to_file_proto(None, schema_str)
    except Exception:
        return None
    if not fdp.message_type:
        return None
    return f"{fdp.package}.{fdp.message_type[0].name}" if fdp.package else fdp.message_type[0].name
