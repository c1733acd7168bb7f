"""The rule table of the compatibility check: the rule identifiers an incompatibility reports, and
the field type changes accepted because every old value decodes unchanged (see
``docs/protobuf-compat.md`` for the policy with examples)."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

__all__ = ["Rule", "WIRE_COMPATIBLE_TYPE_CHANGES"]

_FDP = descriptor_pb2.FieldDescriptorProto


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
