"""Loopback ports for servers that tests stop and start again on the same port."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_LOWEST = 10000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def restartable_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports below the kernel's ephemeral range.

    A port from that range (what binding port 0 gives) can be handed to some outgoing
    connection while its server is down, and the server started again then fails with
    EADDRINUSE; the kernel never picks a port below the range on its own."""
    ceiling = _ephemeral_floor()
    sockets: list[socket.socket] = []
    try:
        for _ in range(1000):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", random.randrange(_LOWEST, ceiling)))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)  # held until all are chosen, so that they differ
            if len(sockets) == count:
                return [sock.getsockname()[1] for sock in sockets]
        raise RuntimeError(f"no {count} free loopback ports between {_LOWEST} and {ceiling}")
    finally:
        for sock in sockets:
            sock.close()


def _ephemeral_floor() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
