"""Where durable queues keep their messages: one store per queue, a shared body store per vhost."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from .store import FileSystem, GroupCommitter, QueueStore, SharedStore
from .store.files import DEFAULT_FILE_SYSTEM

# Bodies at or above this size are stored once per vhost and referenced from each queue.
EMBED_THRESHOLD = 4096


def _dir_name(name: str) -> str:
    """A stable file-system-safe directory name for a vhost or queue name."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]


class MessageStores:
    """Opens and removes the stores of a node's durable queues; owns the group committer."""

    def __init__(
        self,
        data_dir: Path,
        *,
        embed_threshold: int = EMBED_THRESHOLD,
        fs: FileSystem = DEFAULT_FILE_SYSTEM,
    ) -> None:
        self.fs = fs  # every file operation of the stores goes through it (tests inject faults)
        self.root = data_dir / "msgs"
        self.root.mkdir(parents=True, exist_ok=True)
        self.committer = GroupCommitter()
        self.embed_threshold = embed_threshold
        self._shared: dict[str, SharedStore] = {}

    def shared(self, vhost: str) -> SharedStore:
        store = self._shared.get(vhost)
        if store is None:
            directory = self.root / _dir_name(vhost) / "shared"
            store = SharedStore(
                str(directory),
                fs=self.fs,
                committer=self.committer,
                embed_threshold=self.embed_threshold,
            )
            self._shared[vhost] = store
        return store

    def open_queue(self, vhost: str, queue: str) -> QueueStore:
        directory = self.root / _dir_name(vhost) / "queues" / _dir_name(queue)
        return QueueStore.open(
            str(directory), shared=self.shared(vhost), committer=self.committer, fs=self.fs
        )

    def open_stream(self, vhost: str, queue: str, segment_size: int) -> QueueStore:
        """A stream's log is a queue store whose records are never acked: the same segment
        files, group commit and recovery, with segments of the stream's own size. Bodies stay
        in its own records (no shared store), so deleting a segment frees its space at once."""
        directory = self.root / _dir_name(vhost) / "queues" / _dir_name(queue)
        return QueueStore.open(
            str(directory), committer=self.committer, fs=self.fs, segment_size=segment_size
        )

    def finish_recovery(self) -> None:
        """Every durable queue is open: unreferenced shared bodies may go now."""
        for store in self._shared.values():
            store.collect_garbage()

    def forget_unknown_queues(self, vhost: str, known: set[str]) -> None:
        """Remove stores of queues that no longer exist (deleted while the node was down)."""
        queues_dir = self.root / _dir_name(vhost) / "queues"
        if not queues_dir.exists():
            return
        keep = {_dir_name(name) for name in known}
        for child in queues_dir.iterdir():
            if child.name not in keep:
                shutil.rmtree(child, ignore_errors=True)

    async def close(self, stores: list[QueueStore]) -> None:
        await self.committer.close()
        for store in stores:
            store.close()
        for shared in self._shared.values():
            shared.close()
