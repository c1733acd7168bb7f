"""The compatibility checker: compares the old and the new definition of every type reachable
from the root (or of every type), recording incompatibilities and notes."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

from .._descriptor_sets import DescriptorSetLike, as_descriptor_set
from ._compat_rules import WIRE_COMPATIBLE_TYPE_CHANGES, Rule
from ._index import (
    NAMED_TYPES, PACKABLE, SCALAR_NAMES, DescriptorIndex, EnumDef, MessageDef, is_required, is_reserved,
    json_name, real_oneof, strip_dot, syntax_of,
)
from ._results import CompatibilityResult, Incompatibility

__all__ = ["Checker", "check_compatibility"]

_FDP = descriptor_pb2.FieldDescriptorProto


class Checker:
    """One comparison of an old and a new descriptor set: ``check_message`` / ``check_enum`` /
    ``check_all`` fill ``reasons`` (incompatibilities) and ``notes`` (accepted changes), each type
    compared once."""

    def __init__(
        self, old: descriptor_pb2.FileDescriptorSet, new: descriptor_pb2.FileDescriptorSet
    ) -> None:
        self.old = DescriptorIndex(old)
        self.new = DescriptorIndex(new)
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

    def _missing_type(self, kind: str, old: MessageDef | EnumDef, removed_rule: str) -> None:
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
        if isinstance(old, MessageDef):
            sig = self._signature(old.proto, self.old)
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
    def _signature(m: descriptor_pb2.DescriptorProto, index: DescriptorIndex) -> tuple[Any, ...]:
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
        if syntax_of(old.file) != syntax_of(new.file):
            self.note(
                f"file {old.file.name}: syntax changed {syntax_of(old.file)} -> {syntax_of(new.file)}"
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

    def _compare_fields(self, old: MessageDef, new: MessageDef) -> None:
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
                if is_reserved(nm, of.number):
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
            if is_reserved(om, nf.number):
                self.reject(
                    path,
                    Rule.RESERVED_NUMBER_REUSED,
                    f"field '{nf.name}' uses number {nf.number}, which the old schema reserved "
                    "(a removed field's values may still be in stored state)",
                )
            elif is_required(nf):
                self.reject(
                    path,
                    Rule.REQUIRED_FIELD_ADDED,
                    f"required field '{nf.name}' ({nf.number}) added; stored values lack it",
                )
            else:
                if nf.name in om.reserved_name:
                    self.note(f"field {path} ({nf.number}) reuses a reserved name")
                self.note(f"field {path} ({nf.number}) added")

    def _cardinality(self, f: descriptor_pb2.FieldDescriptorProto, index: DescriptorIndex) -> str:
        if f.label != _FDP.LABEL_REPEATED:
            return "singular"
        return "map" if index.is_map(f) else "repeated"

    def _describe(self, f: descriptor_pb2.FieldDescriptorProto, index: DescriptorIndex) -> str:
        t = index.field_type(f)
        if t in NAMED_TYPES:
            base = strip_dot(f.type_name)
            if t == _FDP.TYPE_GROUP:
                base = f"group {base}"
        else:
            base = SCALAR_NAMES.get(t, str(t))
        card = self._cardinality(f, index)
        return base if card == "singular" else f"{card} {base}"

    def _compare_field(
        self,
        old: MessageDef,
        new: MessageDef,
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
        if ot == nt and ot in NAMED_TYPES:
            on, nn = strip_dot(of.type_name), strip_dot(nf.type_name)
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
                    f"{SCALAR_NAMES[ot]} -> {SCALAR_NAMES[nt]}: {caveat}"
                )
        if not type_ok:
            return
        if renamed:
            self.note(
                f"field {path} ({of.number}) renamed to '{nf.name}' "
                "(wire-identical; only JSON/text encodings use field names)"
            )
        oj, nj = json_name(of), json_name(nf)
        if oj != nj:
            self.note(f"field {path} ({of.number}) JSON name changed '{oj}' -> '{nj}' (affects JSON only)")

        # required / default / presence / packed --------------------------
        if is_required(nf) and not is_required(of):
            self.reject(
                path,
                Rule.FIELD_BECAME_REQUIRED,
                f"field '{of.name}' became required; stored values may lack it",
            )
        elif is_required(of) and not is_required(nf):
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
        elif oc == "repeated" and ot in PACKABLE:
            opk, npk = self._packed(of, old), self._packed(nf, new)
            if opk != npk:
                self.note(
                    f"field {path} ({of.number}) packed encoding changed {opk} -> {npk} "
                    "(parsers accept both encodings)"
                )

        # oneof membership ---------------------------------------------------
        oo, no = real_oneof(old.proto, of), real_oneof(new.proto, nf)
        if oo == no:
            return
        if no is None:
            self.note(f"field {path} ({of.number}) left oneof '{oo}'")
            return
        old_by_number = {f.number: f for f in old.proto.field}
        clash = []
        for other in new.proto.field:
            if other.number == nf.number or real_oneof(new.proto, other) != no:
                continue
            prev = old_by_number.get(other.number)
            if prev is not None and (oo is None or real_oneof(old.proto, prev) != oo):
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
    def _presence(f: descriptor_pb2.FieldDescriptorProto, m: MessageDef) -> str:
        if f.type in (_FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP) or f.HasField("oneof_index"):
            return "explicit"
        syntax = syntax_of(m.file)
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
    def _packed(f: descriptor_pb2.FieldDescriptorProto, m: MessageDef) -> bool:
        if f.options.HasField("packed"):
            return f.options.packed
        syntax = syntax_of(m.file)
        if syntax == "editions":
            for features in (f.options.features, m.file.options.features):
                if features.HasField("repeated_field_encoding"):
                    return features.repeated_field_encoding == descriptor_pb2.FeatureSet.PACKED
            return True
        return syntax == "proto3"


def check_compatibility(
    old: DescriptorSetLike,
    new: DescriptorSetLike,
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
    old_set = as_descriptor_set(old, "old")
    new_set = as_descriptor_set(new, "new")
    checker = Checker(old_set, new_set)
    root = strip_dot(message) if message else None
    if root is not None:
        if root not in checker.old.messages:
            raise ValueError(f"message {root!r} is not defined in the old descriptor set"
                             + _did_you_mean(root, checker.old.messages))
        checker.check_message(root)
    else:
        checker.check_all()
    return CompatibilityResult(reasons=checker.reasons, notes=checker.notes, message=root)


def _did_you_mean(name: str, defined: dict[str, Any]) -> str:
    """The hint for a root name that is not defined: the defined messages it is the end of
    (``Order`` -> ``shop.Order``: names are fully qualified, package included), else those with
    the same last part (``other.Order`` -> ``shop.Order``); empty when there is none."""
    matches = sorted(n for n in defined if n.endswith("." + name))
    if not matches:
        last = name.rsplit(".", 1)[-1]
        matches = sorted(n for n in defined if n.rsplit(".", 1)[-1] == last)
    if not matches:
        return ""
    return "; message names are fully qualified: did you mean " + " or ".join(map(repr, matches[:5])) + "?"
