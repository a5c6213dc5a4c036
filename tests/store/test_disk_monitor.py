"""The free-disk-space check: RabbitMQ's limit syntax, the alarm's edges, and the poll rate."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from leveret.store import DEFAULT_DISK_FREE_LIMIT, DiskMonitor, parse_disk_free_limit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (50_000_000, 50_000_000),
        ("1000", 1000),
        ("50MB", 50_000_000),
        ("1GB", 1_000_000_000),
        ("2kB", 2000),
        ("2KB", 2000),
        ("2k", 2048),
        ("2KiB", 2048),
        ("512MiB", 512 * 1024**2),
        ("3M", 3 * 1024**2),
        ("1G", 1024**3),
        (" 7 GiB ", 7 * 1024**3),
    ],
)
def test_limits_parse_like_rabbitmq(text: int | str, expected: int) -> None:
    assert parse_disk_free_limit(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "50 XB", "-5", "1.5GB", -1])
def test_bad_limits_are_refused(text: int | str) -> None:
    with pytest.raises(ValueError):
        parse_disk_free_limit(text)


def test_the_alarm_is_raised_and_cleared_once_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    free = [100_000_000]
    monitor = DiskMonitor(str(tmp_path), "50MB", free_bytes=lambda path: free[0])
    assert monitor.limit_bytes == DEFAULT_DISK_FREE_LIMIT
    first = monitor.poll()
    assert (first.alarm, first.changed) == (False, False)
    free[0] = 49_999_999
    with caplog.at_level(logging.WARNING):
        raised = monitor.poll()
    assert (raised.alarm, raised.changed) == (True, True)
    assert "alarm set" in caplog.text
    assert (monitor.poll().alarm, monitor.poll().changed) == (True, False)
    free[0] = 50_000_000
    cleared = monitor.poll()
    assert (cleared.alarm, cleared.changed) == (False, True)
    assert monitor.alarm is False


def test_a_failing_measurement_keeps_the_last_state(tmp_path: Path) -> None:
    def broken(path: str) -> int:
        raise OSError("statvfs failed")

    monitor = DiskMonitor(str(tmp_path), 10, free_bytes=broken)
    monitor.alarm = True
    status = monitor.poll()
    assert status.alarm and not status.changed


def test_polls_come_faster_near_the_limit(tmp_path: Path) -> None:
    free = [10**12]
    monitor = DiskMonitor(str(tmp_path), "50MB", free_bytes=lambda path: free[0])
    assert monitor.poll().next_poll_interval() == 10.0
    free[0] = 60_000_000
    assert monitor.poll().next_poll_interval() == pytest.approx(0.1)
    free[0] = 1_050_000_000
    assert monitor.poll().next_poll_interval() == pytest.approx(10.0)
    free[0] = 350_000_000
    assert monitor.poll().next_poll_interval() == pytest.approx(3.0)


def test_the_real_file_system_is_measured(tmp_path: Path) -> None:
    status = DiskMonitor(str(tmp_path)).poll()
    assert status.free_bytes > 0
    assert status.alarm == (status.free_bytes < DEFAULT_DISK_FREE_LIMIT)
