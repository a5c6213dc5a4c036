"""Admission of new connections: an address whose recent connections failed gets new ones slowly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)

# Addresses tracked at once: an attacker with many addresses (an IPv6 prefix, say) cannot grow
# the ledger without bound; the entry seen longest ago goes first.
MAX_TRACKED_ADDRESSES = 10_000
# SO_LINGER on, zero seconds: close() sends a reset and keeps no TIME_WAIT state here.
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)


@dataclass(frozen=True, slots=True)
class AdmissionSettings:
    """What counts as abuse and how an abusive address is admitted (see the config keys)."""

    threshold: int  # failed connections within `window` that mark an address; 0: never
    window: float  # seconds
    rate: float  # new connections a second admitted from a marked address (also the burst)
    max_held: int  # connections of a marked address waiting their turn; beyond, reset


class Admitted(Protocol):
    """A connection as admission sees it: told when it may start reading, or reset."""

    def admit(self) -> None: ...

    def reset(self) -> None: ...

    @property
    def gone(self) -> bool: ...


@dataclass(slots=True)
class _Address:
    """One address's failures (a sliding window of two fixed ones) and its token bucket."""

    window_start: float
    failures: int = 0
    previous_failures: int = 0
    tokens: float = 0.0
    refilled: float = 0.0
    held: deque[Admitted] = field(default_factory=deque)
    timer: asyncio.TimerHandle | None = None
    marked: bool = False

    def failure_estimate(self, now: float, window: float) -> float:
        """Failures in the last `window` seconds, weighing the previous window by its overlap."""
        self._roll(now, window)
        overlap = 1.0 - (now - self.window_start) / window
        return self.failures + self.previous_failures * max(0.0, overlap)

    def _roll(self, now: float, window: float) -> None:
        elapsed = now - self.window_start
        if elapsed < window:
            return
        self.previous_failures = self.failures if elapsed < 2 * window else 0
        self.failures = 0
        self.window_start = now - elapsed % window


class Admission:
    """Counts, per source address, connections that failed: a connection-level error from the
    node, or a handshake abandoned or timed out. An address with `threshold` of them within
    `window` seconds is marked: its new connections are read only as its token bucket allows
    (`rate` a second), those waiting beyond `max_held` are reset. Its established connections
    are untouched, and addresses that behave are never slowed, however fast they connect."""

    def __init__(
        self, settings: AdmissionSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._addresses: dict[str, _Address] = {}

    @property
    def enabled(self) -> bool:
        return self.settings.threshold > 0

    def marked(self, address: str) -> bool:
        entry = self._addresses.get(address)
        return entry is not None and self._is_marked(address, entry, self._clock())

    def held(self, address: str) -> int:
        entry = self._addresses.get(address)
        return 0 if entry is None else len(entry.held)

    @property
    def tracked(self) -> int:
        return len(self._addresses)

    def arrived(self, address: str, connection: Admitted) -> bool:
        """Whether `connection` may be read now; if not, it is held (admitted later) or reset."""
        if not self.enabled:
            return True
        entry = self._addresses.get(address)
        now = self._clock()
        if entry is None or not self._is_marked(address, entry, now):
            return True
        self._refill(entry, now)
        if not entry.held and entry.tokens >= 1.0:
            entry.tokens -= 1.0
            return True
        if len(entry.held) >= self.settings.max_held:
            connection.reset()
            return False
        entry.held.append(connection)
        self._schedule(address, entry)
        return False

    def failed(self, address: str) -> None:
        """A connection from `address` ended in failure."""
        if not self.enabled:
            return
        now = self._clock()
        entry = self._addresses.pop(address, None)  # re-inserted last: the most recent
        if entry is None:
            entry = _Address(window_start=now)
            self._forget_oldest()
        entry.failure_estimate(now, self.settings.window)
        entry.failures += 1
        self._addresses[address] = entry
        self._is_marked(address, entry, now)

    def _is_marked(self, address: str, entry: _Address, now: float) -> bool:
        settings = self.settings
        marked = entry.failure_estimate(now, settings.window) >= settings.threshold
        if marked and not entry.marked:
            # A marked address starts with one second of tokens: a burst as large as the rate.
            entry.tokens, entry.refilled = settings.rate, now
            log.warning(
                "connections from %s failed %d times within %gs: admitting %g new "
                "connections a second from it",
                address,
                settings.threshold,
                settings.window,
                settings.rate,
            )
        elif not marked and entry.marked:
            log.info("connections from %s no longer slowed", address)
            self._admit_all(entry)
        entry.marked = marked
        if not marked and entry.failures == 0 and entry.previous_failures == 0:
            self._addresses.pop(address, None)
        return marked

    def _refill(self, entry: _Address, now: float) -> None:
        rate = self.settings.rate
        entry.tokens = min(rate, entry.tokens + (now - entry.refilled) * rate)
        entry.refilled = now

    def _schedule(self, address: str, entry: _Address) -> None:
        if entry.timer is not None:
            return
        wait = max(0.0, (1.0 - entry.tokens) / self.settings.rate)
        loop = asyncio.get_running_loop()
        entry.timer = loop.call_later(wait, self._release, address, entry)

    def _release(self, address: str, entry: _Address) -> None:
        """Admit held connections as far as the tokens go; wait for more if some are left."""
        entry.timer = None
        now = self._clock()
        if not self._is_marked(address, entry, now):
            return  # _admit_all ran
        self._refill(entry, now)
        while entry.held and entry.tokens >= 1.0:
            connection = entry.held.popleft()
            if connection.gone:
                continue  # its client gave up while waiting: it takes no token
            entry.tokens -= 1.0
            connection.admit()
        if entry.held:
            self._schedule(address, entry)

    def _admit_all(self, entry: _Address) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        while entry.held:
            connection = entry.held.popleft()
            if not connection.gone:
                connection.admit()

    def _forget_oldest(self) -> None:
        """Room for one more address; one whose connections wait is dropped last."""
        if len(self._addresses) < MAX_TRACKED_ADDRESSES:
            return
        for address, entry in self._addresses.items():
            if not entry.held:
                del self._addresses[address]
                return


def reset_transport(transport: asyncio.BaseTransport) -> None:
    """Close a connection with a TCP reset: nothing is flushed and no state lingers."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # the peer is gone already: a close will do
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
    transport.abort()  # type: ignore[attr-defined]
