"""Federated queues under faults: no demand, resource alarms, bad credentials, removed upstreams,
and a downstream node SIGKILLed while messages move (on-confirm loses nothing)."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.federation.test_queue_federation import http, links, publish, ready_count
from tests.support.node import NodeProcess, wait_for

SLOW = bool(os.environ.get("LEVERET_SLOW"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[NodeProcess]:
    node = NodeProcess(extra_args=["--node-name", "origin@localhost"]).start()
    try:
        yield node
    finally:
        node.cleanup()


@pytest.fixture
def downstream() -> Iterator[NodeProcess]:
    node = NodeProcess(extra_args=["--node-name", "site@localhost"]).start()
    try:
        yield node
    finally:
        node.cleanup()


def federate(downstream: NodeProcess, upstream: NodeProcess, queue: str, **keys: Any) -> None:
    """Federate `queue` on `downstream` from the same queue on `upstream`."""
    value = {"uri": upstream.url, "reconnect-delay": 1, **keys}
    path = f"/api/parameters/federation-upstream/%2F/{queue}-origin"
    assert http(downstream, "PUT", path, {"value": value})[0] in (201, 204)
    policy = {"pattern": f"^{queue}$", "definition": {"federation-upstream": f"{queue}-origin"}}
    assert http(downstream, "PUT", f"/api/policies/%2F/{queue}", policy)[0] in (201, 204)


def declare(node: NodeProcess, queue: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        conn.channel().queue_declare(queue, durable=True)


def link_of(node: NodeProcess, queue: str) -> dict[str, Any] | None:
    found = [link for link in links(node) if link["queue"] == queue]
    assert len(found) <= 1, found  # never two links for one queue and upstream
    return found[0] if found else None


def running(node: NodeProcess, queue: str) -> bool:
    link = link_of(node, queue)
    return link is not None and link["status"] == "running"


def stays(count: Any, expected: int, seconds: float) -> None:
    """`count()` equals `expected` at every look for `seconds` (nothing moved meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert count() == expected
        time.sleep(0.5)


def test_no_message_moves_in_10_seconds_without_downstream_demand(
    upstream: NodeProcess, downstream: NodeProcess
) -> None:
    queue = "idle"
    declare(upstream, queue)
    publish(upstream, queue, [f"u{number}".encode() for number in range(50)])
    federate(downstream, upstream, queue, **{"prefetch-count": 10})
    declare(downstream, queue)
    wait_for(lambda: running(downstream, queue), 15, 0.1)
    # Five seconds with no consumer downstream...
    stays(lambda: ready_count(upstream, queue), 50, 5)
    # ...then five with one whose prefetch is used up while a local message waits: a consumer
    # that cannot take more is no demand either.
    publish(downstream, queue, [b"local-1", b"local-2"])
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch_count=1)
        held: list[int] = []
        channel.basic_consume(
            queue, lambda ch, method, props, body: held.append(method.delivery_tag)
        )
        conn.process_data_events(time_limit=1)
        assert len(held) == 1
        stays(lambda: ready_count(upstream, queue), 50, 5)
        assert link_of(downstream, queue)["demand"] == "waiting"  # type: ignore[index]
        # Acknowledging makes room: the local message goes first, then upstream's move.
        taken = 0
        deadline = time.monotonic() + 30
        while taken < 52 and time.monotonic() < deadline:
            while held:
                channel.basic_ack(held.pop(0))
                taken += 1
            conn.process_data_events(time_limit=0.1)
        assert taken == 52
    assert ready_count(upstream, queue) == 0


def test_a_resource_alarm_holds_the_link_back(upstream: NodeProcess) -> None:
    queue = "alarmed"
    declare(upstream, queue)
    publish(upstream, queue, [f"a{number}".encode() for number in range(5)])
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "leveret.toml")
        with open(config, "w") as file:
            file.write('memory_high_watermark = "1MiB"\n')  # below any node's use: alarmed
        node = NodeProcess(extra_args=["--node-name", "full@localhost", "--config", config])
        node.start()
        try:
            wait_for(lambda: http(node, "GET", "/api/nodes")[1][0]["mem_alarm"] is True, 10, 0.1)
            federate(node, upstream, queue)
            declare(node, queue)
            with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
                channel = conn.channel()
                received: list[bytes] = []
                channel.basic_consume(
                    queue, lambda ch, method, props, body: received.append(body), auto_ack=True
                )
                wait_for(lambda: running(node, queue), 15, 0.1)
                # A consumer waits, but the node blocks publishers: the link does not pull.
                assert link_of(node, queue)["demand"] == "blocked"  # type: ignore[index]
                conn.process_data_events(time_limit=3)
                assert received == []
                assert ready_count(upstream, queue) == 5
        finally:
            node.cleanup()


def test_wrong_credentials_show_auth_failure_and_retry(
    upstream: NodeProcess, downstream: NodeProcess
) -> None:
    queue = "refused"
    uri = f"amqp://guest:wrong@127.0.0.1:{upstream.ports['amqp']}/%2F"
    http(downstream, "PUT", "/api/parameters/federation-upstream/%2F/bad", {"value": {"uri": uri}})
    policy = {"pattern": "^refused$", "definition": {"federation-upstream": "bad"}}
    http(downstream, "PUT", "/api/policies/%2F/refused", policy)
    declare(downstream, queue)
    wait_for(lambda: (link_of(downstream, queue) or {}).get("status") == "error", 15, 0.1)
    link = link_of(downstream, queue)
    assert link is not None and link["error"] == "auth_failure"
    assert "wrong" not in link["uri"] and "guest" not in link["uri"]
    # Corrected credentials: the link retries on its own and runs.
    fixed = {"value": {"uri": upstream.url, "reconnect-delay": 1}}
    http(downstream, "PUT", "/api/parameters/federation-upstream/%2F/bad", fixed)
    wait_for(lambda: running(downstream, queue), 20, 0.1)


def test_removing_the_upstream_stops_the_link_and_leaves_messages(
    upstream: NodeProcess, downstream: NodeProcess
) -> None:
    queue = "unplugged"
    declare(upstream, queue)
    federate(downstream, upstream, queue)
    declare(downstream, queue)
    wait_for(lambda: running(downstream, queue), 15, 0.1)
    path = f"/api/parameters/federation-upstream/%2F/{queue}-origin"
    assert http(downstream, "DELETE", path)[0] == 204
    wait_for(lambda: link_of(downstream, queue) is None, 10, 0.1)
    publish(upstream, queue, [b"stay-1", b"stay-2"])
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        channel = conn.channel()
        channel.basic_consume(queue, lambda *args: None)
        conn.process_data_events(time_limit=2)
    assert ready_count(upstream, queue) == 2
    assert ready_count(downstream, queue) == 0


# --- a downstream node killed while messages move -------------------------------------------


@dataclass
class Tally:
    published: int = 0
    # body -> for each delivery: whether it was marked (redelivered here, or upstream)
    deliveries: dict[str, list[bool]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> int:
        with self.lock:
            return len(self.deliveries)


def _drain(node: NodeProcess, queue: str) -> list[tuple[str, bool]]:
    """Every message ready in `queue`, taken with basic.get: (body, redelivered)."""
    taken: list[tuple[str, bool]] = []
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        while True:
            method, _, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append((body.decode(), method.redelivered))


def _consume_until_stopped(node: NodeProcess, queue: str, tally: Tally) -> None:
    """Consume through `node`, acknowledging each message, reconnecting while it restarts."""

    def take(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        hops = (properties.headers or {}).get("x-received-from") or [{}]
        marked = bool(method.redelivered or hops[0].get("redelivered"))
        with tally.lock:
            tally.deliveries.setdefault(body.decode(), []).append(marked)
        ch.basic_ack(method.delivery_tag)

    while not tally.stop.is_set():
        try:
            with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
                channel = conn.channel()
                channel.basic_qos(prefetch_count=20)
                channel.basic_consume(queue, take)
                while not tally.stop.is_set():
                    conn.process_data_events(time_limit=0.1)
        except (pika.exceptions.AMQPError, OSError, KeyError):
            time.sleep(0.2)


def test_kill_loop_on_confirm_loses_nothing(upstream: NodeProcess) -> None:
    queue = "moving"
    total, rounds = (20_000, 20) if SLOW else (3_000, 3)
    declare(upstream, queue)
    data = tempfile.TemporaryDirectory(prefix="leveret-fed-kill-")
    node = NodeProcess(
        data_dir=os.path.join(data.name, "data"), extra_args=["--node-name", "mover@localhost"]
    ).start()
    tally = Tally()
    try:
        federate(node, upstream, queue, **{"prefetch-count": 50, "ack-mode": "on-confirm"})
        declare(node, queue)
        wait_for(lambda: running(node, queue), 15, 0.1)
        # Everything is confirmed upstream before the kills start: what moves is what counts.
        publish(upstream, queue, [f"k{number}".encode() for number in range(total)])
        consumer = threading.Thread(
            target=_consume_until_stopped, args=(node, queue, tally), daemon=True
        )
        consumer.start()
        for round_number in range(1, rounds + 1):
            # Kills at fixed fractions of the way: the consumer may run past one during the
            # restart before it, and then the next kill comes at once.
            mark = total * round_number // (rounds + 1)
            wait_for(lambda mark=mark: tally.received() >= mark, 60)
            assert tally.received() < total  # the kill lands while messages still move
            node.kill()
            node.start()
            wait_for(lambda: running(node, queue), 20, 0.1)
        wait_for(lambda: tally.received() >= total, 120, 0.2)
        tally.stop.set()
        consumer.join(10)
    except BaseException:
        print(node.log_tail(80))
        raise
    finally:
        tally.stop.set()
        node.cleanup()
        data.cleanup()
    bodies = {f"k{number}" for number in range(total)}
    assert set(tally.deliveries) == bodies  # none lost, nothing unexpected
    unmarked_repeats = [
        body for body, marks in tally.deliveries.items() if len(marks) > 1 and not all(marks[1:])
    ]
    assert unmarked_repeats == []
    repeats = sum(len(marks) for marks in tally.deliveries.values()) - total
    print(f"moved {total} through {rounds} kills of the downstream node; {repeats} repeats")
    # What the link had taken in flight when its node stopped went back upstream: copies of
    # messages the consumer already has, each marked as delivered before.
    leftovers = _drain(upstream, queue)
    assert all(body in bodies and redelivered for body, redelivered in leftovers), leftovers


def test_a_stopped_link_acknowledges_what_it_held_back(
    upstream: NodeProcess, downstream: NodeProcess
) -> None:
    queue = "paced"
    declare(upstream, queue)
    publish(upstream, queue, [f"p{number}".encode() for number in range(300)])
    federate(downstream, upstream, queue, **{"prefetch-count": 100})
    declare(downstream, queue)
    wait_for(lambda: running(downstream, queue), 15, 0.1)
    with pika.BlockingConnection(pika.URLParameters(downstream.url)) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch_count=1)
        held: list[int] = []
        channel.basic_consume(
            queue, lambda ch, method, props, body: held.append(method.delivery_tag)
        )
        # A slow consumer: the link paces itself and holds acknowledgements back upstream.
        wait_for(
            lambda: conn.process_data_events(time_limit=0.1) or ready_count(downstream, queue) > 0,
            15,
        )
        path = f"/api/parameters/federation-upstream/%2F/{queue}-origin"
        assert http(downstream, "DELETE", path)[0] == 204
        wait_for(lambda: link_of(downstream, queue) is None, 10, 0.1)
    # Every message is in exactly one place: none came back upstream after it had moved.
    wait_for(lambda: ready_count(upstream, queue) + ready_count(downstream, queue) == 300, 10, 0.2)
