"""Busy polling: a node polls for a while after input, then sleeps, and never spins idle."""

from __future__ import annotations

import asyncio
import os
import selectors
import time
from pathlib import Path
from typing import Any

import pika
import pytest

from leveret.busy_poll import DEFAULT_WINDOW_MICROSECONDS, BusyPoll
from leveret.config import Config, ConfigError
from tests.support.node import NodeProcess


class _RecordingSelector(selectors.DefaultSelector):
    """Records, for every time the loop asks for I/O, whether it was polling and how long the
    loop let the selector block."""

    def __init__(self, poll: BusyPoll) -> None:
        super().__init__()
        self.poll = poll
        self.calls: list[tuple[bool, float | None]] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        self.calls.append((self.poll.polling, timeout))
        return super().select(timeout)


def test_polls_while_input_comes_and_stops_a_window_after_it() -> None:
    poll = BusyPoll(0.1)
    selector = _RecordingSelector(poll)

    async def scenario() -> None:
        poll.input_arrived()
        last_input = time.monotonic()
        assert poll.polling
        for _ in range(6):  # input every 10 ms keeps it polling for 60 ms
            await asyncio.sleep(0.01)
            # A loaded machine may oversleep past the window; only then may polling have ended.
            assert poll.polling or time.monotonic() - last_input > poll.window
            poll.input_arrived()
            last_input = time.monotonic()
        started = time.monotonic()
        while poll.polling and time.monotonic() - started < 5:
            await asyncio.sleep(0.005)
        assert 0.075 <= time.monotonic() - started < 5
        await asyncio.sleep(0.01)

    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        runner.run(scenario())
    polling = [timeout for was_polling, timeout in selector.calls if was_polling]
    # While it polled the loop never blocked, however loaded the machine (a pass that yields
    # the CPU may take milliseconds): it asked the selector without a timeout every time, more
    # often than once per sleep above. Once the window closed, it slept in the selector again.
    assert len(polling) > 10
    assert set(polling) == {0}
    assert any(timeout for was_polling, timeout in selector.calls if not was_polling)


def test_a_window_of_zero_never_polls() -> None:
    async def scenario() -> None:
        poll = BusyPoll(0)
        poll.input_arrived()
        assert not poll.polling

    asyncio.run(scenario())


def test_the_setting() -> None:
    assert Config().busy_poll_microseconds == DEFAULT_WINDOW_MICROSECONDS
    assert Config.load(None, {"busy_poll_microseconds": "0"}).busy_poll_microseconds == 0
    with pytest.raises(ConfigError, match="busy_poll_microseconds"):
        Config.load(None, {"busy_poll_microseconds": "-1"})


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("window", [DEFAULT_WINDOW_MICROSECONDS, 0])
def test_a_node_serves_and_goes_idle_after_traffic(tmp_path: Path, window: int) -> None:
    config = tmp_path / "leveret.toml"
    config.write_text(f"busy_poll_microseconds = {window}\n")
    with NodeProcess(extra_args=["--config", str(config)]) as node:
        assert node.proc is not None
        connection = pika.BlockingConnection(pika.URLParameters(node.url))
        channel = connection.channel()
        channel.queue_declare("busy-poll")
        channel.confirm_delivery()
        for number in range(500):
            channel.basic_publish("", "busy-poll", str(number).encode())
        got = []
        for _, _, body in channel.consume("busy-poll", auto_ack=True, inactivity_timeout=5):
            if body is None:
                break
            got.append(int(body))
            if len(got) == 500:
                break
        channel.cancel()
        assert got == list(range(500))
        time.sleep(0.2)  # past any window
        before = _cpu_seconds(node.proc.pid)
        time.sleep(1.0)
        # Idle but for its timers: it does not keep polling with nothing coming in.
        assert _cpu_seconds(node.proc.pid) - before < 0.2
        connection.close()
