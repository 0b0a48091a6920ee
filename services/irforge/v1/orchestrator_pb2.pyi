from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    QUEUED: _ClassVar[JobState]
    RUNNING: _ClassVar[JobState]
    SUCCEEDED: _ClassVar[JobState]
    FAILED: _ClassVar[JobState]
    CANCELLED: _ClassVar[JobState]
JOB_STATE_UNSPECIFIED: JobState
QUEUED: JobState
RUNNING: JobState
SUCCEEDED: JobState
FAILED: JobState
CANCELLED: JobState

class JobSpec(_message.Message):
    __slots__ = ("pipeline", "output", "shards", "name", "instructions", "datasets")
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    DATASETS_FIELD_NUMBER: _ClassVar[int]
    pipeline: _struct_pb2.Struct
    output: str
    shards: int
    name: str
    instructions: InstructionsSpec
    datasets: _containers.RepeatedCompositeFieldContainer[SuiteDataset]
    def __init__(self, pipeline: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., output: _Optional[str] = ..., shards: _Optional[int] = ..., name: _Optional[str] = ..., instructions: _Optional[_Union[InstructionsSpec, _Mapping]] = ..., datasets: _Optional[_Iterable[_Union[SuiteDataset, _Mapping]]] = ...) -> None: ...

class SuiteDataset(_message.Message):
    __slots__ = ("dataset", "label", "split")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    label: str
    split: str
    def __init__(self, dataset: _Optional[str] = ..., label: _Optional[str] = ..., split: _Optional[str] = ...) -> None: ...

class InstructionsSpec(_message.Message):
    __slots__ = ("enabled",)
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    def __init__(self, enabled: _Optional[bool] = ...) -> None: ...

class JobRef(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ("job_id", "after_sequence")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    after_sequence: int
    def __init__(self, job_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("sequence", "job_id", "step", "state", "done", "total", "rate", "eta_seconds", "message", "time", "unit")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    ETA_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    job_id: str
    step: str
    state: str
    done: int
    total: int
    rate: float
    eta_seconds: float
    message: str
    time: str
    unit: str
    def __init__(self, sequence: _Optional[int] = ..., job_id: _Optional[str] = ..., step: _Optional[str] = ..., state: _Optional[str] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., rate: _Optional[float] = ..., eta_seconds: _Optional[float] = ..., message: _Optional[str] = ..., time: _Optional[str] = ..., unit: _Optional[str] = ...) -> None: ...

class StepStatus(_message.Message):
    __slots__ = ("name", "state", "executions", "started_at", "finished_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: str
    executions: int
    started_at: str
    finished_at: str
    def __init__(self, name: _Optional[str] = ..., state: _Optional[str] = ..., executions: _Optional[int] = ..., started_at: _Optional[str] = ..., finished_at: _Optional[str] = ...) -> None: ...

class JobStatus(_message.Message):
    __slots__ = ("job_id", "state", "spec", "steps", "error", "created_at", "updated_at", "metrics", "warnings", "owner")
    class MetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    state: JobState
    spec: JobSpec
    steps: _containers.RepeatedCompositeFieldContainer[StepStatus]
    error: str
    created_at: str
    updated_at: str
    metrics: _containers.ScalarMap[str, float]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    def __init__(self, job_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[StepStatus, _Mapping]]] = ..., error: _Optional[str] = ..., created_at: _Optional[str] = ..., updated_at: _Optional[str] = ..., metrics: _Optional[_Mapping[str, float]] = ..., warnings: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[JobStatus]
    def __init__(self, jobs: _Optional[_Iterable[_Union[JobStatus, _Mapping]]] = ...) -> None: ...

class ResultChunk(_message.Message):
    __slots__ = ("name", "data", "last")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    name: str
    data: bytes
    last: bool
    def __init__(self, name: _Optional[str] = ..., data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...
