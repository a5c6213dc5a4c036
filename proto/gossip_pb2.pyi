from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemberStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALIVE: _ClassVar[MemberStatus]
    SUSPECT: _ClassVar[MemberStatus]
    DEAD: _ClassVar[MemberStatus]
ALIVE: MemberStatus
SUSPECT: MemberStatus
DEAD: MemberStatus

class QueueCounters(_message.Message):
    __slots__ = ("vhost", "name", "messages", "messages_unacknowledged", "consumers")
    VHOST_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_UNACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    vhost: str
    name: str
    messages: int
    messages_unacknowledged: int
    consumers: int
    def __init__(self, vhost: _Optional[str] = ..., name: _Optional[str] = ..., messages: _Optional[int] = ..., messages_unacknowledged: _Optional[int] = ..., consumers: _Optional[int] = ...) -> None: ...

class LinkReport(_message.Message):
    __slots__ = ("vhost", "queue", "upstream", "upstream_queue", "id", "status", "uri", "consumer_tag", "timestamp", "error", "local_connection", "demand")
    VHOST_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_QUEUE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_TAG_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOCAL_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    vhost: str
    queue: str
    upstream: str
    upstream_queue: str
    id: str
    status: str
    uri: str
    consumer_tag: str
    timestamp: str
    error: str
    local_connection: str
    demand: str
    def __init__(self, vhost: _Optional[str] = ..., queue: _Optional[str] = ..., upstream: _Optional[str] = ..., upstream_queue: _Optional[str] = ..., id: _Optional[str] = ..., status: _Optional[str] = ..., uri: _Optional[str] = ..., consumer_tag: _Optional[str] = ..., timestamp: _Optional[str] = ..., error: _Optional[str] = ..., local_connection: _Optional[str] = ..., demand: _Optional[str] = ...) -> None: ...

class NodeReport(_message.Message):
    __slots__ = ("version", "alarms", "memory_used", "disk_free", "queues", "run", "links", "clients", "raft_role", "raft_term", "consumer_flows")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALARMS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_FIELD_NUMBER: _ClassVar[int]
    DISK_FREE_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    RAFT_ROLE_FIELD_NUMBER: _ClassVar[int]
    RAFT_TERM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FLOWS_FIELD_NUMBER: _ClassVar[int]
    version: int
    alarms: _containers.RepeatedScalarFieldContainer[str]
    memory_used: int
    disk_free: int
    queues: _containers.RepeatedCompositeFieldContainer[QueueCounters]
    run: str
    links: _containers.RepeatedCompositeFieldContainer[LinkReport]
    clients: _containers.RepeatedCompositeFieldContainer[ClientCount]
    raft_role: str
    raft_term: int
    consumer_flows: _containers.RepeatedCompositeFieldContainer[ConsumerFlow]
    def __init__(self, version: _Optional[int] = ..., alarms: _Optional[_Iterable[str]] = ..., memory_used: _Optional[int] = ..., disk_free: _Optional[int] = ..., queues: _Optional[_Iterable[_Union[QueueCounters, _Mapping]]] = ..., run: _Optional[str] = ..., links: _Optional[_Iterable[_Union[LinkReport, _Mapping]]] = ..., clients: _Optional[_Iterable[_Union[ClientCount, _Mapping]]] = ..., raft_role: _Optional[str] = ..., raft_term: _Optional[int] = ..., consumer_flows: _Optional[_Iterable[_Union[ConsumerFlow, _Mapping]]] = ...) -> None: ...

class ConsumerFlow(_message.Message):
    __slots__ = ("node", "consumers")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    node: str
    consumers: int
    def __init__(self, node: _Optional[str] = ..., consumers: _Optional[int] = ...) -> None: ...

class ClientCount(_message.Message):
    __slots__ = ("kind", "name", "count")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    count: int
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class MemberState(_message.Message):
    __slots__ = ("name", "status", "incarnation", "report", "has_report")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    HAS_REPORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: MemberStatus
    incarnation: int
    report: NodeReport
    has_report: bool
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[MemberStatus, str]] = ..., incarnation: _Optional[int] = ..., report: _Optional[_Union[NodeReport, _Mapping]] = ..., has_report: _Optional[bool] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ("seq", "updates")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    seq: int
    updates: _containers.RepeatedCompositeFieldContainer[MemberState]
    def __init__(self, seq: _Optional[int] = ..., updates: _Optional[_Iterable[_Union[MemberState, _Mapping]]] = ...) -> None: ...

class PingReq(_message.Message):
    __slots__ = ("target", "seq", "updates")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    target: str
    seq: int
    updates: _containers.RepeatedCompositeFieldContainer[MemberState]
    def __init__(self, target: _Optional[str] = ..., seq: _Optional[int] = ..., updates: _Optional[_Iterable[_Union[MemberState, _Mapping]]] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("reached", "updates")
    REACHED_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    reached: bool
    updates: _containers.RepeatedCompositeFieldContainer[MemberState]
    def __init__(self, reached: _Optional[bool] = ..., updates: _Optional[_Iterable[_Union[MemberState, _Mapping]]] = ...) -> None: ...
