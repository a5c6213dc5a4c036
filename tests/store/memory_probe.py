"""Writes a queue store of many small messages, or recovers one and reports peak memory, in a
fresh process so the measurement sees nothing but the store.

Run as: python -m tests.store.memory_probe write|recover DIRECTORY COUNT SEGMENT_SIZE
"""

from __future__ import annotations

import json
import sys

from leveret.store import QueueStore


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


def write(directory: str, count: int, segment_size: int) -> None:
    store = QueueStore.open(directory, segment_size=segment_size)
    body = b"m" * 100
    header = b"\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x64\x90\x00\x02"
    for seq in range(1, count + 1):
        store.append(seq, "amq.direct", "memory.test", header, body)
        if seq % 100_000 == 0:
            store.sync()
    store.close()


def recover(directory: str, segment_size: int) -> dict[str, int]:
    baseline = _status_kib("VmRSS")
    _reset_peak()
    store = QueueStore.open(directory, segment_size=segment_size)
    entries = 0
    for entry in store.recover():
        entries += 1
        if entry.seq % 3 == 0:
            store.mark_delivered(entry.seq)
        if entries % 2048 == 0:
            store.sync()
    # Page everything in as a queue with a 2048-message window would, consuming as it goes.
    cursor = None
    paged = 0
    while True:
        batch = store.read_messages(cursor, 2048)
        if not batch.messages:
            break
        cursor = batch.cursor
        paged += len(batch.messages)
        for message in batch.messages:
            store.ack(message.seq)
        store.sync()  # what the group committer does once per loop iteration
    store.close()
    return {
        "baseline_kib": baseline,
        "peak_kib": _status_kib("VmHWM"),
        "count": store.message_count,
        "entries": entries,
        "paged": paged,
    }


if __name__ == "__main__":
    action, directory, count, segment_size = sys.argv[1:5]
    if action == "write":
        write(directory, int(count), int(segment_size))
    else:
        print(json.dumps(recover(directory, int(segment_size))))
