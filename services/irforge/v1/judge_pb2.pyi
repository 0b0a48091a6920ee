from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JudgeVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JUDGE_VERDICT_UNSPECIFIED: _ClassVar[JudgeVerdict]
    JUDGE_VERDICT_LABELLED: _ClassVar[JudgeVerdict]
    JUDGE_VERDICT_UNPARSED: _ClassVar[JudgeVerdict]
    JUDGE_VERDICT_FAILED: _ClassVar[JudgeVerdict]
JUDGE_VERDICT_UNSPECIFIED: JudgeVerdict
JUDGE_VERDICT_LABELLED: JudgeVerdict
JUDGE_VERDICT_UNPARSED: JudgeVerdict
JUDGE_VERDICT_FAILED: JudgeVerdict

class JudgePair(_message.Message):
    __slots__ = ("query_id", "query", "doc_id", "document")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    query: str
    doc_id: str
    document: str
    def __init__(self, query_id: _Optional[str] = ..., query: _Optional[str] = ..., doc_id: _Optional[str] = ..., document: _Optional[str] = ...) -> None: ...

class JudgeRequest(_message.Message):
    __slots__ = ("pairs",)
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    pairs: _containers.RepeatedCompositeFieldContainer[JudgePair]
    def __init__(self, pairs: _Optional[_Iterable[_Union[JudgePair, _Mapping]]] = ...) -> None: ...

class LabelJudgement(_message.Message):
    __slots__ = ("query_id", "doc_id", "verdict", "label", "raw_output", "backend", "model", "template_sha256", "judge_id", "calls", "prompt_tokens", "completion_tokens", "cost_usd", "score", "error", "created_at", "record_id", "from_store")
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_SHA256_FIELD_NUMBER: _ClassVar[int]
    JUDGE_ID_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_STORE_FIELD_NUMBER: _ClassVar[int]
    query_id: str
    doc_id: str
    verdict: JudgeVerdict
    label: int
    raw_output: str
    backend: str
    model: str
    template_sha256: str
    judge_id: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    score: float
    error: str
    created_at: str
    record_id: int
    from_store: bool
    def __init__(self, query_id: _Optional[str] = ..., doc_id: _Optional[str] = ..., verdict: _Optional[_Union[JudgeVerdict, str]] = ..., label: _Optional[int] = ..., raw_output: _Optional[str] = ..., backend: _Optional[str] = ..., model: _Optional[str] = ..., template_sha256: _Optional[str] = ..., judge_id: _Optional[str] = ..., calls: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ..., score: _Optional[float] = ..., error: _Optional[str] = ..., created_at: _Optional[str] = ..., record_id: _Optional[int] = ..., from_store: _Optional[bool] = ...) -> None: ...

class JudgeStats(_message.Message):
    __slots__ = ("pairs", "from_store", "calls", "labelled", "unparsed", "failed", "prompt_tokens", "completion_tokens", "cost_usd")
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    FROM_STORE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    LABELLED_FIELD_NUMBER: _ClassVar[int]
    UNPARSED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    pairs: int
    from_store: int
    calls: int
    labelled: int
    unparsed: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    def __init__(self, pairs: _Optional[int] = ..., from_store: _Optional[int] = ..., calls: _Optional[int] = ..., labelled: _Optional[int] = ..., unparsed: _Optional[int] = ..., failed: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

class JudgeResponse(_message.Message):
    __slots__ = ("judgements", "stats")
    JUDGEMENTS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    judgements: _containers.RepeatedCompositeFieldContainer[LabelJudgement]
    stats: JudgeStats
    def __init__(self, judgements: _Optional[_Iterable[_Union[LabelJudgement, _Mapping]]] = ..., stats: _Optional[_Union[JudgeStats, _Mapping]] = ...) -> None: ...

class JudgeIdentityRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JudgeIdentityResponse(_message.Message):
    __slots__ = ("identity", "judge_id")
    class IdentityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    JUDGE_ID_FIELD_NUMBER: _ClassVar[int]
    identity: _containers.ScalarMap[str, str]
    judge_id: str
    def __init__(self, identity: _Optional[_Mapping[str, str]] = ..., judge_id: _Optional[str] = ...) -> None: ...
