# Generated from serdes/demo/orders.proto by protoc --pyi_out (grpc_tools 1.65); do not edit.
# The type stub of orders_pb2.py, whose classes are built at import and so invisible to mypy.
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Order(_message.Message):
    __slots__ = ("order_id", "customer", "amount_cents", "currency", "tags")
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOMER_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_CENTS_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    order_id: str
    customer: str
    amount_cents: int
    currency: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, order_id: _Optional[str] = ..., customer: _Optional[str] = ..., amount_cents: _Optional[int] = ..., currency: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ...) -> None: ...

class CustomerTotal(_message.Message):
    __slots__ = ("customer", "count", "total_cents")
    CUSTOMER_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CENTS_FIELD_NUMBER: _ClassVar[int]
    customer: str
    count: int
    total_cents: int
    def __init__(self, customer: _Optional[str] = ..., count: _Optional[int] = ..., total_cents: _Optional[int] = ...) -> None: ...
