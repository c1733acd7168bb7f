"""Type informations whose elements travel between operators as encoded bytes.

PyFlink picks the Python worker's coder for an operator's input/output from a protobuf
*description* of the Java ``TypeInformation`` (``pyflink/fn_execution/coders.py:
from_type_info_proto``); the description has a fixed set of type names and no room for a user
coder, so ``PICKLED_BYTE_ARRAY`` means cloudpickle for every element on every hop. A
:class:`BytesCodecTypeInfo` is ``byte[]`` for Java (``Types.PRIMITIVE_ARRAY(Types.BYTE())``:
PyFlink's ``BinaryCoder`` on the Python side, ``BytePrimitiveArraySerializer`` on the Java side)
and carries the encoder/decoder that serdes' wrappers (``_wrappers.py``) apply around user
functions, so that they see message objects.

The classes name the package as their module (``_pickling.py``); ``serdes.flink._types``, where
earlier releases defined them, re-exports them for the pickles those wrote.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from google.protobuf.descriptor import Descriptor
from pyflink.common import Types
from pyflink.common.typeinfo import PrimitiveArrayTypeInfo

from ._descriptor_codec import PICKLE_MODULE, _DescriptorDecoder, file_descriptor_set

__all__ = ["BytesCodecTypeInfo", "ProtobufTypeInformation", "DynamicProtobufTypeInformation", "PICKLE_MODULE"]


class BytesCodecTypeInfo(PrimitiveArrayTypeInfo):
    """A ``TypeInformation`` that is ``byte[]`` for Java and an object for user functions.

    Subclasses provide :meth:`encoder` and :meth:`decoder` returning small picklable callables.
    """

    __module__ = PICKLE_MODULE

    def __init__(self) -> None:
        super().__init__(Types.BYTE())

    def encoder(self) -> Callable[[Any], bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def decoder(self) -> Callable[[bytes], Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__.get("_key") == other.__dict__.get("_key")

    def __hash__(self) -> int:
        return hash((type(self), self.__dict__.get("_key")))


class ProtobufTypeInformation(BytesCodecTypeInfo):
    """Protobuf messages of a generated class, carried as wire bytes (``byte[]`` in Java)."""

    __module__ = PICKLE_MODULE

    def __init__(self, message_class: type) -> None:
        super().__init__()
        self.message_class = message_class
        self._key: str = message_class.DESCRIPTOR.full_name  # type: ignore[attr-defined]

    def encoder(self) -> Callable[[Any], bytes]:
        return operator.methodcaller("SerializeToString")

    def decoder(self) -> Callable[[bytes], Any]:
        return self.message_class.FromString  # type: ignore[attr-defined, no-any-return]

    def __repr__(self) -> str:
        return f"ProtobufTypeInformation({self._key})"


class DynamicProtobufTypeInformation(BytesCodecTypeInfo):
    """Descriptor-bound variant: messages of a (possibly dynamic) descriptor.

    The descriptor travels with the job as a serialized ``FileDescriptorSet``; the worker
    rebuilds the message class once, so no generated ``_pb2`` module is needed there.
    """

    __module__ = PICKLE_MODULE

    def __init__(self, descriptor: Descriptor) -> None:
        super().__init__()
        self._key: str = descriptor.full_name
        self._fds = file_descriptor_set(descriptor)

    def encoder(self) -> Callable[[Any], bytes]:
        return operator.methodcaller("SerializeToString")

    def decoder(self) -> Callable[[bytes], Any]:
        return _DescriptorDecoder(self._fds, self._key)

    def __repr__(self) -> str:
        return f"DynamicProtobufTypeInformation({self._key})"
