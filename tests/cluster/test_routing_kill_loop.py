"""A kill loop across nodes: no confirmed message is lost, and a repeat is always marked.

A durable queue lives on A; a publisher with confirms works through B (C while B is down) and a
consumer acknowledging each message through C (B while C is down). The home node, the
publisher's node and the consumer's node are SIGKILLed and restarted in turn. Afterwards every
confirmed message must have been delivered, and a message delivered twice must carry the
redelivered flag from its second delivery on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import Cluster, queue_visible, running_cluster
from tests.support.node import wait_for

QUEUE = "kill-loop"
PERSISTENT = pika.BasicProperties(delivery_mode=2)
A, B, C = 0, 1, 2
# Client errors that mean "the node went away or refused for now": reconnect and go on.
_TRANSIENT = (
    pika.exceptions.AMQPError,
    ConnectionError,
    OSError,
    AssertionError,  # a node's URL read while it restarts
)


@dataclass
class Tally:
    confirmed: set[int] = field(default_factory=set)
    deliveries: list[tuple[int, bool]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)


def _url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None and cluster.nodes[index].running
    return process.url


def _connect_first(cluster: Cluster, order: tuple[int, ...]) -> pika.BlockingConnection:
    for index in order:
        try:
            return pika.BlockingConnection(pika.URLParameters(_url(cluster, index)))
        except _TRANSIENT:
            continue
    raise ConnectionError("no node reachable")


def _keep_going(tally: Tally, work: Callable[[], None]) -> None:
    while not tally.stop.is_set():
        try:
            work()
        except _TRANSIENT as error:
            tally.errors.append(type(error).__name__)
            time.sleep(0.1)


def publisher(cluster: Cluster, tally: Tally, limit: int) -> None:
    next_number = iter(range(limit))

    def session() -> None:
        conn = _connect_first(cluster, (B, C))
        try:
            channel = conn.channel()
            channel.confirm_delivery()
            for number in next_number:
                if tally.stop.is_set():
                    return
                # Mandatory: a message the down home node would drop comes back unconfirmed.
                channel.basic_publish("", QUEUE, str(number).encode(), PERSISTENT, mandatory=True)
                tally.confirmed.add(number)
                time.sleep(0.002)
            tally.stop.wait()
        finally:
            if conn.is_open:
                conn.close()

    _keep_going(tally, session)


def consumer(cluster: Cluster, tally: Tally) -> None:
    def session() -> None:
        conn = _connect_first(cluster, (C, B))
        try:
            channel = conn.channel()
            channel.basic_qos(prefetch_count=20)
            for method, _properties, body in channel.consume(QUEUE, inactivity_timeout=0.2):
                if tally.stop.is_set():
                    return
                if method is None:
                    continue
                tally.deliveries.append((int(body), method.redelivered))
                channel.basic_ack(method.delivery_tag)
        finally:
            if conn.is_open:
                conn.close()

    _keep_going(tally, session)


def drain(cluster: Cluster, tally: Tally) -> None:
    """Read what is left through B once every node serves again."""

    def empty() -> bool:
        try:
            with pika.BlockingConnection(pika.URLParameters(_url(cluster, B))) as conn:
                channel = conn.channel()
                while True:
                    method, _properties, body = channel.basic_get(QUEUE, auto_ack=True)
                    if method is None:
                        return True
                    tally.deliveries.append((int(body), method.redelivered))
        except _TRANSIENT:
            return False

    wait_for(empty, 30, 0.2)


def check(tally: Tally) -> None:
    delivered: dict[int, int] = {}
    unmarked_repeats = []
    for number, redelivered in tally.deliveries:
        delivered[number] = delivered.get(number, 0) + 1
        if delivered[number] > 1 and not redelivered:
            unmarked_repeats.append(number)
    lost = sorted(tally.confirmed - delivered.keys())
    assert not lost, f"confirmed but never delivered: {lost[:20]} ({len(lost)})"
    assert not unmarked_repeats, f"delivered again without redelivered: {unmarked_repeats[:20]}"
    assert tally.confirmed, "nothing was confirmed"
    assert tally.errors, "no client noticed a kill"
    print(
        f"kill loop: {len(tally.confirmed)} confirmed, {len(tally.deliveries)} deliveries "
        f"({len(tally.deliveries) - len(delivered)} repeats), {len(tally.errors)} client errors"
    )


def _run_loop(rounds: int) -> None:
    with running_cluster(3) as cluster:
        with pika.BlockingConnection(pika.URLParameters(_url(cluster, A))) as conn:
            conn.channel().queue_declare(QUEUE, durable=True)
        for index in (B, C):
            wait_for(lambda index=index: queue_visible(_url(cluster, index), QUEUE), 10, 0.05)
        tally = Tally()
        workers = [
            threading.Thread(target=publisher, args=(cluster, tally, 1_000_000), daemon=True),
            threading.Thread(target=consumer, args=(cluster, tally), daemon=True),
        ]
        for worker in workers:
            worker.start()
        try:
            for round_number in range(rounds):
                victim = cluster.nodes[(A, B, C)[round_number % 3]]
                time.sleep(1.0)
                victim.kill()
                time.sleep(0.5)
                victim.start(same_ports=True)
            time.sleep(1.0)
        finally:
            tally.stop.set()
            for worker in workers:
                worker.join(30)
        drain(cluster, tally)
        check(tally)


def test_kill_loop_loses_no_confirmed_message() -> None:
    _run_loop(rounds=3)


@pytest.mark.slow
def test_kill_loop_long() -> None:
    _run_loop(rounds=30)
