"""The per-vhost shared store: large bodies written once however many durable queues hold them,
in append-only files whose reference counts decide when a file is deleted."""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass

from .appender import AppendOnlyFile
from .errors import BodyUnavailable, CorruptRecord, StoreClosed
from .files import DEFAULT_FILE_SYSTEM, FileSystem
from .group_commit import GroupCommitter
from .record import BodyRef
from .segment import (
    DEFAULT_SEGMENT_SIZE,
    FRAME_OVERHEAD,
    FileKind,
    decode_frame,
    file_header,
    frame,
)

_log = logging.getLogger(__name__)

DEFAULT_EMBED_THRESHOLD = 4096
_SUFFIX = ".bodies"
_BODY_VERSION = b"\x01"
_BODY_OVERHEAD = FRAME_OVERHEAD + len(_BODY_VERSION)
_OPEN_READERS = 32


@dataclass(frozen=True)
class SharedStoreStatistics:
    files: int
    referenced_files: int
    references: int


def _file_name(file_id: int) -> str:
    return f"{file_id:010d}{_SUFFIX}"


class SharedStore:
    """Large bodies of one vhost.

    Reference counting is per file, not per body: a queue segment holds a reference to every
    shared file its records point into, and gives them back when the segment is deleted. Queue
    segments roll over by the bytes they account for, shared bodies included, so a segment pins
    at most about one segment size of shared data and the store's memory does not grow with the
    number of messages.

    Boot order: open the shared store, open every durable queue store of the vhost (they count
    their references in), then call collect_garbage(); files are only deleted after that.
    A BodyRef from put() must be handed to QueueStore.append before the next put().
    """

    def __init__(
        self,
        directory: str,
        *,
        fs: FileSystem = DEFAULT_FILE_SYSTEM,
        committer: GroupCommitter | None = None,
        embed_threshold: int = DEFAULT_EMBED_THRESHOLD,
        file_size: int = DEFAULT_SEGMENT_SIZE,
    ) -> None:
        self.directory = directory
        self.embed_threshold = embed_threshold
        self._fs = fs
        self._committer = committer
        self._file_size_limit = file_size
        self._refs: dict[int, int] = {}
        self._sizes: dict[int, int] = {}
        self._writers: dict[int, AppendOnlyFile] = {}
        self._readers: OrderedDict[int, int] = OrderedDict()
        self._collected = False
        self._closed = False
        fs.makedirs(directory)
        for name in fs.listdir(directory):
            if name.endswith(_SUFFIX) and name[: -len(_SUFFIX)].isdigit():
                self._refs[int(name[: -len(_SUFFIX)])] = 0
        self._active_id = max(self._refs, default=0) + 1
        self._active = self._new_writer(self._active_id)

    def share(self, body: bytes) -> bytes | BodyRef:
        """The body itself if it is small enough to embed in queue records, else a reference to
        its one stored copy; pass the result to every durable queue the message goes to."""
        if len(body) < self.embed_threshold:
            return body
        return self.put(body)

    def put(self, body: bytes) -> BodyRef:
        """Stores a body (buffered; durable with the next group commit)."""
        if self._closed:
            raise StoreClosed(f"shared store {self.directory} is closed")
        if self._active.end >= self._file_size_limit:
            self._roll_over()
        record = frame(_BODY_VERSION + body)
        offset = self._active.append(record)
        if self._committer is not None:
            self._committer.note_dirty(self._active, early=True)
        return BodyRef(self._active_id, offset, len(body))

    def read(self, ref: BodyRef) -> bytes:
        """Reads a body back; BodyUnavailable if its file is missing or the data is damaged."""
        size = _BODY_OVERHEAD + ref.size
        try:
            writer = self._writers.get(ref.file_id)
            if writer is not None:
                data = writer.read(ref.offset, size)
            else:
                data = self._fs.pread(self._reader(ref.file_id), size, ref.offset)
            payload = decode_frame(data)
        except (OSError, CorruptRecord) as error:
            raise BodyUnavailable(
                f"body at {ref.offset} of {_file_name(ref.file_id)} in {self.directory}: {error}"
            ) from error
        if payload[:1] != _BODY_VERSION:
            raise BodyUnavailable(f"unknown body record version in {_file_name(ref.file_id)}")
        return bytes(payload[1:])

    def is_available(self, ref: BodyRef) -> bool:
        """Whether the referenced file exists and is long enough (checked cheaply at recovery;
        the checksum is verified when the body is read)."""
        if ref.file_id not in self._refs:
            return False
        writer = self._writers.get(ref.file_id)
        size = writer.end if writer is not None else self._stored_size(ref.file_id)
        return ref.offset + _BODY_OVERHEAD + ref.size <= size

    def add_refs(self, file_id: int, count: int = 1) -> None:
        """A queue segment now points into file_id `count` more times."""
        self._refs[file_id] = self._refs.get(file_id, 0) + count

    def release(self, file_id: int, count: int = 1) -> None:
        """A queue segment that pointed into file_id is gone."""
        remaining = self._refs.get(file_id, 0) - count
        if remaining < 0:
            _log.error("shared store %s: file %s released below zero", self.directory, file_id)
            remaining = 0
        self._refs[file_id] = remaining
        if remaining == 0 and self._collected and file_id != self._active_id:
            self._remove_file(file_id)

    def collect_garbage(self) -> int:
        """Deletes every file nothing points into; call once all queue stores are open."""
        self._collected = True
        unreferenced = [
            file_id
            for file_id, count in self._refs.items()
            if count == 0 and file_id != self._active_id
        ]
        for file_id in unreferenced:
            self._remove_file(file_id)
        return len(unreferenced)

    def sync(self) -> None:
        """Flushes and fsyncs on the calling thread (shutdown and tools)."""
        for writer in list(self._writers.values()):
            writer.sync_now()

    def close(self) -> None:
        """Syncs and closes; pending group commits must have completed."""
        if self._closed:
            return
        self.sync()
        self._closed = True
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        for fd in self._readers.values():
            self._fs.close(fd)
        self._readers.clear()

    def statistics(self) -> SharedStoreStatistics:
        return SharedStoreStatistics(
            files=len(self._refs),
            referenced_files=sum(1 for count in self._refs.values() if count),
            references=sum(self._refs.values()),
        )

    def _new_writer(self, file_id: int) -> AppendOnlyFile:
        self._refs.setdefault(file_id, 0)
        writer = AppendOnlyFile(
            self._fs,
            os.path.join(self.directory, _file_name(file_id)),
            initial=file_header(FileKind.BODIES),
        )
        self._writers[file_id] = writer
        return writer

    def _roll_over(self) -> None:
        previous = self._active_id
        self._active_id += 1
        self._active = self._new_writer(self._active_id)
        self._close_synced_writers()
        if self._collected and self._refs.get(previous, 0) == 0:
            self._remove_file(previous)

    def _close_synced_writers(self) -> None:
        """Writers of full files are only kept until their data is durable; reads then go
        through the small cache of read descriptors."""
        for file_id, writer in list(self._writers.items()):
            if file_id != self._active_id and not writer.needs_sync and not writer.needs_flush:
                self._sizes[file_id] = writer.end
                writer.close()
                del self._writers[file_id]

    def _stored_size(self, file_id: int) -> int:
        size = self._sizes.get(file_id)
        if size is None:
            found = self._fs.file_size(os.path.join(self.directory, _file_name(file_id)))
            size = -1 if found is None else found
            self._sizes[file_id] = size
        return size

    def _reader(self, file_id: int) -> int:
        fd = self._readers.get(file_id)
        if fd is not None:
            self._readers.move_to_end(file_id)
            return fd
        if file_id not in self._refs:
            raise FileNotFoundError(f"{_file_name(file_id)} does not exist")
        fd = self._fs.open_read(os.path.join(self.directory, _file_name(file_id)))
        self._readers[file_id] = fd
        if len(self._readers) > _OPEN_READERS:
            _, oldest = self._readers.popitem(last=False)
            self._fs.close(oldest)
        return fd

    def _remove_file(self, file_id: int) -> None:
        self._refs.pop(file_id, None)
        self._sizes.pop(file_id, None)
        fd = self._readers.pop(file_id, None)
        if fd is not None:
            self._fs.close(fd)
        writer = self._writers.pop(file_id, None)
        if writer is not None:
            writer.remove()
        else:
            self._fs.remove(os.path.join(self.directory, _file_name(file_id)))
