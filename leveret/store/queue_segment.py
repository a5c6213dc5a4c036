"""One segment of a queue store at run time: its file (being written, or read back), its mark log
and its in-memory index."""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator

from .appender import AppendOnlyFile
from .files import FileSystem
from .marks import MarkLog
from .segment import FRAME_OVERHEAD, HEADER_SIZE, MAX_PAYLOAD, FileKind, file_header
from .segment_index import SegmentIndex

_log = logging.getLogger(__name__)

SEGMENT_SUFFIX = ".seg"
MARKS_SUFFIX = ".marks"
_READ_CHUNK = 256 * 1024
_FRAME = struct.Struct("<II")
_crc32 = zlib.crc32


def segment_file_name(segment_id: int) -> str:
    return f"{segment_id:010d}{SEGMENT_SUFFIX}"


def marks_file_name(segment_id: int) -> str:
    return f"{segment_id:010d}{MARKS_SUFFIX}"


class QueueSegment:
    """A segment is written through an AppendOnlyFile while it is new; once it is full and
    durable, and for segments found at boot, reads go through a plain read descriptor."""

    __slots__ = (
        "_end",
        "_fs",
        "_reader_fd",
        "dropped",
        "index",
        "marks",
        "marks_path",
        "path",
        "writer",
    )

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        index: SegmentIndex,
        *,
        writer: AppendOnlyFile | None = None,
        reader_fd: int | None = None,
        end: int = 0,
        marks: MarkLog | None = None,
    ) -> None:
        self.index = index
        self.path = os.path.join(directory, segment_file_name(index.segment_id))
        self.marks_path = os.path.join(directory, marks_file_name(index.segment_id))
        self.writer = writer
        self.marks = marks
        self._fs = fs
        self._reader_fd = reader_fd
        self._end = end
        self.dropped = False

    @classmethod
    def create(cls, fs: FileSystem, directory: str, segment_id: int) -> QueueSegment:
        """A new, empty segment; its file appears with the first flush. Its first fsync also
        makes the queue's own directory entry durable (the store leaves that to it)."""
        path = os.path.join(directory, segment_file_name(segment_id))
        parent = os.path.dirname(os.path.abspath(directory))
        writer = AppendOnlyFile(
            fs, path, initial=file_header(FileKind.QUEUE_SEGMENT), parent_directories=(parent,)
        )
        return cls(fs, directory, SegmentIndex(segment_id), writer=writer)

    @property
    def segment_id(self) -> int:
        return self.index.segment_id

    @property
    def end(self) -> int:
        return self.writer.end if self.writer is not None else self._end

    def mark_log(self) -> MarkLog:
        if self.marks is None:
            self.marks = MarkLog(self._fs, self.marks_path)
        return self.marks

    def read(self, offset: int, size: int) -> bytes:
        if self.writer is not None:
            return self.writer.read(offset, size)
        if self._reader_fd is None:
            self._reader_fd = self._fs.open_read(self.path)
        return self._fs.pread(self._reader_fd, size, offset)

    def retire_writer_if_durable(self) -> None:
        """A full segment keeps its writer only until everything in it is durable."""
        writer = self.writer
        if writer is not None and not writer.needs_flush and not writer.needs_sync:
            self._end = writer.end
            writer.close()
            self.writer = None

    def frames(self, offset: int = HEADER_SIZE) -> Iterator[tuple[int, memoryview]]:
        """Yields (offset, payload) of every frame from offset to the end, reading in chunks.

        Frames were checked at recovery; one that fails its checksum now is skipped by its
        length (it was skipped at recovery too), and an implausible length ends the segment.
        """
        while not self.dropped and offset + FRAME_OVERHEAD <= self.end:
            chunk = self.read(offset, min(_READ_CHUNK, self.end - offset))
            view = memoryview(chunk)
            position = 0
            while position + FRAME_OVERHEAD <= len(view):
                crc, length = _FRAME.unpack_from(view, position)
                stop = position + FRAME_OVERHEAD + length
                if stop > len(view):
                    if position == 0:
                        if length > MAX_PAYLOAD or offset + stop > self.end:
                            _log.error("%s: bad frame length at byte %d", self.path, offset)
                            return
                        view = memoryview(self.read(offset, stop))
                        continue
                    break
                if _crc32(view[position + 4 : stop]) == crc:
                    yield offset + position, view[position + FRAME_OVERHEAD : stop]
                    if self.dropped:
                        return
                else:
                    _log.error(
                        "%s: corrupt record at byte %d skipped", self.path, offset + position
                    )
                position = stop
            if position == 0:
                _log.error("%s: unreadable data at byte %d", self.path, offset)
                return
            offset += position

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.marks is not None:
            self.marks.close()
        if self._reader_fd is not None:
            self._fs.close(self._reader_fd)
            self._reader_fd = None

    def remove(self) -> None:
        """Deletes the segment file, then its mark log: never the acks without the messages."""
        self.dropped = True
        if self.writer is not None:
            self.writer.remove()
            self.writer = None
        else:
            if self._reader_fd is not None:
                self._fs.close(self._reader_fd)
                self._reader_fd = None
            self._fs.remove(self.path)
        if self.marks is not None:
            self.marks.remove()
            self.marks = None
        else:
            self._fs.remove(self.marks_path)
