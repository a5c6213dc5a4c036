"""The on-disk records of a Raft log file: length + crc32 framing and each record's layout."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeAlias

from cluster.raft.types import Entry, EntryKind, HardState, Snapshot

_FRAME = struct.Struct(">II")  # payload length, crc32 of payload
_INDEX_TERM = struct.Struct(">QQ")
_ENTRY_HEADER = struct.Struct(">QQB")
_HARD_STATE = struct.Struct(">QQ?")  # term, commit, has_vote
_VOTERS_LENGTH = struct.Struct(">I")
MAX_RECORD = 1 << 30


class RecordType(IntEnum):
    """The first byte of every record payload."""

    ENTRY = 1
    HARD_STATE = 2
    TRUNCATE = 3
    # First record of a rewritten log: the entries that follow come after this index and term.
    BASE = 4
    SNAPSHOT = 5


@dataclass(frozen=True, slots=True)
class Truncate:
    """Entries at and after `index` are dropped."""

    index: int


@dataclass(frozen=True, slots=True)
class Base:
    """The log restarts after (`index`, `term`), the snapshot it was compacted into."""

    index: int
    term: int


Record: TypeAlias = Entry | HardState | Truncate | Base | Snapshot


def encode_record(record: Record) -> bytes:
    """The framed bytes of one record."""
    payload = _encode_payload(record)
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data: bytes) -> tuple[list[Record], int]:
    """The records in `data` up to the first torn or corrupt one, and the length they cover."""
    records: list[Record] = []
    offset = 0
    while offset + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, offset)
        start = offset + _FRAME.size
        end = start + length
        if length == 0 or length > MAX_RECORD or end > len(data):
            break
        payload = data[start:end]
        if zlib.crc32(payload) != crc:
            break
        try:
            records.append(_decode_payload(payload))
        except (ValueError, struct.error, UnicodeDecodeError):
            break
        offset = end
    return records, offset


def _encode_payload(record: Record) -> bytes:
    if isinstance(record, Entry):
        header = _ENTRY_HEADER.pack(record.index, record.term, record.kind)
        return bytes([RecordType.ENTRY]) + header + record.data
    if isinstance(record, HardState):
        vote = (record.vote or "").encode()
        fixed = _HARD_STATE.pack(record.term, record.commit, record.vote is not None)
        return bytes([RecordType.HARD_STATE]) + fixed + vote
    if isinstance(record, Truncate):
        return bytes([RecordType.TRUNCATE]) + _INDEX_TERM.pack(record.index, 0)
    if isinstance(record, Base):
        return bytes([RecordType.BASE]) + _INDEX_TERM.pack(record.index, record.term)
    voters = json.dumps(list(record.voters)).encode()
    return (
        bytes([RecordType.SNAPSHOT])
        + _INDEX_TERM.pack(record.index, record.term)
        + _VOTERS_LENGTH.pack(len(voters))
        + voters
        + record.data
    )


def _decode_payload(payload: bytes) -> Record:
    kind, body = RecordType(payload[0]), payload[1:]
    if kind is RecordType.ENTRY:
        index, term, entry_kind = _ENTRY_HEADER.unpack_from(body)
        return Entry(index, term, EntryKind(entry_kind), bytes(body[_ENTRY_HEADER.size :]))
    if kind is RecordType.HARD_STATE:
        term, commit, has_vote = _HARD_STATE.unpack_from(body)
        vote = body[_HARD_STATE.size :].decode() if has_vote else None
        return HardState(term, vote, commit)
    if kind is RecordType.TRUNCATE:
        return Truncate(_INDEX_TERM.unpack_from(body)[0])
    if kind is RecordType.BASE:
        return Base(*_INDEX_TERM.unpack_from(body))
    index, term = _INDEX_TERM.unpack_from(body)
    (voters_length,) = _VOTERS_LENGTH.unpack_from(body, _INDEX_TERM.size)
    voters_start = _INDEX_TERM.size + _VOTERS_LENGTH.size
    voters = json.loads(body[voters_start : voters_start + voters_length])
    if not isinstance(voters, list) or not all(isinstance(v, str) for v in voters):
        raise ValueError("snapshot voters must be a list of node ids")
    return Snapshot(index, term, tuple(voters), bytes(body[voters_start + voters_length :]))
