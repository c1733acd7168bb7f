"""Protobuf schema (``.proto`` source or a base64 ``FileDescriptorProto``) -> the model of a module.

The classes describe the values ``ProtobufDeserializer(output="dict")`` produces
(:mod:`serdes.protobuf._todict`): fields with presence (message fields, ``optional``, oneof members,
proto2 singulars) are ``Optional[X] = None``; other singular fields carry the proto3 default;
repeated fields are lists, maps dicts; enums are their value names. One class per message of the
file (nested ones named ``Outer_Inner``) and per message it uses from its imports -- the
well-known types too (a ``Timestamp`` is a class of ``seconds`` and ``nanos``).

The text is parsed with serdes' own reader (:mod:`serdes.protobuf._schemas`; ``.proto`` source
through ``protoc`` in a bounded child process). Imports resolve from ``references`` (import path ->
schema text) and, for the well-known files, from the protobuf runtime; never from the file system.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from typing import Any, Deque, Dict, List, Set, Union

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.protobuf.message import DecodeError

from .._errors import SchemaMismatchError
from ..protobuf._names import check_import_name
from ..protobuf._proto_text import source_imports
from ..protobuf._schemas import in_default_pool, pool_of, schema_to_file_proto
from ..protobuf._todict import is_repeated
from ._emit import PRIMS, Budget, ClassSpec, CodegenError, EnumSpec, ListOf, MapOf, Module, Names, Opt, Prim, Type

__all__ = ["protobuf_module"]

_SCALARS: Dict[int, Type] = {}
for _t in ("DOUBLE", "FLOAT"):
    _SCALARS[getattr(FieldDescriptor, "TYPE_" + _t)] = PRIMS["float"]
for _t in ("INT64", "UINT64", "INT32", "FIXED64", "FIXED32", "UINT32", "SFIXED32", "SFIXED64", "SINT32", "SINT64"):
    _SCALARS[getattr(FieldDescriptor, "TYPE_" + _t)] = PRIMS["int"]
_SCALARS[FieldDescriptor.TYPE_BOOL] = PRIMS["bool"]
_SCALARS[FieldDescriptor.TYPE_STRING] = PRIMS["str"]
_SCALARS[FieldDescriptor.TYPE_BYTES] = PRIMS["bytes"]
# proto3 defaults, as the converters take them (bytes defaults are strings of code points 0-255)
_ZERO = {"float": 0.0, "int": 0, "bool": False, "str": "", "bytes": ""}


def _imports(text: str) -> List[str]:
    s = text.strip()
    try:
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(base64.b64decode(s, validate=True))
        return list(fdp.dependency)
    except (binascii.Error, ValueError, DecodeError):
        return source_imports(text)


def _file(text: str, references: Dict[str, str], budget: Budget) -> FileDescriptor:
    protos: Dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def load(name: str, depth: int, visiting: Set[str]) -> None:
        name = check_import_name(name, "a Protobuf import")
        if name in protos or name in visiting:
            return
        if name not in references:
            if in_default_pool(name):
                return
            raise CodegenError(f"the schema imports {name!r}, which is neither a given reference nor a well-known file")
        budget.depth(depth, f"import {name!r}")
        visiting.add(name)
        ref_text = budget.text(references[name], f"Protobuf reference {name!r}")
        for dep in _imports(ref_text):
            load(dep, depth + 1, visiting)
        protos[name] = schema_to_file_proto(name, ref_text, protos)

    text = budget.text(text, "the Protobuf schema")
    for dep in _imports(text):
        load(dep, 1, set())
    root = schema_to_file_proto(None, text, protos)
    if root.name in protos:
        root.name = "serdes_codegen_root.proto"
    pool = pool_of(protos, root, CodegenError)
    return pool.FindFileByName(root.name)


def _relative(full_name: str, package: str) -> str:
    return full_name[len(package) + 1:] if package and full_name.startswith(package + ".") else full_name


class _Builder:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.names = Names()
        self.classes: List[Union[ClassSpec, EnumSpec]] = []
        self.specs: Dict[str, Union[ClassSpec, EnumSpec]] = {}
        self.todo: Deque[Descriptor] = deque()

    def spec(self, d: Union[Descriptor, EnumDescriptor]) -> Union[ClassSpec, EnumSpec]:
        got = self.specs.get(d.full_name)
        if got is not None:
            return got
        self.budget.name(d.full_name, "a Protobuf type name")
        self.budget.add_type(d.full_name)
        rel = _relative(d.full_name, d.file.package)
        name = self.names.class_name(rel.replace(".", "_"), d.full_name.replace(".", "_"))
        s: Union[ClassSpec, EnumSpec]
        if isinstance(d, EnumDescriptor):
            e = EnumSpec(name, d.full_name)
            values = [v.name for v in d.values]
            for v in values:
                self.budget.name(v, f"a value of Protobuf enum {d.full_name!r}")
                self.budget.add_field(d.full_name)
            e.set_symbols(values)
            s = e
        else:
            s = ClassSpec(name, d.full_name)
            self.todo.append(d)
        self.specs[d.full_name] = s
        self.classes.append(s)
        return s

    def value_type(self, f: FieldDescriptor) -> Type:
        if f.message_type is not None:
            return self.spec(f.message_type)
        if f.enum_type is not None:
            return self.spec(f.enum_type)
        t = _SCALARS.get(f.type)
        if t is None:  # pragma: no cover - every field type is one of the above
            raise CodegenError(f"Protobuf field {f.full_name!r} has an unknown type {f.type}")
        return t

    def fields(self, d: Descriptor) -> None:
        c = self.specs[d.full_name]
        assert isinstance(c, ClassSpec)
        for f in d.fields:
            self.budget.add_field(f.full_name)
            md = f.message_type
            if md is not None and md.GetOptions().map_entry:
                key = self.value_type(md.fields_by_name["key"])
                value = self.value_type(md.fields_by_name["value"])
                c.add_field(f.name, MapOf(key, value), True, {})
            elif is_repeated(f):
                c.add_field(f.name, ListOf(self.value_type(f)), True, [])
            elif _has_presence(f):
                c.add_field(f.name, Opt(self.value_type(f)), True, None)
            else:
                t = self.value_type(f)
                if isinstance(t, EnumSpec):
                    default: Any = t.members[0][1] if t.members else None
                    c.add_field(f.name, t, bool(t.members), default)
                else:
                    assert isinstance(t, Prim)
                    c.add_field(f.name, t, True, _ZERO[t.code])

    def walk(self, fd: FileDescriptor) -> None:
        stack: List[Descriptor] = list(reversed(list(fd.message_types_by_name.values())))
        for e in fd.enum_types_by_name.values():
            self.spec(e)
        while stack:  # the file's messages, nested ones after their parent
            d = stack.pop()
            if d.GetOptions().map_entry:
                continue
            self.spec(d)
            for e in d.enum_types:
                self.spec(e)
            stack.extend(reversed(d.nested_types))
        while self.todo:  # fields, which add the imported types they use
            self.fields(self.todo.popleft())


def _has_presence(f: FieldDescriptor) -> bool:
    hp = getattr(f, "has_presence", None)
    if hp is not None:
        return bool(hp)
    return f.message_type is not None or f.containing_oneof is not None  # pragma: no cover


def protobuf_module(text: str, style: str, budget: Budget, references: Dict[str, str]) -> Module:
    try:
        fd = _file(text, references, budget)
    except CodegenError:
        raise
    except SchemaMismatchError as e:
        raise CodegenError(e.reason) from None
    b = _Builder(budget)
    b.walk(fd)
    if not any(isinstance(c, ClassSpec) for c in b.classes):
        raise CodegenError("the Protobuf schema defines no message to generate a class for")
    return Module("a Protobuf schema", style, b.classes)
