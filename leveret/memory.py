"""The node's memory: what it holds resident, and what the machine or its container lets it use."""

from __future__ import annotations

import os
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")


# What RabbitMQ assumes when the system does not say how much memory it has: a relative
# watermark of an unknown total must not become 0 bytes, an alarm that never clears.
UNKNOWN_TOTAL_MEMORY = 1024**3


# Where a container's memory limit is (cgroup v2, then v1); "max" or a huge number: no limit.
CGROUP_LIMIT_FILES = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def total_memory(cgroup_files: tuple[Path, ...] = CGROUP_LIMIT_FILES) -> int:
    """The memory this node may use in bytes: the machine's, or its container's limit if lower
    (a watermark taken from the machine's memory would let the kernel kill the node first)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 0
    total = total if total > 0 else UNKNOWN_TOTAL_MEMORY
    for path in cgroup_files:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            return int(text)
    return total


_statm: int | None = None  # a descriptor of /proc/self/statm, kept open


def resident_bytes() -> int:
    """The node's resident memory. The file is opened once and kept: at the node's fd limit a
    new open fails, and memory must be watched then most of all (the alarm's task died of it)."""
    global _statm
    if _statm is None:
        _statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    return int(os.pread(_statm, 128, 0).split()[1]) * _PAGE
