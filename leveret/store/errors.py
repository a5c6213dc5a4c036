"""The errors the message store raises; the broker turns them into nacks, drops or closes."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every message store error."""


class StoreWriteError(StoreError):
    """Data could not be written or made durable (ENOSPC, EIO, ...); what was stored before is
    intact, and the store keeps the unwritten data in memory to retry with the next batch."""


class BodyUnavailable(StoreError):
    """A message's body cannot be read back: its shared-store file is missing, truncated or
    fails its checksum. The queue drops that message and logs why."""


class CorruptRecord(StoreError):
    """A record read at a known location fails its checksum or cannot be decoded."""


class StoreClosed(StoreError):
    """The store was closed or deleted and cannot be used any more."""


class RecordNotFound(StoreError):
    """The location names a segment that no longer exists (its messages were all acked)."""
