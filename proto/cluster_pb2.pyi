from proto import raft_pb2 as _raft_pb2
from proto import gossip_pb2 as _gossip_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StreamClosed(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Redirect(_message.Message):
    __slots__ = ("leader", "leader_address")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    leader: str
    leader_address: str
    def __init__(self, leader: _Optional[str] = ..., leader_address: _Optional[str] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("kind", "reason")
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    reason: str
    def __init__(self, kind: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("command", "timeout_seconds")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    command: bytes
    timeout_seconds: float
    def __init__(self, command: _Optional[bytes] = ..., timeout_seconds: _Optional[float] = ...) -> None: ...

class SubmitReply(_message.Message):
    __slots__ = ("reply", "not_leader", "failure")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    NOT_LEADER_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    reply: bytes
    not_leader: Redirect
    failure: Failure
    def __init__(self, reply: _Optional[bytes] = ..., not_leader: _Optional[_Union[Redirect, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class ReadIndexRequest(_message.Message):
    __slots__ = ("timeout_seconds",)
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    timeout_seconds: float
    def __init__(self, timeout_seconds: _Optional[float] = ...) -> None: ...

class ReadIndexReply(_message.Message):
    __slots__ = ("index", "not_leader", "failure")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NOT_LEADER_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    index: int
    not_leader: Redirect
    failure: Failure
    def __init__(self, index: _Optional[int] = ..., not_leader: _Optional[_Union[Redirect, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("name", "address")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class JoinRequest(_message.Message):
    __slots__ = ("name", "address", "fresh")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    FRESH_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    fresh: bool
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., fresh: _Optional[bool] = ...) -> None: ...

class ForgetRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class MemberList(_message.Message):
    __slots__ = ("members", "voters")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[Member]
    voters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., voters: _Optional[_Iterable[str]] = ...) -> None: ...

class MembershipReply(_message.Message):
    __slots__ = ("members", "not_leader", "failure")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NOT_LEADER_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    members: MemberList
    not_leader: Redirect
    failure: Failure
    def __init__(self, members: _Optional[_Union[MemberList, _Mapping]] = ..., not_leader: _Optional[_Union[Redirect, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...
