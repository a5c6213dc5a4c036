"""Admission's bookkeeping on a clock the test moves: the sliding window, the release of held
connections when an address is no longer slowed, and the bound on addresses tracked."""

from __future__ import annotations

import asyncio

from leveret.server.admission import MAX_TRACKED_ADDRESSES, Admission, AdmissionSettings

SETTINGS = AdmissionSettings(threshold=10, window=60.0, rate=1.0, max_held=5)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Connection:
    def __init__(self) -> None:
        self.state = "new"

    def admit(self) -> None:
        self.state = "admitted"

    def reset(self) -> None:
        self.state = "reset"

    @property
    def gone(self) -> bool:
        return False


def test_failures_spread_wider_than_the_window_do_not_slow_an_address() -> None:
    clock = Clock()
    admission = Admission(SETTINGS, clock)
    for _ in range(30):  # three windows' worth of failures, at a third of the threshold's pace
        admission.failed("10.0.0.1")
        clock.now += 18.0
        assert not admission.marked("10.0.0.1")


def test_failures_within_the_window_slow_an_address_until_they_age_out() -> None:
    async def scenario() -> None:
        clock = Clock()
        admission = Admission(SETTINGS, clock)
        for _ in range(10):
            admission.failed("10.0.0.2")
            clock.now += 1.0
        assert admission.marked("10.0.0.2") and not admission.marked("10.0.0.3")
        connections = [Connection() for _ in range(8)]
        admitted = [admission.arrived("10.0.0.2", c) for c in connections]
        assert admitted == [True] + [False] * 7  # one second's worth at once
        assert [c.state for c in connections[6:]] == ["reset", "reset"]  # beyond max_held
        assert admission.held("10.0.0.2") == 5
        assert admission.arrived("10.0.0.3", Connection())  # another address is not slowed
        clock.now += 2 * SETTINGS.window
        assert not admission.marked("10.0.0.2")  # and those that waited go in at once
        assert [c.state for c in connections[1:6]] == ["admitted"] * 5
        assert admission.tracked == 0

    asyncio.run(scenario())


def test_the_addresses_tracked_are_bounded() -> None:
    admission = Admission(SETTINGS, Clock())
    for index in range(MAX_TRACKED_ADDRESSES + 500):
        admission.failed(f"10.{index // 65536}.{index // 256 % 256}.{index % 256}")
    assert admission.tracked == MAX_TRACKED_ADDRESSES
