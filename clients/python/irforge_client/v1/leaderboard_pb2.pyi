from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegisterDatasetRequest(_message.Message):
    __slots__ = ("name", "source", "split", "task", "main_metric", "language", "open", "per_query")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    MAIN_METRIC_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    name: str
    source: str
    split: str
    task: str
    main_metric: str
    language: str
    open: bool
    per_query: str
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ..., split: _Optional[str] = ..., task: _Optional[str] = ..., main_metric: _Optional[str] = ..., language: _Optional[str] = ..., open: _Optional[bool] = ..., per_query: _Optional[str] = ...) -> None: ...

class Dataset(_message.Message):
    __slots__ = ("name", "split", "task", "main_metric", "language", "closed", "per_query", "created", "queries", "documents", "corpus_sha256", "candidates_sha256", "candidates_depth", "bm25_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    MAIN_METRIC_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    CORPUS_SHA256_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_SHA256_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_DEPTH_FIELD_NUMBER: _ClassVar[int]
    BM25_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    split: str
    task: str
    main_metric: str
    language: str
    closed: bool
    per_query: str
    created: str
    queries: int
    documents: int
    corpus_sha256: str
    candidates_sha256: str
    candidates_depth: int
    bm25_json: str
    def __init__(self, name: _Optional[str] = ..., split: _Optional[str] = ..., task: _Optional[str] = ..., main_metric: _Optional[str] = ..., language: _Optional[str] = ..., closed: _Optional[bool] = ..., per_query: _Optional[str] = ..., created: _Optional[str] = ..., queries: _Optional[int] = ..., documents: _Optional[int] = ..., corpus_sha256: _Optional[str] = ..., candidates_sha256: _Optional[str] = ..., candidates_depth: _Optional[int] = ..., bm25_json: _Optional[str] = ...) -> None: ...

class ListDatasetsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDatasetsResponse(_message.Message):
    __slots__ = ("datasets",)
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    datasets: _containers.RepeatedCompositeFieldContainer[Dataset]
    def __init__(self, datasets: _Optional[_Iterable[_Union[Dataset, _Mapping]]] = ...) -> None: ...

class CandidatesRequest(_message.Message):
    __slots__ = ("dataset",)
    DATASET_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    def __init__(self, dataset: _Optional[str] = ...) -> None: ...

class FileChunk(_message.Message):
    __slots__ = ("data", "last")
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    last: bool
    def __init__(self, data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("dataset", "system", "category", "kind", "data")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    system: str
    category: str
    kind: str
    data: bytes
    def __init__(self, dataset: _Optional[str] = ..., system: _Optional[str] = ..., category: _Optional[str] = ..., kind: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ListSubmissionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSubmissionsResponse(_message.Message):
    __slots__ = ("submissions",)
    SUBMISSIONS_FIELD_NUMBER: _ClassVar[int]
    submissions: _containers.RepeatedCompositeFieldContainer[Submission]
    def __init__(self, submissions: _Optional[_Iterable[_Union[Submission, _Mapping]]] = ...) -> None: ...

class SubmissionRef(_message.Message):
    __slots__ = ("submission_id",)
    SUBMISSION_ID_FIELD_NUMBER: _ClassVar[int]
    submission_id: str
    def __init__(self, submission_id: _Optional[str] = ...) -> None: ...

class Submission(_message.Message):
    __slots__ = ("submission_id", "team", "system", "category", "dataset", "kind", "fingerprint", "size", "created", "job_id", "state", "error", "metrics", "main_metric", "per_query")
    class MetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class PerQueryEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SUBMISSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    MAIN_METRIC_FIELD_NUMBER: _ClassVar[int]
    PER_QUERY_FIELD_NUMBER: _ClassVar[int]
    submission_id: str
    team: str
    system: str
    category: str
    dataset: str
    kind: str
    fingerprint: str
    size: int
    created: str
    job_id: str
    state: str
    error: str
    metrics: _containers.ScalarMap[str, float]
    main_metric: str
    per_query: _containers.ScalarMap[str, float]
    def __init__(self, submission_id: _Optional[str] = ..., team: _Optional[str] = ..., system: _Optional[str] = ..., category: _Optional[str] = ..., dataset: _Optional[str] = ..., kind: _Optional[str] = ..., fingerprint: _Optional[str] = ..., size: _Optional[int] = ..., created: _Optional[str] = ..., job_id: _Optional[str] = ..., state: _Optional[str] = ..., error: _Optional[str] = ..., metrics: _Optional[_Mapping[str, float]] = ..., main_metric: _Optional[str] = ..., per_query: _Optional[_Mapping[str, float]] = ...) -> None: ...

class BoardRequest(_message.Message):
    __slots__ = ("category", "datasets", "language", "task", "since", "until", "baseline", "text_format")
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FORMAT_FIELD_NUMBER: _ClassVar[int]
    category: str
    datasets: _containers.RepeatedScalarFieldContainer[str]
    language: str
    task: str
    since: str
    until: str
    baseline: str
    text_format: str
    def __init__(self, category: _Optional[str] = ..., datasets: _Optional[_Iterable[str]] = ..., language: _Optional[str] = ..., task: _Optional[str] = ..., since: _Optional[str] = ..., until: _Optional[str] = ..., baseline: _Optional[str] = ..., text_format: _Optional[str] = ...) -> None: ...

class BoardResponse(_message.Message):
    __slots__ = ("board_json", "board_text")
    BOARD_JSON_FIELD_NUMBER: _ClassVar[int]
    BOARD_TEXT_FIELD_NUMBER: _ClassVar[int]
    board_json: str
    board_text: str
    def __init__(self, board_json: _Optional[str] = ..., board_text: _Optional[str] = ...) -> None: ...
