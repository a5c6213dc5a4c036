"""A well-behaved client's round-trip rate on a node alone, then beside hostile clients.

`flock /tmp/leveret-bench.lock python -m bench.hostile_clients` prints, for each kind of hostile
client and for all of them at once, the rate alone just before, the rate beside them and the
ratio (the README records them). The hostile clients: 5,000 connections abandoned
mid-handshake, 100 slowloris clients (reopened as the node closes them), a consumer that never
reads its deliveries with a publisher feeding it, and a client that connects and sends a frame
above frame_max in a tight loop. Each connects from an address of its own (127.0.0.2 to
127.0.0.5, as hostile clients on other hosts would; the never-reading consumer's publisher is a
plain client on 127.0.0.1), so that the node slowing one of them does not hold back another;
the measuring client connects from 127.0.0.1 before them.

Each hostile client runs in a process of its own, at the measuring client's priority: the
attackers' own CPU counts against the measuring client on a two-core machine, as it would on a
host that both share. `--nice` runs them at nice 19 instead, where they get only the CPU that
the node and the measuring client leave, and so attack much less. Each row also prints how many
connections the hostile clients opened a second while it was measured, and the node's CPU use
then, to show how hard they pressed. Measuring alone just before each row keeps the ratios from
drifting with the load of a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import socket
import struct
import time
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import pika

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.hostile.clients import (
    RoundTrips,
    Slowloris,
    abandon_mid_handshake,
    connect,
    handshake,
    read_close,
    rss_bytes,
)
from tests.support.node import NodeProcess

ABANDONING, SLOWLORIS, NEVER_READING, OVERSIZING = (f"127.0.0.{n}" for n in range(2, 6))


if TYPE_CHECKING:
    Counter: TypeAlias = Synchronized[int]  # a multiprocessing.Value("q") shared with them


def _frame_max_violations(node: NodeProcess, stop: Event, opened: Counter) -> None:
    port = node.ports["amqp"]
    big = method_frame(1, m.BasicPublish(routing_key="q"))[7:-1] + b"\x00" * 100_000
    while not stop.is_set():
        # A reset from the node, which slows this address: connect again.
        with contextlib.suppress(OSError), connect(port, source=OVERSIZING) as sock:
            with opened.get_lock():
                opened.value += 1
            handshake(sock, frame_max=4096)
            sock.sendall(struct.pack(">BHI", 1, 1, len(big)) + big + b"\xce")
            read_close(sock)


def _never_reading_consumer(node: NodeProcess, stop: Event, opened: Counter) -> None:
    sock = connect(node.ports["amqp"], source=NEVER_READING)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    handshake(sock)
    publisher = pika.BlockingConnection(pika.URLParameters(node.url))
    channel = publisher.channel()
    channel.queue_declare("bench-never-read", arguments={"x-max-length": 2000})
    sock.sendall(method_frame(1, m.BasicConsume(queue="bench-never-read", no_ack=True)))
    # Once the consumer's socket is full the node stops reading this publisher: it stays blocked.
    while not stop.is_set():
        channel.basic_publish("", "bench-never-read", b"m" * 4096)


def _slowloris(node: NodeProcess, stop: Event, opened: Counter) -> None:
    while not stop.is_set():
        wave = Slowloris(node.ports["amqp"], clients=100, interval=1.0, source=SLOWLORIS)
        with opened.get_lock():
            opened.value += 100
        wave.wait(20)
        wave.stop()


def _abandoned(node: NodeProcess, stop: Event, opened: Counter) -> None:
    held = []
    for index in range(5000):
        with contextlib.suppress(OSError):  # reset by the node, which slows this address
            held.append(abandon_mid_handshake(node.ports["amqp"], index, ABANDONING))
        with opened.get_lock():
            opened.value += 1
    stop.wait()
    for sock in held:
        sock.close()


LOADS: dict[str, Callable[[NodeProcess, Event, Counter], None]] = {
    "5,000 abandoned handshakes": _abandoned,
    "100 slowloris clients": _slowloris,
    "a consumer that never reads": _never_reading_consumer,
    "frame_max violations in a loop": _frame_max_violations,
}


def _attack(name: str, node: NodeProcess, stop: Event, opened: Counter, nice: bool) -> None:
    if nice:
        os.nice(19)
    LOADS[name](node, stop, opened)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _beside(
    node: NodeProcess, client: RoundTrips, loads: list[str], seconds: float, nice: bool
) -> tuple[float, int, float, float]:
    """The measuring client's rate while `loads` run, the node's RSS then, the connections the
    hostile clients opened a second and the node's CPU use (in cores) meanwhile."""
    stop = multiprocessing.Event()
    opened: Counter = multiprocessing.Value("q", 0)
    workers = [
        multiprocessing.Process(target=_attack, args=(name, node, stop, opened, nice), daemon=True)
        for name in loads
    ]
    for worker in workers:
        worker.start()
    time.sleep(3.0)  # the load under way
    pid = node.proc.pid  # type: ignore[union-attr]
    opened_before, cpu_before, started = opened.value, _cpu_seconds(pid), time.monotonic()
    rate = client.count(seconds) / seconds
    elapsed = time.monotonic() - started
    attack = (opened.value - opened_before) / elapsed
    cpu = (_cpu_seconds(pid) - cpu_before) / elapsed
    rss = rss_bytes(pid)
    stop.set()
    for worker in workers:
        worker.join(30)
        if worker.is_alive():
            worker.kill()  # a publisher blocked for good by the node's flow control
    return rate, rss, attack, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--nice", action="store_true", help="run the attackers at nice 19")
    parser.add_argument("--only", choices=range(len(LOADS) + 1), type=int, action="append")
    args = parser.parse_args()
    rows = [[name] for name in LOADS] + [list(LOADS)]
    with NodeProcess() as node:
        client = RoundTrips(node.url)
        client.count(1.0)  # warm up
        for index, loads in enumerate(rows):
            if args.only and index not in args.only:
                continue
            alone = client.count(args.seconds) / args.seconds
            rate, rss, attack, cpu = _beside(node, client, loads, args.seconds, args.nice)
            what = "all of them" if len(loads) > 1 else loads[0]
            print(
                f"beside {what}: {rate:.0f} round trips/s, alone {alone:.0f}, "
                f"ratio {rate / alone:.2f}; hostile connections {attack:.0f}/s, "
                f"node CPU {cpu:.2f} cores, node RSS {rss / 2**20:.0f} MiB",
                flush=True,
            )
        client.close()


if __name__ == "__main__":
    main()
