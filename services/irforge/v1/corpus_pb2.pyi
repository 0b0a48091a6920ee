from irforge.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CorpusState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORPUS_STATE_UNSPECIFIED: _ClassVar[CorpusState]
    CORPUS_STATE_EMPTY: _ClassVar[CorpusState]
    CORPUS_STATE_READY: _ClassVar[CorpusState]
CORPUS_STATE_UNSPECIFIED: CorpusState
CORPUS_STATE_EMPTY: CorpusState
CORPUS_STATE_READY: CorpusState

class HnswSettings(_message.Message):
    __slots__ = ("m", "ef_construct", "ef_search")
    M_FIELD_NUMBER: _ClassVar[int]
    EF_CONSTRUCT_FIELD_NUMBER: _ClassVar[int]
    EF_SEARCH_FIELD_NUMBER: _ClassVar[int]
    m: int
    ef_construct: int
    ef_search: int
    def __init__(self, m: _Optional[int] = ..., ef_construct: _Optional[int] = ..., ef_search: _Optional[int] = ...) -> None: ...

class CreateVectorCollectionRequest(_message.Message):
    __slots__ = ("collection_id", "dimension", "distance", "fingerprint", "hnsw")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    HNSW_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    dimension: int
    distance: str
    fingerprint: str
    hnsw: HnswSettings
    def __init__(self, collection_id: _Optional[str] = ..., dimension: _Optional[int] = ..., distance: _Optional[str] = ..., fingerprint: _Optional[str] = ..., hnsw: _Optional[_Union[HnswSettings, _Mapping]] = ...) -> None: ...

class GetVectorCollectionRequest(_message.Message):
    __slots__ = ("collection_id",)
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    def __init__(self, collection_id: _Optional[str] = ...) -> None: ...

class VectorCollectionInfo(_message.Message):
    __slots__ = ("collection_id", "dimension", "distance", "fingerprint", "state", "point_count", "backend", "config_json")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    POINT_COUNT_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    dimension: int
    distance: str
    fingerprint: str
    state: CorpusState
    point_count: int
    backend: str
    config_json: str
    def __init__(self, collection_id: _Optional[str] = ..., dimension: _Optional[int] = ..., distance: _Optional[str] = ..., fingerprint: _Optional[str] = ..., state: _Optional[_Union[CorpusState, str]] = ..., point_count: _Optional[int] = ..., backend: _Optional[str] = ..., config_json: _Optional[str] = ...) -> None: ...

class UpsertVectorsRequest(_message.Message):
    __slots__ = ("collection_id", "doc_ids", "dimension", "vectors")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_IDS_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    doc_ids: _containers.RepeatedScalarFieldContainer[str]
    dimension: int
    vectors: bytes
    def __init__(self, collection_id: _Optional[str] = ..., doc_ids: _Optional[_Iterable[str]] = ..., dimension: _Optional[int] = ..., vectors: _Optional[bytes] = ...) -> None: ...

class UpsertVectorsResponse(_message.Message):
    __slots__ = ("upserted",)
    UPSERTED_FIELD_NUMBER: _ClassVar[int]
    upserted: int
    def __init__(self, upserted: _Optional[int] = ...) -> None: ...

class VectorSearchRequest(_message.Message):
    __slots__ = ("collection_id", "dimension", "vectors", "query_ids", "k", "exact")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    QUERY_IDS_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    dimension: int
    vectors: bytes
    query_ids: _containers.RepeatedScalarFieldContainer[str]
    k: int
    exact: bool
    def __init__(self, collection_id: _Optional[str] = ..., dimension: _Optional[int] = ..., vectors: _Optional[bytes] = ..., query_ids: _Optional[_Iterable[str]] = ..., k: _Optional[int] = ..., exact: _Optional[bool] = ...) -> None: ...

class CreateSparseCollectionRequest(_message.Message):
    __slots__ = ("collection_id", "vocabulary", "fingerprint")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VOCABULARY_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    vocabulary: int
    fingerprint: str
    def __init__(self, collection_id: _Optional[str] = ..., vocabulary: _Optional[int] = ..., fingerprint: _Optional[str] = ...) -> None: ...

class UpsertSparseVectorsRequest(_message.Message):
    __slots__ = ("collection_id", "doc_ids", "vectors")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_IDS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    doc_ids: _containers.RepeatedScalarFieldContainer[str]
    vectors: _common_pb2.SparseVectors
    def __init__(self, collection_id: _Optional[str] = ..., doc_ids: _Optional[_Iterable[str]] = ..., vectors: _Optional[_Union[_common_pb2.SparseVectors, _Mapping]] = ...) -> None: ...

class SparseSearchRequest(_message.Message):
    __slots__ = ("collection_id", "query_ids", "vectors", "k")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_IDS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    collection_id: str
    query_ids: _containers.RepeatedScalarFieldContainer[str]
    vectors: _common_pb2.SparseVectors
    k: int
    def __init__(self, collection_id: _Optional[str] = ..., query_ids: _Optional[_Iterable[str]] = ..., vectors: _Optional[_Union[_common_pb2.SparseVectors, _Mapping]] = ..., k: _Optional[int] = ...) -> None: ...

class Bm25Settings(_message.Message):
    __slots__ = ("k1", "b", "language")
    K1_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    k1: float
    b: float
    language: str
    def __init__(self, k1: _Optional[float] = ..., b: _Optional[float] = ..., language: _Optional[str] = ...) -> None: ...

class CreateCorpusRequest(_message.Message):
    __slots__ = ("corpus_id", "fingerprint", "bm25")
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    BM25_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    fingerprint: str
    bm25: Bm25Settings
    def __init__(self, corpus_id: _Optional[str] = ..., fingerprint: _Optional[str] = ..., bm25: _Optional[_Union[Bm25Settings, _Mapping]] = ...) -> None: ...

class CorpusInfo(_message.Message):
    __slots__ = ("corpus_id", "fingerprint", "state", "document_count", "backend", "config_json")
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    fingerprint: str
    state: CorpusState
    document_count: int
    backend: str
    config_json: str
    def __init__(self, corpus_id: _Optional[str] = ..., fingerprint: _Optional[str] = ..., state: _Optional[_Union[CorpusState, str]] = ..., document_count: _Optional[int] = ..., backend: _Optional[str] = ..., config_json: _Optional[str] = ...) -> None: ...

class GetCorpusRequest(_message.Message):
    __slots__ = ("corpus_id",)
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    def __init__(self, corpus_id: _Optional[str] = ...) -> None: ...

class DeleteCorpusRequest(_message.Message):
    __slots__ = ("corpus_id",)
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    def __init__(self, corpus_id: _Optional[str] = ...) -> None: ...

class DeleteCorpusResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class IngestRequest(_message.Message):
    __slots__ = ("corpus_id", "documents", "commit")
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    commit: bool
    def __init__(self, corpus_id: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ..., commit: _Optional[bool] = ...) -> None: ...

class DocumentError(_message.Message):
    __slots__ = ("doc_id", "message")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    message: str
    def __init__(self, doc_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class IngestProgress(_message.Message):
    __slots__ = ("received", "indexed", "failed", "errors", "committed")
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    received: int
    indexed: int
    failed: int
    errors: _containers.RepeatedCompositeFieldContainer[DocumentError]
    committed: bool
    def __init__(self, received: _Optional[int] = ..., indexed: _Optional[int] = ..., failed: _Optional[int] = ..., errors: _Optional[_Iterable[_Union[DocumentError, _Mapping]]] = ..., committed: _Optional[bool] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("corpus_id", "query", "k")
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    query: _common_pb2.Query
    k: int
    def __init__(self, corpus_id: _Optional[str] = ..., query: _Optional[_Union[_common_pb2.Query, _Mapping]] = ..., k: _Optional[int] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("query_id", "hits")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    hits: _containers.RepeatedCompositeFieldContainer[_common_pb2.ScoredDocument]
    def __init__(self, query_id: _Optional[str] = ..., hits: _Optional[_Iterable[_Union[_common_pb2.ScoredDocument, _Mapping]]] = ...) -> None: ...

class BatchSearchRequest(_message.Message):
    __slots__ = ("corpus_id", "queries", "k")
    CORPUS_ID_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    corpus_id: str
    queries: _containers.RepeatedCompositeFieldContainer[_common_pb2.Query]
    k: int
    def __init__(self, corpus_id: _Optional[str] = ..., queries: _Optional[_Iterable[_Union[_common_pb2.Query, _Mapping]]] = ..., k: _Optional[int] = ...) -> None: ...
