"""Raft consensus as a pure state machine (no IO, no clocks), in the etcd-io/raft model."""

from cluster.raft.config import RaftConfig
from cluster.raft.errors import NotLeader, ProposalRejected, RaftError
from cluster.raft.membership import ConfChange, ConfOp, decode_conf_change, encode_conf_change
from cluster.raft.memory_storage import MemoryStorage
from cluster.raft.messages import (
    AppendEntries,
    AppendEntriesResponse,
    Heartbeat,
    HeartbeatResponse,
    InstallSnapshot,
    Message,
    RequestVote,
    RequestVoteResponse,
    TimeoutNow,
)
from cluster.raft.node import RaftNode, RaftStatus, Role
from cluster.raft.ready import ReadState, Ready
from cluster.raft.storage import FileStorage, RaftStorage, StorageCorrupted
from cluster.raft.types import Entry, EntryKind, HardState, Snapshot, StorageState

__all__ = [
    "AppendEntries",
    "AppendEntriesResponse",
    "ConfChange",
    "ConfOp",
    "Entry",
    "EntryKind",
    "FileStorage",
    "HardState",
    "Heartbeat",
    "HeartbeatResponse",
    "InstallSnapshot",
    "MemoryStorage",
    "Message",
    "NotLeader",
    "ProposalRejected",
    "RaftConfig",
    "RaftError",
    "RaftNode",
    "RaftStatus",
    "RaftStorage",
    "ReadState",
    "Ready",
    "RequestVote",
    "RequestVoteResponse",
    "Role",
    "Snapshot",
    "StorageCorrupted",
    "StorageState",
    "TimeoutNow",
    "decode_conf_change",
    "encode_conf_change",
]
