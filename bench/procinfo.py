"""What a broker's processes cost: PIDs, CPU seconds, resident memory, disk writes, from /proc."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields after its last ")" do not.
    return text.rsplit(")", 1)[1].split()


def process_group_pids(pgid: int) -> list[int]:
    """PIDs of the live processes in process group `pgid` (a broker started in its own session)."""
    pids = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] is the state, fields[2] the process group.
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return sorted(pids)


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time the processes have used so far."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _CLOCK_TICKS


def _status_kib(pid: int, key: str) -> int:
    try:
        for line in (_PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pids: list[int]) -> int:
    return sum(_status_kib(pid, "VmRSS") for pid in pids)


def lifetime_peak_rss_kib(pids: list[int]) -> int:
    """Sum of each process's own peak resident set (VmHWM) since it started."""
    return sum(_status_kib(pid, "VmHWM") for pid in pids)


def write_bytes(pids: list[int]) -> int:
    """Bytes the processes have caused to be written to storage so far (/proc/PID/io write_bytes).

    Counted when a page is dirtied, so a page written, synced and dirtied again counts twice:
    this is what reaches the disk, not what the program appended.
    """
    total = 0
    for pid in pids:
        try:
            for line in (_PROC / str(pid) / "io").read_text().splitlines():
                if line.startswith("write_bytes:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total


def machine_busy_seconds() -> float:
    """CPU seconds all cores of the machine have spent busy (not idle, not waiting on I/O)."""
    try:
        with open(_PROC / "stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except OSError:
        return 0.0
    idle, iowait = fields[3], fields[4]
    # guest time (fields 8 and 9) is already counted in user and nice.
    return (sum(fields[:8]) - idle - iowait) / _CLOCK_TICKS


def wait_machine_quiet(max_busy_cores: float, timeout: float, window: float = 2.0) -> float:
    """Wait until the whole machine keeps at most `max_busy_cores` busy over `window` seconds
    (other users' test runs finished), or `timeout` passes; returns the last figure."""
    deadline = time.monotonic() + timeout
    while True:
        before = machine_busy_seconds()
        time.sleep(window)  # the measurement interval itself
        busy = (machine_busy_seconds() - before) / window
        if busy <= max_busy_cores or time.monotonic() >= deadline:
            return busy


@dataclass(frozen=True)
class UsageSample:
    monotonic_ns: int
    cpu_seconds: float
    rss_kib: int
    machine_busy_seconds: float
    write_bytes: int


class UsageSampler:
    """Samples a process group's CPU time and summed RSS from a thread, a few times a second."""

    def __init__(self, pgid: int, interval: float = 0.2) -> None:
        self._pgid = pgid
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="usage-sampler", daemon=True)
        self.samples: list[UsageSample] = []

    def _sample(self) -> None:
        while True:
            pids = process_group_pids(self._pgid)
            self.samples.append(
                UsageSample(
                    time.monotonic_ns(),
                    cpu_seconds(pids),
                    rss_kib(pids),
                    machine_busy_seconds(),
                    write_bytes(pids),
                )
            )
            if self._stop.wait(self._interval):
                return

    def window(self, start_ns: int, end_ns: int) -> list[UsageSample]:
        return [sample for sample in self.samples if start_ns <= sample.monotonic_ns <= end_ns]

    def cores_used(self, start_ns: int, end_ns: int) -> float | None:
        """CPU seconds per second between the first and last samples inside the window."""
        inside = self.window(start_ns, end_ns)
        if len(inside) < 2 or inside[-1].monotonic_ns == inside[0].monotonic_ns:
            return None
        elapsed = (inside[-1].monotonic_ns - inside[0].monotonic_ns) / 1e9
        return (inside[-1].cpu_seconds - inside[0].cpu_seconds) / elapsed

    def machine_cores_used(self, start_ns: int, end_ns: int) -> float | None:
        """Busy cores of the whole machine over the window: broker, generator and the rest."""
        inside = self.window(start_ns, end_ns)
        if len(inside) < 2 or inside[-1].monotonic_ns == inside[0].monotonic_ns:
            return None
        elapsed = (inside[-1].monotonic_ns - inside[0].monotonic_ns) / 1e9
        return (inside[-1].machine_busy_seconds - inside[0].machine_busy_seconds) / elapsed

    def write_bytes_per_second(self, start_ns: int, end_ns: int) -> float | None:
        """Disk bytes the broker wrote per second between the first and last samples inside."""
        inside = self.window(start_ns, end_ns)
        if len(inside) < 2 or inside[-1].monotonic_ns == inside[0].monotonic_ns:
            return None
        elapsed = (inside[-1].monotonic_ns - inside[0].monotonic_ns) / 1e9
        return (inside[-1].write_bytes - inside[0].write_bytes) / elapsed

    def peak_rss_kib(self, start_ns: int, end_ns: int) -> int:
        return max((sample.rss_kib for sample in self.window(start_ns, end_ns)), default=0)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
