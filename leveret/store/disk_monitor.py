"""Free disk space of the data directory against `disk_free_limit`, polled by the node, which
raises or clears the disk alarm (blocking publishers) when the answer changes."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

_log = logging.getLogger(__name__)

DEFAULT_DISK_FREE_LIMIT = 50_000_000

# As RabbitMQ reads information units: binary for k/K/kiB/KiB, m/M/MiB, g/G/GiB; decimal for
# kB/KB, MB, GB.
_UNITS = {
    "": 1,
    "k": 1024,
    "K": 1024,
    "kiB": 1024,
    "KiB": 1024,
    "kB": 1000,
    "KB": 1000,
    "m": 1024**2,
    "M": 1024**2,
    "MiB": 1024**2,
    "MB": 1000**2,
    "g": 1024**3,
    "G": 1024**3,
    "GiB": 1024**3,
    "GB": 1000**3,
}
_LIMIT = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")

# Polled at most this often near the limit and at least this often far from it.
_FASTEST_POLL = 0.1
_SLOWEST_POLL = 10.0


def parse_disk_free_limit(value: int | str) -> int:
    """Bytes from an integer or a string such as "50MB", "1GB", "512MiB"."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError("disk_free_limit cannot be negative")
        return value
    match = _LIMIT.match(value)
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"invalid disk_free_limit {value!r}")
    return int(match.group(1)) * _UNITS[match.group(2)]


@dataclass(frozen=True)
class DiskStatus:
    free_bytes: int
    limit_bytes: int
    alarm: bool
    changed: bool
    """True when this poll raised or cleared the alarm."""

    def next_poll_interval(self, fill_rate_bytes_per_second: float = 100e6) -> float:
        """Seconds until the next poll: the time the margin above the limit would last at the
        given fill rate (100 MB/s by default), kept between 0.1 s and 10 s."""
        margin = max(self.free_bytes - self.limit_bytes, 0)
        return min(max(margin / fill_rate_bytes_per_second, _FASTEST_POLL), _SLOWEST_POLL)


def free_bytes_of(path: str) -> int:
    """Bytes an unprivileged process can still write on path's file system."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


class DiskMonitor:
    """Compares the data directory's free space with the limit each time the node polls."""

    def __init__(
        self,
        data_dir: str,
        limit: int | str = DEFAULT_DISK_FREE_LIMIT,
        *,
        free_bytes: Callable[[str], int] = free_bytes_of,
    ) -> None:
        self.data_dir = data_dir
        self.limit_bytes = parse_disk_free_limit(limit)
        self._free_bytes = free_bytes
        self.alarm = False
        _log.info("disk free limit set to %d bytes for %s", self.limit_bytes, data_dir)

    def set_limit(self, limit: int | str) -> None:
        self.limit_bytes = parse_disk_free_limit(limit)

    def poll(self) -> DiskStatus:
        """Measures free space and updates the alarm; logs when it is raised or cleared. A
        failing measurement keeps the previous alarm state."""
        try:
            free = self._free_bytes(self.data_dir)
        except OSError as error:
            _log.warning("cannot measure free disk space of %s: %s", self.data_dir, error)
            return DiskStatus(-1, self.limit_bytes, self.alarm, False)
        alarm = free < self.limit_bytes
        changed = alarm != self.alarm
        if changed:
            if alarm:
                _log.warning(
                    "free disk space alarm set: %d bytes free, limit %d", free, self.limit_bytes
                )
            else:
                _log.info(
                    "free disk space alarm cleared: %d bytes free, limit %d", free, self.limit_bytes
                )
        self.alarm = alarm
        return DiskStatus(free, self.limit_bytes, alarm, changed)
