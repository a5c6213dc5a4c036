"""Leveret's durable message store: per-queue segment files, a per-vhost shared body store, group
commit for publisher confirms, and the free-disk-space check."""

from .disk_monitor import DEFAULT_DISK_FREE_LIMIT, DiskMonitor, DiskStatus, parse_disk_free_limit
from .errors import (
    BodyUnavailable,
    CorruptRecord,
    RecordNotFound,
    StoreClosed,
    StoreError,
    StoreWriteError,
)
from .files import FileSystem
from .group_commit import CommitStatistics, DurableCallback, GroupCommitter
from .queue_store import QueueStore, QueueStoreStatistics, ReadBatch, SegmentSpan
from .record import BodyRef, IndexEntry, Location, StoredMessage
from .segment import DEFAULT_SEGMENT_SIZE
from .shared_store import DEFAULT_EMBED_THRESHOLD, SharedStore, SharedStoreStatistics

__all__ = [
    "DEFAULT_DISK_FREE_LIMIT",
    "DEFAULT_EMBED_THRESHOLD",
    "DEFAULT_SEGMENT_SIZE",
    "BodyRef",
    "BodyUnavailable",
    "CommitStatistics",
    "CorruptRecord",
    "DiskMonitor",
    "DiskStatus",
    "DurableCallback",
    "FileSystem",
    "GroupCommitter",
    "IndexEntry",
    "Location",
    "QueueStore",
    "QueueStoreStatistics",
    "ReadBatch",
    "RecordNotFound",
    "SegmentSpan",
    "SharedStore",
    "SharedStoreStatistics",
    "StoreClosed",
    "StoreError",
    "StoreWriteError",
    "StoredMessage",
    "parse_disk_free_limit",
]
