"""A well-behaved client's round-trip rate on a node alone, then beside hostile clients.

`flock /tmp/leveret-bench.lock python -m bench.hostile_clients` prints both rates and their
ratio (the README records it). The hostile load: 5,000 connections abandoned mid-handshake,
100 slowloris clients (reopened as the node closes them), a consumer that never reads its
deliveries with a publisher feeding it, and clients sending frames above frame_max in a loop.
"""

from __future__ import annotations

import argparse
import socket
import struct
import threading
import time

import pika

from leveret.amqp import methods as m
from leveret.amqp.frames import method_frame
from tests.hostile.clients import (
    Slowloris,
    abandon_mid_handshake,
    connect,
    handshake,
    read_close,
    round_trips,
    rss_bytes,
)
from tests.support.node import NodeProcess


def _frame_max_violations(port: int, stop: threading.Event) -> None:
    big = method_frame(1, m.BasicPublish(routing_key="q"))[7:-1] + b"\x00" * 100_000
    while not stop.is_set():
        with connect(port) as sock:
            handshake(sock, frame_max=4096)
            sock.sendall(struct.pack(">BHI", 1, 1, len(big)) + big + b"\xce")
            read_close(sock)


def _never_reading_consumer(node: NodeProcess, stop: threading.Event) -> None:
    sock = connect(node.ports["amqp"])
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    handshake(sock)
    publisher = pika.BlockingConnection(pika.URLParameters(node.url))
    channel = publisher.channel()
    channel.queue_declare("bench-never-read", arguments={"x-max-length": 2000})
    sock.sendall(method_frame(1, m.BasicConsume(queue="bench-never-read", no_ack=True)))
    while not stop.is_set():
        channel.basic_publish("", "bench-never-read", b"m" * 4096)
    publisher.close()
    sock.close()


def _slowloris(port: int, stop: threading.Event) -> None:
    while not stop.is_set():
        wave = Slowloris(port, clients=100, interval=1.0)
        wave.wait(20)
        wave.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--abandoned", type=int, default=5000)
    args = parser.parse_args()
    with NodeProcess() as node:
        pid = node.proc.pid  # type: ignore[union-attr]
        round_trips(node.url, 1.0)  # warm up
        alone = round_trips(node.url, args.seconds) / args.seconds
        stop = threading.Event()
        abandoned = [
            abandon_mid_handshake(node.ports["amqp"], index) for index in range(args.abandoned)
        ]
        loads = [
            threading.Thread(target=_frame_max_violations, args=(node.ports["amqp"], stop)),
            threading.Thread(target=_never_reading_consumer, args=(node, stop)),
            threading.Thread(target=_slowloris, args=(node.ports["amqp"], stop)),
        ]
        for load in loads:
            load.daemon = True
            load.start()
        time.sleep(2.0)  # the load under way
        beside = round_trips(node.url, args.seconds) / args.seconds
        rss = rss_bytes(pid)
        stop.set()
        for sock in abandoned:
            sock.close()
        for load in loads:
            load.join(30)
    print(f"alone: {alone:.0f} round trips/s")
    print(f"beside hostile clients: {beside:.0f} round trips/s")
    print(f"ratio: {beside / alone:.2f}")
    print(f"node RSS under load: {rss / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
