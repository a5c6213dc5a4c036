"""Durable Raft storage: what is fsynced comes back, torn tails are cut, snapshots are atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.raft import Entry, EntryKind, HardState, Ready, Snapshot, StorageState
from cluster.raft.memory_storage import MemoryStorage
from cluster.raft.records import Truncate, decode_records, encode_record
from cluster.raft.storage import LOG_FILE, SNAPSHOT_FILE, FileStorage, StorageCorrupted

VOTERS = ("a", "b", "c")


def entries(first: int, last: int, term: int) -> tuple[Entry, ...]:
    return tuple(Entry(i, term, EntryKind.NORMAL, b"cmd-%d" % i) for i in range(first, last + 1))


def reopen(directory: Path) -> StorageState:
    storage = FileStorage(directory)
    try:
        return storage.load()
    finally:
        storage.close()


def test_a_new_directory_recovers_as_empty(tmp_path: Path) -> None:
    assert reopen(tmp_path / "raft") == StorageState()


def test_persisted_entries_and_hard_state_come_back(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(hard_state=HardState(2, "a", 0), entries=entries(1, 3, 2)))
    storage.persist(Ready(hard_state=HardState(3, "b", 2), entries=entries(4, 5, 3)))
    storage.close()
    recovered = reopen(tmp_path)
    assert recovered.hard_state == HardState(3, "b", 2)
    assert recovered.entries == entries(1, 3, 2) + entries(4, 5, 3)
    assert recovered.snapshot is None


def test_a_truncation_survives_recovery(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(entries=entries(1, 5, 1)))
    storage.persist(Ready(truncate_from=3, entries=entries(3, 4, 2)))
    storage.close()
    assert reopen(tmp_path).entries == entries(1, 2, 1) + entries(3, 4, 2)


@pytest.mark.parametrize("damage", ["partial_record", "garbage", "flipped_byte"])
def test_a_torn_tail_is_cut_and_the_log_stays_usable(tmp_path: Path, damage: str) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(hard_state=HardState(1, None, 0), entries=entries(1, 3, 1)))
    storage.close()
    log = tmp_path / LOG_FILE
    intact = log.read_bytes()
    last_record = encode_record(Entry(4, 1, EntryKind.NORMAL, b"never acknowledged"))
    if damage == "partial_record":
        log.write_bytes(intact + last_record[:-3])
    elif damage == "garbage":
        log.write_bytes(intact + b"\x00\x00\x01\x00 not a record")
    else:
        flipped = bytearray(last_record)
        flipped[-1] ^= 0xFF
        log.write_bytes(intact + bytes(flipped))
    storage = FileStorage(tmp_path)
    assert storage.load().entries == entries(1, 3, 1)
    assert log.read_bytes() == intact
    storage.persist(Ready(entries=entries(4, 4, 1)))
    storage.close()
    assert reopen(tmp_path).entries == entries(1, 4, 1)


def test_a_compaction_snapshot_replaces_the_entries_it_covers(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(hard_state=HardState(2, "a", 8), entries=entries(1, 10, 2)))
    snapshot = Snapshot(8, 2, VOTERS, b"state at 8")
    storage.persist(Ready(snapshot=snapshot))
    storage.persist(Ready(entries=entries(11, 12, 2)))
    storage.close()
    recovered = reopen(tmp_path)
    assert recovered.snapshot == snapshot
    assert recovered.entries == entries(9, 12, 2)
    assert recovered.hard_state == HardState(2, "a", 8)
    records, _ = decode_records((tmp_path / LOG_FILE).read_bytes())
    assert not any(isinstance(r, Entry) and r.index <= 8 for r in records), "log was rewritten"


def test_a_snapshot_from_the_leader_replaces_a_disagreeing_log(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(entries=entries(1, 6, 1)))
    snapshot = Snapshot(9, 3, VOTERS, b"leader state")
    storage.persist(Ready(snapshot=snapshot, truncate_from=10, hard_state=HardState(3, None, 9)))
    storage.close()
    recovered = reopen(tmp_path)
    assert recovered.snapshot == snapshot and recovered.entries == ()


@pytest.mark.parametrize(("snapshot_term", "kept"), [(2, entries(6, 6, 2)), (3, ())])
def test_a_crash_between_snapshot_and_log_rewrite_recovers_consistently(
    tmp_path: Path, snapshot_term: int, kept: tuple[Entry, ...]
) -> None:
    storage = FileStorage(tmp_path)
    storage.persist(Ready(entries=entries(1, 4, 1) + entries(5, 6, 2)))
    storage.close()
    # The snapshot file landed, the log rewrite did not. Entries that continue the snapshot
    # stay; a snapshot that disagrees with the log at its index replaces the whole log.
    snapshot = Snapshot(5, snapshot_term, VOTERS, b"s")
    (tmp_path / SNAPSHOT_FILE).write_bytes(encode_record(snapshot))
    recovered = reopen(tmp_path)
    assert (recovered.snapshot, recovered.entries) == (snapshot, kept)
    assert reopen(tmp_path) == recovered, "the log was repaired, recovery is stable"


def test_leftover_temporary_files_are_removed(tmp_path: Path) -> None:
    (tmp_path / (SNAPSHOT_FILE + ".tmp")).write_bytes(b"half written")
    reopen(tmp_path)
    assert not list(tmp_path.glob("*.tmp"))


def test_a_damaged_snapshot_file_is_refused_not_ignored(tmp_path: Path) -> None:
    (tmp_path / SNAPSHOT_FILE).write_bytes(encode_record(Snapshot(5, 2, VOTERS, b"s"))[:-1])
    with pytest.raises(StorageCorrupted):
        FileStorage(tmp_path)


def test_a_gap_in_the_log_is_refused(tmp_path: Path) -> None:
    (tmp_path / LOG_FILE).write_bytes(
        encode_record(Entry(1, 1)) + encode_record(Entry(3, 1)) + encode_record(Truncate(9))
    )
    with pytest.raises(StorageCorrupted):
        FileStorage(tmp_path)


def test_write_then_sync_batches_several_readies_into_one_fsync(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path)
    storage.write(Ready(entries=entries(1, 2, 1)))
    storage.write(Ready(entries=entries(3, 3, 1), hard_state=HardState(1, "a", 3)))
    storage.sync()
    storage.close()
    assert reopen(tmp_path).entries == entries(1, 3, 1)


# -- FileStorage behaves like the in-memory model, whatever the batches -----------------------


@st.composite
def _batches(draw: st.DrawFn) -> list[Ready]:
    """A plausible series of Ready batches: appends, conflicts, hard states, compactions."""
    readies: list[Ready] = []
    model = MemoryStorage()
    term = 1
    for _ in range(draw(st.integers(1, 12))):
        last = model.base_index + len(model.entries)
        action = draw(st.sampled_from(["append", "conflict", "compact", "install", "hard_state"]))
        if action == "conflict" and len(model.entries) > 0:
            term += 1
            start = draw(st.integers(model.base_index + 1, last))
            ready = Ready(truncate_from=start, entries=entries(start, start + 2, term))
        elif action == "compact" and len(model.entries) > 0:
            index = draw(st.integers(model.base_index + 1, last))
            held = model.entries[index - model.base_index - 1]
            ready = Ready(snapshot=Snapshot(index, held.term, VOTERS, b"s%d" % index))
        elif action == "install":
            term += 1
            index = max(last, model.base_index + 1) + draw(st.integers(0, 3))
            ready = Ready(snapshot=Snapshot(index, term, VOTERS, b"i"), truncate_from=index + 1)
        elif action == "hard_state":
            ready = Ready(hard_state=HardState(term, draw(st.sampled_from([None, "a", "b"])), 0))
        else:
            ready = Ready(entries=entries(last + 1, last + draw(st.integers(1, 4)), term))
        model.persist(ready)
        readies.append(ready)
    return readies


_settings = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(_batches())
def test_file_storage_recovers_exactly_what_the_model_holds(
    tmp_path_factory: pytest.TempPathFactory, readies: list[Ready]
) -> None:
    directory = tmp_path_factory.mktemp("raft")
    model, storage = MemoryStorage(), FileStorage(directory, fsync=False)
    for ready in readies:
        model.persist(ready)
        storage.persist(ready)
    assert storage.load() == model.load()
    storage.close()
    assert reopen(directory) == model.load()


@_settings
@given(_batches(), st.data())
def test_a_crash_mid_batch_recovers_a_prefix_of_that_batch(
    tmp_path_factory: pytest.TempPathFactory, readies: list[Ready], data: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("raft")
    storage = FileStorage(directory, fsync=False)
    *before, last = readies
    for ready in before:
        storage.persist(ready)
    log = directory / LOG_FILE
    size_before = log.stat().st_size if log.exists() else 0
    storage.persist(last)
    storage.close()
    if last.snapshot is not None:
        return  # a snapshot rewrites the log atomically: nothing to tear
    written = log.read_bytes()
    cut = data.draw(st.integers(size_before, len(written)))
    with open(log, "r+b") as file:
        file.truncate(cut)
        os.fsync(file.fileno())
    recovered = reopen(directory)
    assert recovered in _prefix_states(before, last)


def _prefix_states(before: list[Ready], last: Ready) -> list[StorageState]:
    """The states after `before` and each prefix of `last`'s writes, in the Ready order."""
    steps: list[Ready] = []
    if last.truncate_from is not None:
        steps.append(Ready(truncate_from=last.truncate_from))
    steps += [Ready(entries=(entry,)) for entry in last.entries]
    if last.hard_state is not None:
        steps.append(Ready(hard_state=last.hard_state))
    states = []
    for count in range(len(steps) + 1):
        model = MemoryStorage()
        for ready in [*before, *steps[:count]]:
            model.persist(ready)
        states.append(model.load())
    return states
