from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ScoredDocument(_message.Message):
    __slots__ = ("doc_id", "score")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    score: float
    def __init__(self, doc_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class RunEntry(_message.Message):
    __slots__ = ("query_id", "doc_id", "score")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    doc_id: str
    score: float
    def __init__(self, query_id: _Optional[str] = ..., doc_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class Judgement(_message.Message):
    __slots__ = ("query_id", "doc_id", "relevance")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    doc_id: str
    relevance: int
    def __init__(self, query_id: _Optional[str] = ..., doc_id: _Optional[str] = ..., relevance: _Optional[int] = ...) -> None: ...

class Query(_message.Message):
    __slots__ = ("query_id", "text")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    text: str
    def __init__(self, query_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("doc_id", "title", "text", "metadata_json")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    title: str
    text: str
    metadata_json: str
    def __init__(self, doc_id: _Optional[str] = ..., title: _Optional[str] = ..., text: _Optional[str] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class SparseVectors(_message.Message):
    __slots__ = ("terms", "indices", "weights")
    TERMS_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    terms: _containers.RepeatedScalarFieldContainer[int]
    indices: bytes
    weights: bytes
    def __init__(self, terms: _Optional[_Iterable[int]] = ..., indices: _Optional[bytes] = ..., weights: _Optional[bytes] = ...) -> None: ...
