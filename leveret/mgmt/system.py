"""The node process's resources: memory, file descriptors, disk space, uptime."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..memory import resident_bytes, total_memory
from ..store import parse_disk_free_limit
from ..store.disk_monitor import free_bytes_of

if TYPE_CHECKING:
    from ..config import Config


@dataclass(frozen=True, slots=True)
class SystemFigures:
    mem_used: int
    mem_limit: int
    fd_used: int
    fd_total: int
    disk_free: int
    disk_free_limit: int
    processors: int
    os_pid: int


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _disk_limit(config: Config) -> int:
    try:
        return parse_disk_free_limit(getattr(config, "disk_free_limit", 50_000_000))
    except ValueError:
        return 0


def system_figures(config: Config) -> SystemFigures:
    limit = config.memory_limit(total_memory())  # the threshold in force, as the node uses it
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        disk_free = free_bytes_of(str(config.data_path))
    except OSError:
        disk_free = 0
    return SystemFigures(
        mem_used=resident_bytes(),
        mem_limit=limit,
        fd_used=_open_fds(),
        fd_total=soft if soft != resource.RLIM_INFINITY else 1 << 20,
        disk_free=disk_free,
        disk_free_limit=_disk_limit(config),
        processors=os.cpu_count() or 1,
        os_pid=os.getpid(),
    )
