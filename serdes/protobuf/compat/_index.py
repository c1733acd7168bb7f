"""An index over a FileDescriptorSet (full name -> message or enum definition) and the facts about
descriptor protos the compatibility rules read (field type, cardinality, presence, oneof, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import descriptor_pb2

__all__ = [
    "NAMED_TYPES", "PACKABLE", "SCALAR_NAMES", "DescriptorIndex", "EnumDef", "MessageDef", "is_required", "is_reserved",
    "json_name", "real_oneof", "strip_dot", "syntax_of",
]

_FDP = descriptor_pb2.FieldDescriptorProto

#: field type number -> its name in messages ("int32", "message", ...)
SCALAR_NAMES: dict[int, str] = {
    int(value): name[len("TYPE_") :].lower()
    for name, value in _FDP.Type.items()
}
PACKABLE = {
    t
    for t in SCALAR_NAMES
    if t not in (_FDP.TYPE_STRING, _FDP.TYPE_BYTES, _FDP.TYPE_MESSAGE, _FDP.TYPE_GROUP)
}
NAMED_TYPES = (_FDP.TYPE_MESSAGE, _FDP.TYPE_ENUM, _FDP.TYPE_GROUP)


@dataclass
class _Definition:
    name: str  #: the full name
    file: descriptor_pb2.FileDescriptorProto

    @property
    def relative(self) -> str:
        """The name without its package."""
        pkg = self.file.package
        return self.name[len(pkg) + 1 :] if pkg else self.name


@dataclass
class MessageDef(_Definition):
    proto: descriptor_pb2.DescriptorProto


@dataclass
class EnumDef(_Definition):
    proto: descriptor_pb2.EnumDescriptorProto


class DescriptorIndex:
    """The messages and enums of a descriptor set by full name (nested ones included; the first
    definition of a name wins)."""

    def __init__(self, fds: descriptor_pb2.FileDescriptorSet) -> None:
        self.messages: dict[str, MessageDef] = {}
        self.enums: dict[str, EnumDef] = {}
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
        self.messages.setdefault(name, MessageDef(name, f, m))
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
        self.enums.setdefault(name, EnumDef(name, f, e))

    def field_type(self, f: descriptor_pb2.FieldDescriptorProto) -> int:
        if f.type:
            return f.type
        # unresolved descriptor (type left unset): resolve through the index
        name = strip_dot(f.type_name)
        if name in self.enums:
            return _FDP.TYPE_ENUM
        return _FDP.TYPE_MESSAGE

    def is_map(self, f: descriptor_pb2.FieldDescriptorProto) -> bool:
        if f.label != _FDP.LABEL_REPEATED or self.field_type(f) != _FDP.TYPE_MESSAGE:
            return False
        entry = self.messages.get(strip_dot(f.type_name))
        return entry is not None and entry.proto.options.map_entry


def strip_dot(type_name: str) -> str:
    return type_name[1:] if type_name.startswith(".") else type_name


def syntax_of(f: descriptor_pb2.FileDescriptorProto) -> str:
    return f.syntax or "proto2"


def json_name(f: descriptor_pb2.FieldDescriptorProto) -> str:
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


def is_reserved(m: descriptor_pb2.DescriptorProto, number: int) -> bool:
    # DescriptorProto.ReservedRange.end is exclusive
    return any(r.start <= number < r.end for r in m.reserved_range)


def is_required(f: descriptor_pb2.FieldDescriptorProto) -> bool:
    if f.label == _FDP.LABEL_REQUIRED:
        return True
    features = f.options.features
    return features.HasField("field_presence") and (
        features.field_presence == descriptor_pb2.FeatureSet.LEGACY_REQUIRED
    )


def real_oneof(m: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
    if not f.HasField("oneof_index") or f.proto3_optional:
        return None
    if f.oneof_index < len(m.oneof_decl):
        name: str = m.oneof_decl[f.oneof_index].name
        return name
    return None  # pragma: no cover - malformed descriptor
