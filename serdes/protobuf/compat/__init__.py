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

The package: ``_checker`` (the comparison), ``_compat_rules`` (rule identifiers and the accepted
type changes), ``_index`` (a descriptor set by full name, field facts), ``_results`` (what a check
returns), ``_cli`` / ``__main__`` (the command line); loading descriptor sets is
:mod:`serdes.protobuf._descriptor_sets`.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from .._descriptor_sets import descriptor_set_for, load_descriptor_set
from ._checker import check_compatibility
from ._cli import main
from ._compat_rules import WIRE_COMPATIBLE_TYPE_CHANGES, Rule
from ._results import CompatibilityResult, Incompatibility

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

# the module attribute serdes.protobuf.compat had before it became a package
FileDescriptorSet = descriptor_pb2.FileDescriptorSet
