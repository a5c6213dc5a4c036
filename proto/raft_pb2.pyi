from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EntryKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NORMAL: _ClassVar[EntryKind]
    NOOP: _ClassVar[EntryKind]
    CONF: _ClassVar[EntryKind]
NORMAL: EntryKind
NOOP: EntryKind
CONF: EntryKind

class Entry(_message.Message):
    __slots__ = ("index", "term", "kind", "data")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    index: int
    term: int
    kind: EntryKind
    data: bytes
    def __init__(self, index: _Optional[int] = ..., term: _Optional[int] = ..., kind: _Optional[_Union[EntryKind, str]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("index", "term", "voters", "data")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    index: int
    term: int
    voters: _containers.RepeatedScalarFieldContainer[str]
    data: bytes
    def __init__(self, index: _Optional[int] = ..., term: _Optional[int] = ..., voters: _Optional[_Iterable[str]] = ..., data: _Optional[bytes] = ...) -> None: ...

class RequestVote(_message.Message):
    __slots__ = ("term", "last_index", "last_term", "pre_vote", "transfer")
    TERM_FIELD_NUMBER: _ClassVar[int]
    LAST_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_TERM_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_FIELD_NUMBER: _ClassVar[int]
    term: int
    last_index: int
    last_term: int
    pre_vote: bool
    transfer: bool
    def __init__(self, term: _Optional[int] = ..., last_index: _Optional[int] = ..., last_term: _Optional[int] = ..., pre_vote: _Optional[bool] = ..., transfer: _Optional[bool] = ...) -> None: ...

class RequestVoteResponse(_message.Message):
    __slots__ = ("term", "granted", "pre_vote")
    TERM_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    term: int
    granted: bool
    pre_vote: bool
    def __init__(self, term: _Optional[int] = ..., granted: _Optional[bool] = ..., pre_vote: _Optional[bool] = ...) -> None: ...

class AppendEntries(_message.Message):
    __slots__ = ("term", "prev_index", "prev_term", "entries", "commit")
    TERM_FIELD_NUMBER: _ClassVar[int]
    PREV_INDEX_FIELD_NUMBER: _ClassVar[int]
    PREV_TERM_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    term: int
    prev_index: int
    prev_term: int
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    commit: int
    def __init__(self, term: _Optional[int] = ..., prev_index: _Optional[int] = ..., prev_term: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., commit: _Optional[int] = ...) -> None: ...

class AppendEntriesResponse(_message.Message):
    __slots__ = ("term", "success", "index", "hint_index", "hint_term")
    TERM_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    HINT_INDEX_FIELD_NUMBER: _ClassVar[int]
    HINT_TERM_FIELD_NUMBER: _ClassVar[int]
    term: int
    success: bool
    index: int
    hint_index: int
    hint_term: int
    def __init__(self, term: _Optional[int] = ..., success: _Optional[bool] = ..., index: _Optional[int] = ..., hint_index: _Optional[int] = ..., hint_term: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("term", "commit", "context", "quiesce")
    TERM_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    QUIESCE_FIELD_NUMBER: _ClassVar[int]
    term: int
    commit: int
    context: int
    quiesce: bool
    def __init__(self, term: _Optional[int] = ..., commit: _Optional[int] = ..., context: _Optional[int] = ..., quiesce: _Optional[bool] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("term", "context", "quiet_at")
    TERM_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    QUIET_AT_FIELD_NUMBER: _ClassVar[int]
    term: int
    context: int
    quiet_at: int
    def __init__(self, term: _Optional[int] = ..., context: _Optional[int] = ..., quiet_at: _Optional[int] = ...) -> None: ...

class InstallSnapshot(_message.Message):
    __slots__ = ("term", "snapshot")
    TERM_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    term: int
    snapshot: Snapshot
    def __init__(self, term: _Optional[int] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class TimeoutNow(_message.Message):
    __slots__ = ("term",)
    TERM_FIELD_NUMBER: _ClassVar[int]
    term: int
    def __init__(self, term: _Optional[int] = ...) -> None: ...

class RaftMessage(_message.Message):
    __slots__ = ("request_vote", "request_vote_response", "append_entries", "append_entries_response", "heartbeat", "heartbeat_response", "install_snapshot", "timeout_now")
    REQUEST_VOTE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_VOTE_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    APPEND_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    APPEND_ENTRIES_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    INSTALL_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_NOW_FIELD_NUMBER: _ClassVar[int]
    request_vote: RequestVote
    request_vote_response: RequestVoteResponse
    append_entries: AppendEntries
    append_entries_response: AppendEntriesResponse
    heartbeat: Heartbeat
    heartbeat_response: HeartbeatResponse
    install_snapshot: InstallSnapshot
    timeout_now: TimeoutNow
    def __init__(self, request_vote: _Optional[_Union[RequestVote, _Mapping]] = ..., request_vote_response: _Optional[_Union[RequestVoteResponse, _Mapping]] = ..., append_entries: _Optional[_Union[AppendEntries, _Mapping]] = ..., append_entries_response: _Optional[_Union[AppendEntriesResponse, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., heartbeat_response: _Optional[_Union[HeartbeatResponse, _Mapping]] = ..., install_snapshot: _Optional[_Union[InstallSnapshot, _Mapping]] = ..., timeout_now: _Optional[_Union[TimeoutNow, _Mapping]] = ...) -> None: ...

class Forwarded(_message.Message):
    __slots__ = ("id", "command")
    ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    id: int
    command: bytes
    def __init__(self, id: _Optional[int] = ..., command: _Optional[bytes] = ...) -> None: ...

class ForwardOutcome(_message.Message):
    __slots__ = ("id", "index", "term", "refused")
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    id: int
    index: int
    term: int
    refused: str
    def __init__(self, id: _Optional[int] = ..., index: _Optional[int] = ..., term: _Optional[int] = ..., refused: _Optional[str] = ...) -> None: ...

class RaftBatch(_message.Message):
    __slots__ = ("src", "dst", "messages", "forwarded", "outcomes")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    FORWARDED_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    messages: _containers.RepeatedCompositeFieldContainer[RaftMessage]
    forwarded: _containers.RepeatedCompositeFieldContainer[Forwarded]
    outcomes: _containers.RepeatedCompositeFieldContainer[ForwardOutcome]
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[RaftMessage, _Mapping]]] = ..., forwarded: _Optional[_Iterable[_Union[Forwarded, _Mapping]]] = ..., outcomes: _Optional[_Iterable[_Union[ForwardOutcome, _Mapping]]] = ...) -> None: ...
