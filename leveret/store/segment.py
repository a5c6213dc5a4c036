"""Segment files: a header, then records framed as length + crc32 + payload, with a scan that
finds where a torn or corrupt tail begins so recovery can cut it off."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from .errors import CorruptRecord
from .files import FileSystem

MAGIC = b"LVRT"
FORMAT_VERSION = 1
DEFAULT_SEGMENT_SIZE = 16 * 1024 * 1024

_HEADER = struct.Struct("<4sBBH")
HEADER_SIZE = _HEADER.size
# crc32 of the rest of the frame, then the payload's length
_FRAME = struct.Struct("<II")
FRAME_OVERHEAD = _FRAME.size
_LENGTH = struct.Struct("<I")
_pack_length = _LENGTH.pack
_unpack_frame = _FRAME.unpack_from
_crc32 = zlib.crc32

# A frame longer than this is treated as corruption rather than read (a flipped high bit in a
# length field must not make recovery allocate gigabytes).
MAX_PAYLOAD = 1 << 30


class FileKind(IntEnum):
    """What a store file holds; written in its header so files are never confused."""

    QUEUE_SEGMENT = 1
    MARKS = 2
    BODIES = 3


def file_header(kind: FileKind) -> bytes:
    return _HEADER.pack(MAGIC, FORMAT_VERSION, kind, 0)


def header_is_valid(data: bytes | memoryview, kind: FileKind) -> bool:
    if len(data) < HEADER_SIZE:
        return False
    magic, version, found_kind, _ = _HEADER.unpack_from(data, 0)
    return magic == MAGIC and version == FORMAT_VERSION and found_kind == kind


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """One record as stored: crc32, length, payload; the checksum covers the length and the
    payload (contiguous, so one crc32 call checks both)."""
    length = _pack_length(len(payload))
    return _pack_length(_crc32(payload, _crc32(length))) + length + payload


def frame_payload(data: memoryview, offset: int) -> memoryview | None:
    """The payload of a valid frame starting at offset, or None if it is partial or corrupt."""
    end = len(data)
    if offset + FRAME_OVERHEAD > end:
        return None
    crc, length = _unpack_frame(data, offset)
    stop = offset + FRAME_OVERHEAD + length
    if length > MAX_PAYLOAD or stop > end or _crc32(data[offset + 4 : stop]) != crc:
        return None
    return data[offset + FRAME_OVERHEAD : stop]


def decode_frame(data: bytes | memoryview) -> memoryview:
    """The payload of exactly one frame, as read back from a known location."""
    view = memoryview(data)
    payload = frame_payload(view, 0)
    if payload is None or FRAME_OVERHEAD + len(payload) != len(view):
        raise CorruptRecord("record fails its checksum or is incomplete")
    return payload


@dataclass
class ScanReport:
    """What a scan found besides the records: where valid data ends and what was wrong."""

    valid_end: int = 0
    skipped: list[int] = field(default_factory=list)
    damage: str | None = None


def scan_frames(
    data: bytes | memoryview, start: int, report: ScanReport
) -> Iterator[tuple[int, memoryview]]:
    """Yields (offset, payload) of each valid frame from start on.

    A bad frame whose declared extent is followed by another valid frame is a damaged record in
    the middle: it is skipped (its offset goes to report.skipped) because what follows may have
    been confirmed. Any other bad frame marks the torn or corrupt tail: the scan stops and
    report.valid_end says where to cut the file.
    """
    view = memoryview(data)
    end = len(view)
    offset = start
    report.valid_end = start
    while offset < end:
        payload = frame_payload(view, offset)
        if payload is not None:
            yield offset, payload
            offset += FRAME_OVERHEAD + len(payload)
            report.valid_end = offset
            continue
        if offset + FRAME_OVERHEAD <= end:
            length = _LENGTH.unpack_from(view, offset + 4)[0]
            following = offset + FRAME_OVERHEAD + length
            if (
                length <= MAX_PAYLOAD
                and following < end
                and frame_payload(view, following) is not None
            ):
                report.skipped.append(offset)
                offset = following
                report.valid_end = offset
                continue
        report.damage = f"torn or corrupt data from byte {offset} of {end}"
        return


@dataclass
class LoadedFile:
    """A whole store file read for recovery, with the file descriptor kept open."""

    fd: int
    data: bytes
    header_ok: bool


def load_file(fs: FileSystem, path: str, kind: FileKind) -> LoadedFile:
    """Reads a whole file; segments are bounded in size, so this bounds recovery memory too."""
    fd = fs.open_append(path)
    size = fs.size(fd)
    # One read, so the file is in memory once (joining chunks would double the peak).
    data = fs.pread(fd, size, 0)
    while len(data) < size:
        more = fs.pread(fd, size - len(data), len(data))
        if not more:
            break
        data += more
    return LoadedFile(fd, data, header_is_valid(data, kind))
