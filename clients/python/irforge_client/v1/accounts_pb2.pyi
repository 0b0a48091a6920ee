from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TeamRef(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateTeamRequest(_message.Message):
    __slots__ = ("name", "daily_submission_limit")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DAILY_SUBMISSION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    daily_submission_limit: int
    def __init__(self, name: _Optional[str] = ..., daily_submission_limit: _Optional[int] = ...) -> None: ...

class IssuedToken(_message.Message):
    __slots__ = ("team", "token", "token_id")
    TEAM_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    team: str
    token: str
    token_id: str
    def __init__(self, team: _Optional[str] = ..., token: _Optional[str] = ..., token_id: _Optional[str] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("team", "token_id")
    TEAM_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    team: str
    token_id: str
    def __init__(self, team: _Optional[str] = ..., token_id: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("token_ids",)
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    token_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, token_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListTeamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Team(_message.Message):
    __slots__ = ("name", "daily_submission_limit", "created", "disabled", "token_ids", "certificate_names")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DAILY_SUBMISSION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_NAMES_FIELD_NUMBER: _ClassVar[int]
    name: str
    daily_submission_limit: int
    created: str
    disabled: bool
    token_ids: _containers.RepeatedScalarFieldContainer[str]
    certificate_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., daily_submission_limit: _Optional[int] = ..., created: _Optional[str] = ..., disabled: _Optional[bool] = ..., token_ids: _Optional[_Iterable[str]] = ..., certificate_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ListTeamsResponse(_message.Message):
    __slots__ = ("teams",)
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    teams: _containers.RepeatedCompositeFieldContainer[Team]
    def __init__(self, teams: _Optional[_Iterable[_Union[Team, _Mapping]]] = ...) -> None: ...

class SetTeamLimitRequest(_message.Message):
    __slots__ = ("name", "daily_submission_limit")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DAILY_SUBMISSION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    daily_submission_limit: int
    def __init__(self, name: _Optional[str] = ..., daily_submission_limit: _Optional[int] = ...) -> None: ...

class MapCertificateRequest(_message.Message):
    __slots__ = ("team", "common_name")
    TEAM_FIELD_NUMBER: _ClassVar[int]
    COMMON_NAME_FIELD_NUMBER: _ClassVar[int]
    team: str
    common_name: str
    def __init__(self, team: _Optional[str] = ..., common_name: _Optional[str] = ...) -> None: ...

class WhoamiRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Caller(_message.Message):
    __slots__ = ("name", "role", "via")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: str
    via: str
    def __init__(self, name: _Optional[str] = ..., role: _Optional[str] = ..., via: _Optional[str] = ...) -> None: ...

class AuditLogRequest(_message.Message):
    __slots__ = ("limit", "who", "action")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WHO_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    limit: int
    who: str
    action: str
    def __init__(self, limit: _Optional[int] = ..., who: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class AuditRow(_message.Message):
    __slots__ = ("sequence", "time", "who", "role", "via", "action", "target", "outcome", "detail")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    WHO_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time: str
    who: str
    role: str
    via: str
    action: str
    target: str
    outcome: str
    detail: str
    def __init__(self, sequence: _Optional[int] = ..., time: _Optional[str] = ..., who: _Optional[str] = ..., role: _Optional[str] = ..., via: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., outcome: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class AuditLogResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[AuditRow]
    def __init__(self, rows: _Optional[_Iterable[_Union[AuditRow, _Mapping]]] = ...) -> None: ...
