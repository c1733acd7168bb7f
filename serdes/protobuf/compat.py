"""Protobuf descriptor compatibility checks for restoring Flink keyed state.

Flink state values are stored as protobuf wire bytes, together with the
``FileDescriptorSet`` they were written with.  Before a job is restored with a
new version of the schema, :func:`check_compatibility` decides whether every
value written with the *old* descriptors can be read with the *new* ones.

The policy is deliberately narrower than what the wire format can parse: a
change is accepted only if it decodes old bytes to the same values (or is a
purely additive change).  See ``docs/protobuf-compat.md`` for the full policy
table with examples.

Command line (for CI)::

    python -m serdes.protobuf.compat old.desc new.desc [--message pkg.Msg] [--json]

Exit codes: ``0`` compatible, ``1`` incompatible, ``2`` usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence, Union

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from ._descriptor_sets import files_in_import_order

__all__ = [
    "CompatibilityResult",
    "Incompatibility",
    "Rule",
    "WIRE_COMPATIBLE_TYPE_CHANGES",
    "check_compatibility",
    "descriptor_set_for",
    "load_descriptor_set",
    "main",
]

FileDescriptorSet = descriptor_pb2.FileDescriptorSet
_FDP = descriptor_pb2.FieldDescriptorProto
_DescriptorSetLike = Union[descriptor_pb2.FileDescriptorSet, bytes, bytearray, memoryview]


class Rule:
    """Identifiers of the rules an :class:`Incompatibility` can report."""

    MESSAGE_REMOVED = "message-removed"
    PACKAGE_CHANGED = "package-changed"
    ENUM_REMOVED = "enum-removed"
    ENUM_VALUE_REMOVED = "enum-value-removed"
    FIELD_NUMBER_CHANGED = "field-number-changed"
    FIELD_REMOVED_UNRESERVED = "field-removed-unreserved"
    RESERVED_NUMBER_REUSED = "reserved-number-reused"
    FIELD_NUMBER_REUSED = "field-number-reused"
    FIELD_TYPE_CHANGED = "field-type-changed"
    FIELD_MESSAGE_TYPE_CHANGED = "field-message-type-changed"
    FIELD_CARDINALITY_CHANGED = "field-cardinality-changed"
    FIELD_BECAME_REQUIRED = "field-became-required"
    REQUIRED_FIELD_ADDED = "required-field-added"
    FIELD_DEFAULT_CHANGED = "field-default-changed"
    ONEOF_CHANGED = "oneof-changed"


# (old type, new type) -> caveat.  Every pair decodes every value the old type
# can encode to the same value in the new type.
WIRE_COMPATIBLE_TYPE_CHANGES: dict[tuple[int, int], str] = {
    (_FDP.TYPE_INT32, _FDP.TYPE_INT64): "varint, sign-extended: every int32 value is read unchanged",
    (_FDP.TYPE_UINT32, _FDP.TYPE_UINT64): "varint: every uint32 value is read unchanged",
    (_FDP.TYPE_UINT32, _FDP.TYPE_INT64): "varint: every uint32 value fits in int64",
    (_FDP.TYPE_SINT32, _FDP.TYPE_SINT64): "zigzag varint: every sint32 value is read unchanged",
    (_FDP.TYPE_STRING, _FDP.TYPE_BYTES): "length-delimited: the UTF-8 bytes of the string are read",
    (_FDP.TYPE_BYTES, _FDP.TYPE_STRING): (
        "length-delimited: only valid if every stored value is valid UTF-8 "
        "(parsers reject invalid UTF-8 in proto3 strings)"
    ),
}

_SCALAR_NAMES = {
    value: name[len("TYPE_") :].lower()
    for name, value in _FDP.Type.items()
}
_PACKABLE = {
    t
    for t in _SCALAR_NAMES
    if t not in (_FDP.TYPE_STRING, _FDP.TYPE_BYTES, _FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP)
}
_NAMED_TYPES = (_FDP.TYPE_MESSAGE, _FDP.TYPE_ENUM, _FDP.TYPE_GROUP)


@dataclass(frozen=True)
class Incompatibility:
    """One reason why old state cannot be restored with the new schema.

    Attributes:
        path: fully-qualified element, e.g. ``"shop.Order.amount"``.
        rule: rule identifier, one of the :class:`Rule` constants.
        detail: human readable explanation.
    """

    path: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.rule}] {self.detail}"


@dataclass
class CompatibilityResult:
    """Outcome of :func:`check_compatibility`.

    ``bool(result)`` is ``result.compatible``.  ``reasons`` lists every
    incompatibility found; ``notes`` lists accepted changes worth knowing
    about (added fields, renames, widened types, ...).
    """

    reasons: list[Incompatibility] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    message: str | None = None

    @property
    def compatible(self) -> bool:
        """True when no incompatibility was found."""
        return not self.reasons

    def __bool__(self) -> bool:
        return self.compatible

    def __str__(self) -> str:
        scope = f" (root {self.message})" if self.message else " (all messages)"
        if self.compatible:
            lines = [f"COMPATIBLE{scope}"]
        else:
            n = len(self.reasons)
            lines = [f"INCOMPATIBLE{scope}: {n} reason{'s' if n != 1 else ''}"]
            lines += [f"  - {r}" for r in self.reasons]
        if self.notes:
            lines.append("notes:")
            lines += [f"  - {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable representation (used by the CLI's ``--json``)."""
        return {
            "compatible": self.compatible,
            "message": self.message,
            "reasons": [
                {"path": r.path, "rule": r.rule, "detail": r.detail} for r in self.reasons
            ],
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------
# loading / building descriptor sets
# --------------------------------------------------------------------------


def load_descriptor_set(
    source: str | os.PathLike[str] | bytes | bytearray | memoryview,
) -> descriptor_pb2.FileDescriptorSet:
    """Load a binary ``FileDescriptorSet``.

    ``source`` is either the serialized bytes or a path to a file produced by
    e.g. ``protoc --include_imports -o x.desc``.  Raises ``ValueError`` if the
    data is not a non-empty ``FileDescriptorSet`` and ``OSError`` if the file
    cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        origin = "<bytes>"
    else:
        origin = os.fspath(source)
        with open(origin, "rb") as fh:
            data = fh.read()
    fds = _parse_set(data, origin)
    if not fds.file:
        raise ValueError(f"{origin}: empty FileDescriptorSet")
    return fds


def _parse_set(data: bytes, origin: str) -> descriptor_pb2.FileDescriptorSet:
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except DecodeError as exc:
        raise ValueError(f"{origin}: not a serialized FileDescriptorSet: {exc}") from exc
    for f in fds.file:
        if not f.name:
            raise ValueError(f"{origin}: not a FileDescriptorSet (file without a name)")
    return fds


def _coerce(value: Any, what: str) -> descriptor_pb2.FileDescriptorSet:
    if isinstance(value, descriptor_pb2.FileDescriptorSet):
        return value
    if isinstance(value, descriptor_pb2.FileDescriptorProto):
        fds = descriptor_pb2.FileDescriptorSet()
        fds.file.add().CopyFrom(value)
        return fds
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _parse_set(bytes(value), what)
    raise TypeError(f"{what}: expected FileDescriptorSet or bytes, got {type(value).__name__}")


def descriptor_set_for(message_class_or_descriptor: Any) -> descriptor_pb2.FileDescriptorSet:
    """Return the ``FileDescriptorSet`` needed to interpret a message type.

    Accepts a generated message class or instance, a ``Descriptor``,
    ``EnumDescriptor`` or ``FileDescriptor``.  The set contains the defining
    file and all of its transitive imports, each exactly once, in dependency
    order (imports before importers), so it can be fed file by file into a
    ``DescriptorPool``.  This is what the Flink state code stores with state.
    """
    obj = message_class_or_descriptor
    fd = getattr(obj, "DESCRIPTOR", obj)
    fd = getattr(fd, "file", fd)
    if not hasattr(fd, "dependencies") or not hasattr(fd, "name"):
        raise TypeError(
            "expected a message class/instance, Descriptor, EnumDescriptor or "
            f"FileDescriptor, got {type(obj).__name__}"
        )
    out = descriptor_pb2.FileDescriptorSet()
    for f in files_in_import_order(fd):
        proto = out.file.add()
        serialized = getattr(f, "serialized_pb", None)
        if serialized:
            proto.ParseFromString(serialized)
        else:  # pragma: no cover - pure-python descriptors without serialized_pb
            f.CopyToProto(proto)
    return out


# --------------------------------------------------------------------------
# index over a descriptor set
# --------------------------------------------------------------------------


@dataclass
class _Msg:
    name: str
    proto: descriptor_pb2.DescriptorProto
    file: descriptor_pb2.FileDescriptorProto

    @property
    def relative(self) -> str:
        pkg = self.file.package
        return self.name[len(pkg) + 1 :] if pkg else self.name


@dataclass
class _Enum:
    name: str
    proto: descriptor_pb2.EnumDescriptorProto
    file: descriptor_pb2.FileDescriptorProto

    @property
    def relative(self) -> str:
        pkg = self.file.package
        return self.name[len(pkg) + 1 :] if pkg else self.name


class _Index:
    def __init__(self, fds: descriptor_pb2.FileDescriptorSet) -> None:
        self.messages: dict[str, _Msg] = {}
        self.enums: dict[str, _Enum] = {}
        for f in fds.file:
            prefix = f.package
            for m in f.message_type:
                self._add_message(prefix, m, f)
            for e in f.enum_type:
                self._add_enum(prefix, e, f)

    def _add_message(
        self, prefix: str, m: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FileDescriptorProto
    ) -> None:
        name = f"{prefix}.{m.name}" if prefix else m.name
        self.messages.setdefault(name, _Msg(name, m, f))
        for nested in m.nested_type:
            self._add_message(name, nested, f)
        for e in m.enum_type:
            self._add_enum(name, e, f)

    def _add_enum(
        self,
        prefix: str,
        e: descriptor_pb2.EnumDescriptorProto,
        f: descriptor_pb2.FileDescriptorProto,
    ) -> None:
        name = f"{prefix}.{e.name}" if prefix else e.name
        self.enums.setdefault(name, _Enum(name, e, f))

    def field_type(self, f: descriptor_pb2.FieldDescriptorProto) -> int:
        if f.type:
            return f.type
        # unresolved descriptor (type left unset): resolve through the index
        name = _strip(f.type_name)
        if name in self.enums:
            return _FDP.TYPE_ENUM
        return _FDP.TYPE_MESSAGE

    def is_map(self, f: descriptor_pb2.FieldDescriptorProto) -> bool:
        if f.label != _FDP.LABEL_REPEATED or self.field_type(f) != _FDP.TYPE_MESSAGE:
            return False
        entry = self.messages.get(_strip(f.type_name))
        return entry is not None and entry.proto.options.map_entry


def _strip(type_name: str) -> str:
    return type_name[1:] if type_name.startswith(".") else type_name


def _syntax(f: descriptor_pb2.FileDescriptorProto) -> str:
    return f.syntax or "proto2"


def _json_name(f: descriptor_pb2.FieldDescriptorProto) -> str:
    if f.HasField("json_name"):
        return f.json_name
    out, upper = [], False
    for c in f.name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out)


def _reserved(m: descriptor_pb2.DescriptorProto, number: int) -> bool:
    # DescriptorProto.ReservedRange.end is exclusive
    return any(r.start <= number < r.end for r in m.reserved_range)


def _is_required(f: descriptor_pb2.FieldDescriptorProto) -> bool:
    if f.label == _FDP.LABEL_REQUIRED:
        return True
    features = f.options.features
    return features.HasField("field_presence") and (
        features.field_presence == descriptor_pb2.FeatureSet.LEGACY_REQUIRED
    )


def _real_oneof(m: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
    if not f.HasField("oneof_index") or f.proto3_optional:
        return None
    if f.oneof_index < len(m.oneof_decl):
        return m.oneof_decl[f.oneof_index].name
    return None  # pragma: no cover - malformed descriptor


# --------------------------------------------------------------------------
# the checker
# --------------------------------------------------------------------------


class _Checker:
    def __init__(
        self, old: descriptor_pb2.FileDescriptorSet, new: descriptor_pb2.FileDescriptorSet
    ) -> None:
        self.old = _Index(old)
        self.new = _Index(new)
        self.reasons: list[Incompatibility] = []
        self._notes: dict[str, None] = {}
        self._seen_messages: set[str] = set()
        self._seen_enums: set[str] = set()
        self._refs: list[tuple[str, str]] = []

    @property
    def notes(self) -> list[str]:
        return list(self._notes)

    def reject(self, path: str, rule: str, detail: str) -> None:
        self.reasons.append(Incompatibility(path, rule, detail))

    def note(self, text: str) -> None:
        self._notes.setdefault(text, None)

    # ---- entry points ----------------------------------------------------

    def check_all(self) -> None:
        for name in self.old.messages:
            self.check_message(name)
        for name in self.old.enums:
            self.check_enum(name)
        for name, m in self.new.messages.items():
            if name not in self.old.messages and not m.proto.options.map_entry:
                self.note(f"message {name} added")
        for name in self.new.enums:
            if name not in self.old.enums:
                self.note(f"enum {name} added")

    # ---- types -------------------------------------------------------------

    def _missing_type(self, kind: str, old: _Msg | _Enum, removed_rule: str) -> None:
        new_types: dict[str, Any] = self.new.messages if kind == "message" else self.new.enums
        moved = [
            t for t in new_types.values()
            if t.relative == old.relative and t.file.package != old.file.package
        ]
        if moved:
            target = moved[0]
            self.reject(
                old.name,
                Rule.PACKAGE_CHANGED,
                f"{kind} {old.name} not found in new schema: package changed from "
                f"'{old.file.package}' to '{target.file.package}' (now {target.name}); "
                "type full names must stay stable",
            )
            return
        hint = ""
        if kind == "message":
            sig = self._signature(old.proto, self.old)  # type: ignore[arg-type]
            if sig:
                twins = [
                    t.name for t in self.new.messages.values()
                    if t.name not in self.old.messages and self._signature(t.proto, self.new) == sig
                ]
                if twins:
                    hint = f"; a message with the same fields exists as {twins[0]} (renamed/moved?)"
        self.reject(
            old.name,
            removed_rule,
            f"{kind} {old.name} not found in new schema (removed, renamed or moved){hint}",
        )

    def _old_and_new(self, kind: str, name: str, old_defs: dict[str, Any], new_defs: dict[str, Any],
                     removed_rule: str) -> tuple[Any, Any] | None:
        """The old and new definitions of ``name``; None, noted or rejected, when a side lacks it."""
        old = old_defs.get(name)
        if old is None:
            self.note(f"{kind} {name} is not defined in the old descriptor set; compared by name only")
            return None
        new = new_defs.get(name)
        if new is None:
            self._missing_type(kind, old, removed_rule)
            return None
        return old, new

    @staticmethod
    def _signature(m: descriptor_pb2.DescriptorProto, index: _Index) -> tuple[Any, ...]:
        return tuple(
            sorted((f.number, index.field_type(f), f.label, f.type_name.rsplit(".", 1)[-1]) for f in m.field)
        )

    def check_enum(self, name: str) -> None:
        if name in self._seen_enums:
            return
        self._seen_enums.add(name)
        pair = self._old_and_new("enum", name, self.old.enums, self.new.enums, Rule.ENUM_REMOVED)
        if pair is None:
            return
        old, new = pair
        new_by_number: dict[int, list[str]] = {}
        for v in new.proto.value:
            new_by_number.setdefault(v.number, []).append(v.name)
        old_numbers = set()
        for v in old.proto.value:
            old_numbers.add(v.number)
            names = new_by_number.get(v.number)
            if names is None:
                self.reject(
                    f"{name}.{v.name}",
                    Rule.ENUM_VALUE_REMOVED,
                    f"enum value {v.name} = {v.number} removed; stored state may contain it",
                )
            elif v.name not in names:
                self.note(
                    f"enum value {name}.{v.name} ({v.number}) renamed to {names[0]} "
                    "(wire-identical; names matter only for JSON/text formats)"
                )
        for v in new.proto.value:
            if v.number not in old_numbers:
                self.note(f"enum value {name}.{v.name} ({v.number}) added")
                old_numbers.add(v.number)

    def check_message(self, name: str) -> None:
        if name in self._seen_messages:
            return
        self._seen_messages.add(name)
        pair = self._old_and_new("message", name, self.old.messages, self.new.messages, Rule.MESSAGE_REMOVED)
        if pair is None:
            return
        old, new = pair
        if _syntax(old.file) != _syntax(new.file):
            self.note(
                f"file {old.file.name}: syntax changed {_syntax(old.file)} -> {_syntax(new.file)}"
            )
        outer, self._refs = self._refs, []
        self._compare_fields(old, new)
        refs, self._refs = self._refs, outer
        # referenced types are checked after this message's own fields
        for kind, ref in refs:
            if kind == "enum":
                self.check_enum(ref)
            else:
                self.check_message(ref)

    # ---- fields ------------------------------------------------------------

    def _compare_fields(self, old: _Msg, new: _Msg) -> None:
        om, nm = old.proto, new.proto
        old_by_number = {f.number: f for f in om.field}
        old_by_name = {f.name: f for f in om.field}
        new_by_number = {f.number: f for f in nm.field}
        new_by_name = {f.name: f for f in nm.field}

        for of in om.field:
            path = f"{old.name}.{of.name}"
            nf = new_by_number.get(of.number)
            moved = new_by_name.get(of.name)
            if moved is not None and moved.number != of.number:
                self.reject(
                    path,
                    Rule.FIELD_NUMBER_CHANGED,
                    f"field '{of.name}' changed number {of.number} -> {moved.number}; "
                    f"stored values under {of.number} would not be read as '{of.name}'",
                )
                continue
            if nf is None:
                if _reserved(nm, of.number):
                    self.note(f"field {path} ({of.number}) removed; number reserved")
                else:
                    self.reject(
                        path,
                        Rule.FIELD_REMOVED_UNRESERVED,
                        f"field '{of.name}' ({of.number}) removed without reserving its number; "
                        f"add 'reserved {of.number};' so it can never be reused",
                    )
                continue
            self._compare_field(old, new, of, nf, path)

        for nf in nm.field:
            if nf.number in old_by_number:
                continue
            if nf.name in old_by_name:
                continue  # reported as field-number-changed above
            path = f"{new.name}.{nf.name}"
            if _reserved(om, nf.number):
                self.reject(
                    path,
                    Rule.RESERVED_NUMBER_REUSED,
                    f"field '{nf.name}' uses number {nf.number}, which the old schema reserved "
                    "(a removed field's values may still be in stored state)",
                )
            elif _is_required(nf):
                self.reject(
                    path,
                    Rule.REQUIRED_FIELD_ADDED,
                    f"required field '{nf.name}' ({nf.number}) added; stored values lack it",
                )
            else:
                if nf.name in om.reserved_name:
                    self.note(f"field {path} ({nf.number}) reuses a reserved name")
                self.note(f"field {path} ({nf.number}) added")

    def _cardinality(self, f: descriptor_pb2.FieldDescriptorProto, index: _Index) -> str:
        if f.label != _FDP.LABEL_REPEATED:
            return "singular"
        return "map" if index.is_map(f) else "repeated"

    def _describe(self, f: descriptor_pb2.FieldDescriptorProto, index: _Index) -> str:
        t = index.field_type(f)
        if t in _NAMED_TYPES:
            base = _strip(f.type_name)
            if t == _FDP.TYPE_GROUP:
                base = f"group {base}"
        else:
            base = _SCALAR_NAMES.get(t, str(t))
        card = self._cardinality(f, index)
        return base if card == "singular" else f"{card} {base}"

    def _compare_field(
        self,
        old: _Msg,
        new: _Msg,
        of: descriptor_pb2.FieldDescriptorProto,
        nf: descriptor_pb2.FieldDescriptorProto,
        path: str,
    ) -> None:
        renamed = of.name != nf.name
        type_rule = Rule.FIELD_NUMBER_REUSED if renamed else None
        reuse_prefix = (
            f"number {of.number} was '{of.name}' ({self._describe(of, self.old)}), now "
            f"'{nf.name}' ({self._describe(nf, self.new)}): " if renamed else ""
        )

        # cardinality -----------------------------------------------------
        oc, nc = self._cardinality(of, self.old), self._cardinality(nf, self.new)
        if oc != nc:
            self.reject(
                path,
                type_rule or Rule.FIELD_CARDINALITY_CHANGED,
                f"{reuse_prefix}cardinality changed {oc} -> {nc}",
            )
            return

        # type ------------------------------------------------------------
        ot, nt = self.old.field_type(of), self.new.field_type(nf)
        type_ok = True
        if ot == nt and ot in _NAMED_TYPES:
            on, nn = _strip(of.type_name), _strip(nf.type_name)
            if on != nn:
                kind = "enum" if ot == _FDP.TYPE_ENUM else "message"
                self.reject(
                    path,
                    type_rule or Rule.FIELD_MESSAGE_TYPE_CHANGED,
                    f"{reuse_prefix}{kind} type changed {on} -> {nn} (types are compared by full name)",
                )
                type_ok = False
            else:
                self._refs.append(("enum" if ot == _FDP.TYPE_ENUM else "message", on))
        elif ot != nt:
            caveat = WIRE_COMPATIBLE_TYPE_CHANGES.get((ot, nt))
            if caveat is None:
                self.reject(
                    path,
                    type_rule or Rule.FIELD_TYPE_CHANGED,
                    f"{reuse_prefix}type changed {self._describe(of, self.old)} -> "
                    f"{self._describe(nf, self.new)}",
                )
                type_ok = False
            else:
                self.note(
                    f"field {path} ({of.number}) type changed "
                    f"{_SCALAR_NAMES[ot]} -> {_SCALAR_NAMES[nt]}: {caveat}"
                )
        if not type_ok:
            return
        if renamed:
            self.note(
                f"field {path} ({of.number}) renamed to '{nf.name}' "
                "(wire-identical; only JSON/text encodings use field names)"
            )
        oj, nj = _json_name(of), _json_name(nf)
        if oj != nj:
            self.note(f"field {path} ({of.number}) JSON name changed '{oj}' -> '{nj}' (affects JSON only)")

        # required / default / presence / packed --------------------------
        if _is_required(nf) and not _is_required(of):
            self.reject(
                path,
                Rule.FIELD_BECAME_REQUIRED,
                f"field '{of.name}' became required; stored values may lack it",
            )
        elif _is_required(of) and not _is_required(nf):
            self.note(f"field {path} ({of.number}) is no longer required")

        if of.default_value != nf.default_value:
            self.reject(
                path,
                Rule.FIELD_DEFAULT_CHANGED,
                f"default value changed {of.default_value!r} -> {nf.default_value!r}; "
                "absent values in stored state would read differently",
            )

        if oc == "singular":
            op = self._presence(of, old)
            np_ = self._presence(nf, new)
            if op != np_:
                self.note(
                    f"field {path} ({of.number}) presence changed {op} -> {np_} "
                    "(wire-compatible; an explicitly stored default may read as unset)"
                )
        elif oc == "repeated" and ot in _PACKABLE:
            opk, npk = self._packed(of, old), self._packed(nf, new)
            if opk != npk:
                self.note(
                    f"field {path} ({of.number}) packed encoding changed {opk} -> {npk} "
                    "(parsers accept both encodings)"
                )

        # oneof membership ---------------------------------------------------
        oo, no = _real_oneof(old.proto, of), _real_oneof(new.proto, nf)
        if oo == no:
            return
        if no is None:
            self.note(f"field {path} ({of.number}) left oneof '{oo}'")
            return
        old_by_number = {f.number: f for f in old.proto.field}
        clash = []
        for other in new.proto.field:
            if other.number == nf.number or _real_oneof(new.proto, other) != no:
                continue
            prev = old_by_number.get(other.number)
            if prev is not None and (oo is None or _real_oneof(old.proto, prev) != oo):
                clash.append(prev.name)
        if clash:
            self.reject(
                path,
                Rule.ONEOF_CHANGED,
                f"field '{of.name}' moved into oneof '{no}' together with previously independent "
                f"field(s) {', '.join(sorted(clash))}; stored values may set several of them",
            )
        else:
            self.note(f"field {path} ({of.number}) moved into oneof '{no}' (alone: wire-identical)")

    @staticmethod
    def _presence(f: descriptor_pb2.FieldDescriptorProto, m: _Msg) -> str:
        if f.type in (_FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP) or f.HasField("oneof_index"):
            return "explicit"
        syntax = _syntax(m.file)
        if syntax == "proto3":
            return "implicit"
        if syntax == "editions":
            for features in (f.options.features, m.file.options.features):
                if features.HasField("field_presence"):
                    if features.field_presence == descriptor_pb2.FeatureSet.IMPLICIT:
                        return "implicit"
                    return "explicit"
        return "explicit"

    @staticmethod
    def _packed(f: descriptor_pb2.FieldDescriptorProto, m: _Msg) -> bool:
        if f.options.HasField("packed"):
            return f.options.packed
        syntax = _syntax(m.file)
        if syntax == "editions":
            for features in (f.options.features, m.file.options.features):
                if features.HasField("repeated_field_encoding"):
                    return features.repeated_field_encoding == descriptor_pb2.FeatureSet.PACKED
            return True
        return syntax == "proto3"


def check_compatibility(
    old: _DescriptorSetLike,
    new: _DescriptorSetLike,
    message: str | None = None,
) -> CompatibilityResult:
    """Check that state written with ``old`` descriptors is readable with ``new``.

    Args:
        old: the ``FileDescriptorSet`` (or its serialized bytes) the state was
            written with.
        new: the ``FileDescriptorSet`` (or its serialized bytes) of the new job.
        message: fully-qualified name of the root type held in state (leading
            dot optional).  Only that type and the types it references are
            checked.  ``None`` checks every message and enum defined in ``old``.

    Returns:
        A :class:`CompatibilityResult`; ``bool(result)`` tells the verdict.

    Raises:
        ValueError: ``message`` is not defined in ``old`` or the bytes are not
            a ``FileDescriptorSet``.
        TypeError: ``old``/``new`` has an unsupported type.
    """
    old_set = _coerce(old, "old")
    new_set = _coerce(new, "new")
    checker = _Checker(old_set, new_set)
    root = _strip(message) if message else None
    if root is not None:
        if root not in checker.old.messages:
            raise ValueError(f"message {root!r} is not defined in the old descriptor set")
        checker.check_message(root)
    else:
        checker.check_all()
    return CompatibilityResult(reasons=checker.reasons, notes=checker.notes, message=root)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m serdes.protobuf.compat",
        description=(
            "Check that protobuf state written with OLD descriptors can be restored "
            "with NEW descriptors. Exit 0 compatible, 1 incompatible, 2 usage error."
        ),
    )
    p.add_argument("old", help="FileDescriptorSet the state was written with (protoc --include_imports -o)")
    p.add_argument("new", help="FileDescriptorSet of the new schema")
    p.add_argument("--message", "-m", help="fully-qualified root message type held in state")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse usage errors / --help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        old = load_descriptor_set(args.old)
        new = load_descriptor_set(args.new)
        result = check_compatibility(old, new, args.message)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result)
    return 0 if result.compatible else 1


if __name__ == "__main__":
    sys.exit(main())
