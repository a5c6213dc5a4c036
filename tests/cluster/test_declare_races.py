"""Declares and deletes through one node race deletes of the queue through its home node.

A declare finds the queue, then asks its home node for the counts of declare-ok; a delete
decided in between leaves no queue there. RabbitMQ's channel loops between declare and stat in
that case; so does Leveret's: the declare is made again and creates the queue anew, and the
client never hears "no queue" in reply to a declare. A delete that finds the queue gone by the
time it asks the home node answers delete-ok, as for any missing queue.
"""

from __future__ import annotations

import threading
import time

import pika
from pika.exceptions import ChannelClosedByBroker

from tests.cluster.processes import queue_visible, running_cluster

QUEUE = "raced"
RACE_SECONDS = 8.0


def test_a_redeclare_racing_deletes_never_answers_no_queue() -> None:
    declares, deletes, refusals = _race("declare")
    assert declares > 100 and deletes > 100, (declares, deletes)
    assert refusals == [], refusals


def test_a_delete_racing_deletes_never_answers_no_queue() -> None:
    attempts, deletes, refusals = _race("delete")
    assert attempts > 100 and deletes > 100, (attempts, deletes)
    assert refusals == [], refusals


def _race(kind: str) -> tuple[int, int, list[str]]:
    """Redeclare (or delete) the queue through the second node for a while, as the first, its
    home, deletes and declares it over and over; what each side did, and the refusals."""
    with running_cluster(2) as cluster:
        home, other = (node.process for node in cluster.nodes)
        assert home is not None and other is not None
        stop = threading.Event()
        deletes = 0

        def delete_and_declare_through_home() -> None:
            nonlocal deletes
            with pika.BlockingConnection(pika.URLParameters(home.url)) as conn:
                channel = conn.channel()
                while not stop.is_set():
                    channel.queue_delete(QUEUE)
                    channel.queue_declare(QUEUE, durable=True)
                    deletes += 1

        with pika.BlockingConnection(pika.URLParameters(home.url)) as conn:
            conn.channel().queue_declare(QUEUE, durable=True)
        assert queue_visible(other.url, QUEUE)
        churn = threading.Thread(target=delete_and_declare_through_home, daemon=True)
        churn.start()
        refusals: list[str] = []
        attempts = 0
        deadline = time.monotonic() + RACE_SECONDS
        try:
            with pika.BlockingConnection(pika.URLParameters(other.url)) as conn:
                channel = conn.channel()
                while time.monotonic() < deadline:
                    try:
                        if kind == "declare":
                            channel.queue_declare(QUEUE, durable=True)
                        else:
                            channel.queue_delete(QUEUE)
                        attempts += 1
                    except ChannelClosedByBroker as error:
                        refusals.append(f"{error.reply_code} {error.reply_text}")
                        channel = conn.channel()
        finally:
            stop.set()
            churn.join(30)
        return attempts, deletes, refusals
