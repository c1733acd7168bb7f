"""The native columnar Protobuf decoder (``rust/src/columnar/protobuf/``): whole lists of
Confluent-framed Protobuf records into the reader message's Arrow columns in one call, with the
GIL released -- a loop over the wire format driven by a *program* computed here, once per reader
message, from its descriptor (which field number is which column, how each value is read).

It is a shortcut with the per-record path as its reference (``ProtobufDeserializer`` then
``serdes.protobuf._todict``, then pyarrow): a list it takes decodes to the same batch (the tests
compare them); anything it does not take is decoded again by the per-record path, which gives each
bad record its typed error. So a call never fails here that would not fail there, and never
succeeds here with another result.

What it reads, and what stays on the per-record path:

* a reader message with a group, a ``required`` field or extension ranges anywhere, or nested
  deeper than ``max_depth`` (or 64 levels), has no program: its lists go to the per-record path;
* frames: magic byte 0, a 4-byte schema id, a message-index array of one byte per number. With a
  registry client, each (schema id, message indexes) is looked at once (``_refusal``): the
  per-record path must read it without an error into a message it gives as it is, or re-reads
  into the reader's class (another version, or ``reader_schema=``) with the result of reading the
  bytes with the reader's class directly (``reread_refusal``: same types, presence and oneofs for
  the fields both have, no field of the parsing class the reader lacks whose parse can fail).
  Without a registry client the per-record path reads every frame with its class, and so does
  this decoder;
* per frame, anything the loop cannot read exactly as the protobuf runtime does (see
  ``rust/src/columnar/protobuf/decode.rs``): the list goes to the per-record path.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .. import _native
from .._cache import bounded_store
from .._confluent import registry_of
from .._serde import has_rules
from .._wire import decode_message_indexes
from ..protobuf._todict import WRAPPER_TYPES, _has_presence, is_repeated

__all__ = ["NativeProtobufColumns", "native_protobuf_columns", "program", "reread_refusal"]

_log = logging.getLogger("serdes.arrow")
_FD = FieldDescriptor

#: the deepest reader program this decoder takes (the protobuf runtime's own limit is 100)
MAX_PROGRAM_DEPTH = 64

_KINDS: Dict[int, str] = {
    _FD.TYPE_DOUBLE: "double", _FD.TYPE_FLOAT: "float", _FD.TYPE_INT32: "int32", _FD.TYPE_SINT32: "sint32",
    _FD.TYPE_SFIXED32: "sfixed32", _FD.TYPE_INT64: "int64", _FD.TYPE_SINT64: "sint64",
    _FD.TYPE_SFIXED64: "sfixed64", _FD.TYPE_UINT32: "uint32", _FD.TYPE_FIXED32: "fixed32",
    _FD.TYPE_UINT64: "uint64", _FD.TYPE_FIXED64: "fixed64", _FD.TYPE_BOOL: "bool", _FD.TYPE_STRING: "string",
    _FD.TYPE_BYTES: "bytes",
}

_TIMESTAMP = "google.protobuf.Timestamp"
_DURATION = "google.protobuf.Duration"
_WELL_KNOWN = frozenset({_TIMESTAMP, _DURATION} | WRAPPER_TYPES)


class NoProgram(Exception):
    """The reader message has no program: its lists stay on the per-record path."""


def _required(f: FieldDescriptor) -> bool:
    req = getattr(f, "is_required", None)
    if isinstance(req, bool):
        return req
    return bool(f.label == f.LABEL_REQUIRED)  # type: ignore[attr-defined]  # protobuf < 6


def _real_oneof(f: FieldDescriptor) -> Optional[Any]:
    """``f``'s oneof when setting ``f`` can clear another field (a oneof of several members)."""
    o = f.containing_oneof
    return o if o is not None and len(o.fields) > 1 else None


def _enum_node(f: FieldDescriptor) -> Tuple[Any, ...]:
    assert f.enum_type is not None
    values = f.enum_type.values
    symbols = [v.name for v in values]
    index = {s: i for i, s in enumerate(symbols)}
    # a number's name as the per-record converter finds it (of aliases, the last declared)
    names = {v.number: v.name for v in values}
    numbers = list(names)
    default = f.default_value if isinstance(f.default_value, int) else values[0].number
    if default not in names:
        raise NoProgram(f"field {f.full_name}'s default {default} is not a value of its enum")
    return ("enum", symbols, numbers, [index[names[n]] for n in numbers], index[names[default]])


def program(desc: Descriptor) -> Tuple[Tuple[Any, ...], int]:
    """``(program, depth)`` of reader message ``desc`` (the tuples ``rust/src/columnar/protobuf/
    program.rs`` reads; depth: message levels below the top). Raises :class:`NoProgram`."""

    def node(f: FieldDescriptor, depth: int) -> Tuple[Any, ...]:
        if f.type == _FD.TYPE_GROUP:
            raise NoProgram(f"field {f.full_name} is a group")
        if f.enum_type is not None:
            return _enum_node(f)
        md = f.message_type
        if md is None:
            return ("scalar", _KINDS[f.type])
        if md.full_name == _TIMESTAMP:
            return ("timestamp",)
        if md.full_name == _DURATION:
            return ("duration",)
        if md.full_name in WRAPPER_TYPES:
            return ("wrapper", _KINDS[md.fields_by_name["value"].type])
        return message(md, depth + 1)

    def message(md: Descriptor, depth: int) -> Tuple[Any, ...]:
        if depth > MAX_PROGRAM_DEPTH:
            raise NoProgram(f"the message nests more than {MAX_PROGRAM_DEPTH} levels")
        if md.extension_ranges:
            raise NoProgram(f"message {md.full_name} has extension ranges")
        fields: List[Tuple[Any, ...]] = []
        oneofs: Dict[str, int] = {}
        for f in md.fields:
            if _required(f):
                raise NoProgram(f"field {f.full_name} is required")
            mt = f.message_type
            if mt is not None and mt.GetOptions().map_entry:
                kf, vf = mt.fields_by_name["key"], mt.fields_by_name["value"]
                if (kf.number, vf.number) != (1, 2) or kf.type not in _KINDS:
                    raise NoProgram(f"map entry {mt.full_name} is not key = 1, value = 2")
                card, n = "map", ("map", _KINDS[kf.type], node(vf, depth + 1))
            else:
                n = node(f, depth)
                card = "repeated" if is_repeated(f) else "optional" if _has_presence(f) else "single"
            o = _real_oneof(f)
            oneof = -1 if o is None else oneofs.setdefault(o.full_name, len(oneofs))
            fields.append((f.number, f.name, card, oneof, n))
        return ("message", fields)

    prog = message(desc, 0)
    if not prog[1]:
        # no columns: a batch built from none has no rows (the per-record path decides)
        raise NoProgram(f"message {desc.full_name} has no fields")
    return prog, _levels(prog) - 1


def _levels(node: Tuple[Any, ...]) -> int:
    """Message levels of a value of ``node``, itself included: a Timestamp, Duration, wrapper
    and map entry count as one (the runtime parses them as messages)."""
    tag = node[0]
    if tag == "message":
        return 1 + max((_levels(f[4]) for f in node[1]), default=0)
    if tag == "map":
        return 1 + _levels(node[2])
    return 1 if tag in ("timestamp", "duration", "wrapper") else 0


def reread_refusal(parsed: Descriptor, reader: Descriptor) -> Optional[str]:
    """Why a message the per-record path parses as ``parsed`` and re-reads as ``reader``
    (``reader.FromString(msg.SerializeToString())``) might not be ``reader`` read straight from
    the wire bytes -- what this decoder does -- or ``None``: they are the same.

    They are when the fields both have agree in type, repeatedness, presence and oneof (the
    parse would clear, merge or drop otherwise), the reader's enums' numbers are the parsing
    enum's (an unknown closed-enum number moves to the end), a reader-only field is in no oneof
    (the re-serialization puts it last), and no field only ``parsed`` has can fail to parse
    (strings, messages, packed runs) where the reader skips its bytes."""
    if parsed.full_name != reader.full_name:
        return f"the frame's message {parsed.full_name} is not the reader's {reader.full_name}"
    return _message_refusal(parsed, reader, set())


def _oneof_numbers(f: FieldDescriptor) -> Optional[FrozenSet[int]]:
    o = _real_oneof(f)
    return None if o is None else frozenset(g.number for g in o.fields)


def _message_refusal(p: Descriptor, r: Descriptor, seen: Set[Tuple[int, int]]) -> Optional[str]:
    key = (id(p), id(r))
    if key in seen:
        return None
    seen.add(key)
    if p.extension_ranges:
        return f"message {p.full_name} has extension ranges"
    theirs = {f.number: f for f in p.fields}
    ours = {f.number: f for f in r.fields}
    for number, f in ours.items():
        g = theirs.get(number)
        if g is None:
            if _real_oneof(f) is not None:
                return f"the reader's field {f.full_name} is in a oneof and not in the parsed message"
            continue
        why = _field_refusal(g, f, seen)
        if why is not None:
            return why
    for number, g in theirs.items():
        if number in ours:
            continue
        if is_repeated(g) or g.message_type is not None or g.type in (_FD.TYPE_STRING, _FD.TYPE_GROUP) \
                or _required(g):
            return f"field {g.full_name}, which the reader does not have, can fail to parse"
    return None


def _field_refusal(g: FieldDescriptor, f: FieldDescriptor, seen: Set[Tuple[int, int]]) -> Optional[str]:
    if (g.type, is_repeated(g), _has_presence(g), _required(g)) != (f.type, is_repeated(f), _has_presence(f),
                                                                     _required(f)):
        return f"field {f.full_name} differs in type, repeatedness or presence"
    if _oneof_numbers(g) != _oneof_numbers(f):
        return f"field {f.full_name} is in another oneof"
    if f.enum_type is not None and g.enum_type is not None:
        if not {v.number for v in f.enum_type.values} <= {v.number for v in g.enum_type.values}:
            return f"enum of field {f.full_name} has numbers the parsed one lacks"
    gm, fm = g.message_type, f.message_type
    if fm is not None and gm is not None:  # (the same type: both or neither)
        if gm.GetOptions().map_entry != fm.GetOptions().map_entry:
            return f"field {f.full_name} is a map in one message only"
        if gm.full_name in _WELL_KNOWN or fm.full_name in _WELL_KNOWN:
            return None if gm.full_name == fm.full_name else f"field {f.full_name} is another well-known type"
        return _message_refusal(gm, fm, seen)
    return None


def _top_nullable(t: pa.DataType) -> pa.DataType:
    """The struct type ``t`` with every field nullable (a batch's columns are: tombstones)."""
    return pa.struct([pa.field(t.field(i).name, t.field(i).type, True) for i in range(t.num_fields)])


class NativeProtobufColumns:
    """The native decoder of one reader message for one deserializer: frame heads (schema id and
    message indexes) accepted as frames name them, at most ``cache_size``, each looked at once."""

    def __init__(self, mod: Any, deser: Any, desc: Descriptor, target: pa.DataType) -> None:
        prog, depth = program(desc)
        self._deser = deser
        self._desc = desc
        self._target = _top_nullable(target)  # the per-record path's struct type
        limits = deser._limits
        if depth > limits.max_depth:
            # the per-record converter refuses such a record (MessageTooDeepError)
            raise NoProgram(f"the message nests {depth} levels (max_depth {limits.max_depth})")
        self._any_key = registry_of(deser) is None
        self._dec = mod.ProtobufArrowDecoder(prog, depth, limits.max_items, self._any_key, deser._cache_size)
        self._heads: Dict[bytes, Optional[str]] = {}  # head -> None (accepted) or why it is refused
        self._off: Optional[str] = None  # set when the columns' type differs from the reference
        #: calls decoded here, and calls handed to the per-record path (tests and measurements)
        self.taken = 0
        self.declined = 0
        #: (frame index or None, reason) of the last call the native decoder refused
        self.refused: Optional[Tuple[Optional[int], str]] = None

    def decode(self, payloads: List[Any], threads: int = 1) -> Optional[pa.StructArray]:
        """The struct array of ``payloads`` (all decoded), or ``None``: the per-record path
        decodes them."""
        found = self._columns(payloads, threads)
        if found is None:
            self.declined += 1
        else:
            self.taken += 1
        return found

    def _columns(self, payloads: List[Any], threads: int) -> Optional[pa.StructArray]:
        if self._off is not None:
            return None
        cols: List[Any] = []
        for _ in range(2):  # a second time after accepting the heads the first one named
            cols, index, why, heads = self._dec.decode(payloads, threads)
            if heads is None:
                break
            for head in heads:
                why = self._accept(head)
                if why is not None:
                    self.refused = (None, why)
                    return None
        else:
            self.refused = (None, "more frame heads in one call than the cache keeps")
            return None
        if not cols:
            self.refused = (index, why)
            return None
        arrays = [pa.record_batch(c).to_struct_array() for c in cols]
        array = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
        if array.type.equals(self._target):
            return array
        self._off = f"the native columns {array.type} differ from {self._target}"
        _log.warning("serdes.arrow: the native Protobuf columns differ from the per-record path's, which "
                     "decodes this reader message from now on: %s", self._off)
        return None

    def _accept(self, head: bytes) -> Optional[str]:
        """Why frames of ``head`` stay on the per-record path (decided once), or ``None``."""
        if head in self._heads:
            return self._heads[head]
        why = self._refusal(head)
        if len(self._heads) >= self._deser._cache_size:
            oldest = next(iter(self._heads))
            if self._heads.pop(oldest) is None:
                self._dec.forget(oldest)
        self._heads[head] = why
        if why is None:
            self._dec.add_key(head)
        return why

    def _refusal(self, head: bytes) -> Optional[str]:
        deser = self._deser
        try:
            # the per-record path's own look-up of this schema id (its typed errors: refused)
            deser._decoder_for(b"\x00" + head, None)
            parsed = self._parsed_message(int.from_bytes(head[:4], "big"), decode_message_indexes(head, 4)[0])
        except Exception as e:  # the per-record path reports it, per record
            return f"{type(e).__name__}: {e}"
        if parsed is self._desc:
            return None
        return reread_refusal(parsed, self._desc)

    def _parsed_message(self, schema_id: int, indexes: List[int]) -> Descriptor:
        """The message the per-record path parses frames of ``schema_id`` and ``indexes`` into
        (then re-read into the reader's class when it is another): the deserializer's class, or
        (dynamic) the writer's message at the indexes. Raises where that path fails."""
        from ..protobuf._schemas import build_pool, fetch_schema, message_at

        deser = self._deser
        registry = registry_of(deser)
        writer = fetch_schema(registry, schema_id)
        if has_rules(writer):
            raise ValueError("the writer schema carries data-contract rules (confluent-kafka decodes it)")
        _, fd, _ = build_pool(registry, writer, None, schema_id, deser._limits)
        found = message_at(fd, indexes)  # an index out of range is the per-record path's error
        if deser._dynamic:
            return deser._resolve_desc(found)  # type: ignore[no-any-return]
        return deser._fixed_class.DESCRIPTOR  # type: ignore[no-any-return]


def native_protobuf_columns(deser: Any, desc: Descriptor, target: pa.DataType) -> Optional[NativeProtobufColumns]:
    """The native decoder of reader message ``desc`` kept on ``deser`` (built once per reader), or
    ``None``: the extension is not active, the deserializer reads frames another way (a custom
    schema-id deserializer, data-contract rules, a subject-keyed reader), or the message has no
    program."""
    mod = _native.active()
    if mod is None or not hasattr(mod, "ProtobufArrowDecoder"):
        return None
    if deser._custom_id_deserializer or deser._uses_rules() or deser._subject_keyed:
        return None
    cache: Dict[Any, Optional[NativeProtobufColumns]] = deser.__dict__.setdefault("_arrow_native_protobuf", {})
    if desc in cache:
        return cache[desc]
    try:
        found: Optional[NativeProtobufColumns] = NativeProtobufColumns(mod, deser, desc, target)
    except NoProgram as e:
        _log.debug("serdes.arrow: %s stays on the per-record path: %s", desc.full_name, e)
        found = None
    bounded_store(cache, desc, found, 16)
    return found

