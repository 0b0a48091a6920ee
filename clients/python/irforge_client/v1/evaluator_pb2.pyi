from irforge_client.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EvaluateOptions(_message.Message):
    __slots__ = ("measures", "drop_identical_ids", "complete", "relevance_level", "max_docs_per_query", "per_query")
    MEASURES_FIELD_NUMBER: _ClassVar[int]
    DROP_IDENTICAL_IDS_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MAX_DOCS_PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    measures: _containers.RepeatedScalarFieldContainer[str]
    drop_identical_ids: bool
    complete: bool
    relevance_level: int
    max_docs_per_query: int
    per_query: bool
    def __init__(self, measures: _Optional[_Iterable[str]] = ..., drop_identical_ids: _Optional[bool] = ..., complete: _Optional[bool] = ..., relevance_level: _Optional[int] = ..., max_docs_per_query: _Optional[int] = ..., per_query: _Optional[bool] = ...) -> None: ...

class EvaluateRequest(_message.Message):
    __slots__ = ("options", "qrels", "run")
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    QRELS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    options: EvaluateOptions
    qrels: QrelsChunk
    run: RunChunk
    def __init__(self, options: _Optional[_Union[EvaluateOptions, _Mapping]] = ..., qrels: _Optional[_Union[QrelsChunk, _Mapping]] = ..., run: _Optional[_Union[RunChunk, _Mapping]] = ...) -> None: ...

class QrelsChunk(_message.Message):
    __slots__ = ("judgements",)
    JUDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    judgements: _containers.RepeatedCompositeFieldContainer[_common_pb2.Judgement]
    def __init__(self, judgements: _Optional[_Iterable[_Union[_common_pb2.Judgement, _Mapping]]] = ...) -> None: ...

class RunChunk(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_common_pb2.RunEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[_common_pb2.RunEntry, _Mapping]]] = ...) -> None: ...

class MeasureValues(_message.Message):
    __slots__ = ("values",)
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.ScalarMap[str, float]
    def __init__(self, values: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ("aggregate", "per_query", "measure_names", "queries_evaluated", "identical_ids_dropped", "applied_options", "versions")
    class PerQueryEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MeasureValues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MeasureValues, _Mapping]] = ...) -> None: ...
    class VersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    MEASURE_NAMES_FIELD_NUMBER: _ClassVar[int]
    QUERIES_EVALUATED_FIELD_NUMBER: _ClassVar[int]
    IDENTICAL_IDS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    aggregate: MeasureValues
    per_query: _containers.MessageMap[str, MeasureValues]
    measure_names: _containers.RepeatedScalarFieldContainer[str]
    queries_evaluated: int
    identical_ids_dropped: int
    applied_options: EvaluateOptions
    versions: _containers.ScalarMap[str, str]
    def __init__(self, aggregate: _Optional[_Union[MeasureValues, _Mapping]] = ..., per_query: _Optional[_Mapping[str, MeasureValues]] = ..., measure_names: _Optional[_Iterable[str]] = ..., queries_evaluated: _Optional[int] = ..., identical_ids_dropped: _Optional[int] = ..., applied_options: _Optional[_Union[EvaluateOptions, _Mapping]] = ..., versions: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListMeasuresRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMeasuresResponse(_message.Message):
    __slots__ = ("ir_measures_names", "trec_eval_names")
    IR_MEASURES_NAMES_FIELD_NUMBER: _ClassVar[int]
    TREC_EVAL_NAMES_FIELD_NUMBER: _ClassVar[int]
    ir_measures_names: _containers.RepeatedScalarFieldContainer[str]
    trec_eval_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ir_measures_names: _Optional[_Iterable[str]] = ..., trec_eval_names: _Optional[_Iterable[str]] = ...) -> None: ...
