"""The append-only file keeps every byte until it is durable, so ENOSPC and EIO never leave a
torn record between good ones and never lose what was written before."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from leveret.store.appender import AppendOnlyFile
from leveret.store.errors import StoreError, StoreWriteError

from .faults import FaultyFileSystem


def test_reads_see_buffered_written_and_durable_bytes(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    file = AppendOnlyFile(fs, str(tmp_path / "f"), initial=b"HEAD")
    first = file.append(b"one")
    file.sync_now()
    second = file.append(b"two")
    file.flush()
    third = file.append(b"three")
    assert (first, second, third) == (4, 7, 10)
    assert file.read(0, 13) == b"HEADonetwothr"
    assert file.read(third, 5) == b"three"
    file.sync_now()
    assert (tmp_path / "f").read_bytes() == b"HEADonetwothree"
    assert not file.needs_sync and not file.needs_flush


def test_enospc_mid_write_is_cut_back_and_retried(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    path = tmp_path / "f"
    file = AppendOnlyFile(fs, str(path), initial=b"HEAD")
    file.append(b"durable-")
    file.sync_now()
    file.append(b"pending-record")
    fs.write_budget = 3
    with pytest.raises(StoreWriteError):
        file.flush()
    # The torn prefix is on disk now, but the file knows it must cut it off.
    assert path.read_bytes() == b"HEADdurable-pen"
    assert file.read(12, 14) == b"pending-record"
    with pytest.raises(StoreWriteError):
        file.sync_now()
    assert path.read_bytes().startswith(b"HEADdurable-")
    fs.write_budget = None
    file.sync_now()
    assert path.read_bytes() == b"HEADdurable-pending-record"


def test_failed_fsync_rewrites_everything_since_the_last_good_one(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    path = tmp_path / "f"
    file = AppendOnlyFile(fs, str(path), initial=b"HEAD")
    file.sync_now()
    file.append(b"abc")
    fs.sync_error = errno.EIO
    with pytest.raises(StoreWriteError):
        file.sync_now()
    assert file.needs_flush, "after a failed fsync the written bytes cannot be trusted"
    fs.sync_error = None
    writes_before = fs.writes[str(path)]
    file.append(b"def")
    file.sync_now()
    assert path.read_bytes() == b"HEADabcdef"
    assert fs.writes[str(path)] == writes_before + 1, "rewritten in one write"


def test_close_waits_for_an_inflight_fsync(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    file = AppendOnlyFile(fs, str(tmp_path / "f"), initial=b"HEAD")
    file.flush()
    ticket = file.begin_sync()
    assert ticket is not None
    file.close()
    file.run_sync(ticket)  # the descriptor must still be open
    file.end_sync(ticket, None)
    with pytest.raises(OSError):
        os.fstat(ticket.fd)  # closed once the fsync was over
    assert file.begin_sync() is None


def test_sync_now_refuses_while_the_committer_syncs(tmp_path: Path) -> None:
    file = AppendOnlyFile(FaultyFileSystem(), str(tmp_path / "f"), initial=b"HEAD")
    file.flush()
    ticket = file.begin_sync()
    assert ticket is not None
    with pytest.raises(StoreError):
        file.sync_now()
    file.run_sync(ticket)
    file.end_sync(ticket, None)


def test_one_write_per_flush(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    path = tmp_path / "f"
    file = AppendOnlyFile(fs, str(path))
    for index in range(1000):
        file.append(b"record %d;" % index)
    file.flush()
    assert fs.writes[str(path)] == 1
