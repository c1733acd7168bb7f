"""The import path earlier releases defined serdes' typed-stream classes in.

Type infos (``_typeinfo.py``), the descriptor codec (``_descriptor_codec.py``), typed state
(``_typed_state.py``), the function wrappers (``_wrappers.py``) and typed streams
(``_typed_stream.py``) each have a module of their own now. Pickles -- job graphs, pickled state --
name a class or function by module and name: the pickled ones now name the package
(``_pickling.py``), and this module re-exports them under the names earlier releases' pickles
look them up by.
"""

from __future__ import annotations

from ._descriptor_codec import _DescriptorDecoder, file_descriptor_set
from ._typed_state import CodecValueState, ProtobufValueStateDescriptor, get_typed_state
from ._typed_stream import KeyedTypedStream, TypedStream
from ._typeinfo import BytesCodecTypeInfo, DynamicProtobufTypeInformation, ProtobufTypeInformation
from ._wrappers import (
    _Delegating,
    _FilterWrapper,
    _FlatMapWrapper,
    _identity,
    _KeyedProcessWrapper,
    _KeySelectorWrapper,
    _MapWrapper,
    _ProcessWrapper,
)

__all__ = [
    "BytesCodecTypeInfo",
    "CodecValueState",
    "DynamicProtobufTypeInformation",
    "KeyedTypedStream",
    "ProtobufTypeInformation",
    "ProtobufValueStateDescriptor",
    "TypedStream",
    "file_descriptor_set",
    "get_typed_state",
    # pickled by name (see the module docstring)
    "_DescriptorDecoder",
    "_Delegating",
    "_FilterWrapper",
    "_FlatMapWrapper",
    "_identity",
    "_KeyedProcessWrapper",
    "_KeySelectorWrapper",
    "_MapWrapper",
    "_ProcessWrapper",
]
