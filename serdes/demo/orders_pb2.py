# -*- coding: utf-8 -*-
# Generated from serdes/demo/orders.proto (see orders.proto beside this file); do not edit.
# Built in the style of protoc's Python output so no protoc is needed.
"""Generated protocol buffer code."""
from google.protobuf import descriptor_pool as _descriptor_pool
from google.protobuf import symbol_database as _symbol_database
from google.protobuf.internal import builder as _builder

_sym_db = _symbol_database.Default()

DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(b'\n\x18serdes/demo/orders.proto\x12\x0bserdes.demo"\x91\x01\n\x05Order\x12\x19\n\x08order_id\x18\x01 \x01(\tR\x07orderId\x12\x1a\n\x08customer\x18\x02 \x01(\tR\x08customer\x12!\n\x0camount_cents\x18\x03 \x01(\x03R\x0bamountCents\x12\x1a\n\x08currency\x18\x04 \x01(\tR\x08currency\x12\x12\n\x04tags\x18\x05 \x03(\tR\x04tags"b\n\rCustomerTotal\x12\x1a\n\x08customer\x18\x01 \x01(\tR\x08customer\x12\x14\n\x05count\x18\x02 \x01(\x03R\x05count\x12\x1f\n\x0btotal_cents\x18\x03 \x01(\x03R\ntotalCentsb\x06proto3')

_globals = globals()
_builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, _globals)
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, "serdes.demo.orders_pb2", _globals)
