from irforge.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TextRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEXT_ROLE_UNSPECIFIED: _ClassVar[TextRole]
    TEXT_ROLE_QUERY: _ClassVar[TextRole]
    TEXT_ROLE_PASSAGE: _ClassVar[TextRole]
TEXT_ROLE_UNSPECIFIED: TextRole
TEXT_ROLE_QUERY: TextRole
TEXT_ROLE_PASSAGE: TextRole

class EncodeRequest(_message.Message):
    __slots__ = ("model", "texts", "role")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    model: str
    texts: _containers.RepeatedScalarFieldContainer[str]
    role: TextRole
    def __init__(self, model: _Optional[str] = ..., texts: _Optional[_Iterable[str]] = ..., role: _Optional[_Union[TextRole, str]] = ...) -> None: ...

class EncodeResponse(_message.Message):
    __slots__ = ("count", "dimension", "vectors", "sparse")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    SPARSE_FIELD_NUMBER: _ClassVar[int]
    count: int
    dimension: int
    vectors: bytes
    sparse: _common_pb2.SparseVectors
    def __init__(self, count: _Optional[int] = ..., dimension: _Optional[int] = ..., vectors: _Optional[bytes] = ..., sparse: _Optional[_Union[_common_pb2.SparseVectors, _Mapping]] = ...) -> None: ...

class DescribeModelRequest(_message.Message):
    __slots__ = ("model",)
    MODEL_FIELD_NUMBER: _ClassVar[int]
    model: str
    def __init__(self, model: _Optional[str] = ...) -> None: ...

class ModelDescription(_message.Message):
    __slots__ = ("model", "dimension", "distance", "identity_json", "kind")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_JSON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    model: str
    dimension: int
    distance: str
    identity_json: str
    kind: str
    def __init__(self, model: _Optional[str] = ..., dimension: _Optional[int] = ..., distance: _Optional[str] = ..., identity_json: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...
