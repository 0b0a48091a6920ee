from irforge.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetrieverSearchRequest(_message.Message):
    __slots__ = ("query_id", "query", "k", "instruction")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    query: str
    k: int
    instruction: str
    def __init__(self, query_id: _Optional[str] = ..., query: _Optional[str] = ..., k: _Optional[int] = ..., instruction: _Optional[str] = ...) -> None: ...

class RetrieverSearchResponse(_message.Message):
    __slots__ = ("query_id", "hits")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScoredDocument]
    def __init__(self, query_id: _Optional[str] = ..., hits: _Optional[_Iterable[_Union[_common_pb2.ScoredDocument, _Mapping]]] = ...) -> None: ...
