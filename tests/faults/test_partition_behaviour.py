"""What the clients of a node cut off from the majority see, and how the cluster heals."""

from __future__ import annotations

import time

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from tests.faults.netlab import NetLab
from tests.faults.nodes import LabCluster
from tests.support.node import wait_for

PERSISTENT = pika.BasicProperties(delivery_mode=2)
_LINK_DOWN_SECONDS = 30.0


def _connect(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _consume_refusal(url: str, queue: str) -> str | None:
    """The reply text of basic.consume on `queue` through `url`, or None if it was accepted."""
    with _connect(url) as connection:
        channel = connection.channel()
        try:
            channel.basic_consume(queue, lambda *_: None)
        except ChannelClosedByBroker as error:
            return f"{error.reply_code} {error.reply_text}"
        return None


def test_the_minority_serves_its_own_queues_refuses_changes_and_heals(
    lab: NetLab, lab_cluster: LabCluster
) -> None:
    n1, _n2, n3 = lab_cluster.nodes
    with _connect(n1.url) as connection:
        connection.channel().queue_declare("on-majority", durable=True)
    with _connect(n3.url) as connection:
        connection.channel().queue_declare("on-minority", durable=True)

    lab.partition([[0, 1], [2]])
    home_down = (
        f"404 NOT_FOUND - home node '{n1.name}' of durable queue 'on-majority' in vhost '/' is "
        "down or inaccessible"
    )
    wait_for(lambda: _consume_refusal(n3.url, "on-majority") == home_down, _LINK_DOWN_SECONDS, 0.5)

    with _connect(n3.url) as connection:
        channel = connection.channel()
        channel.confirm_delivery()
        # Its own queue: confirmed and delivered on this side.
        channel.basic_publish("", "on-minority", b"kept", PERSISTENT, mandatory=True)
        method, _properties, body = channel.basic_get("on-minority", auto_ack=True)
        assert method is not None and body == b"kept"
        # A queue across the cut: returned, not lost in silence.
        with pytest.raises(pika.exceptions.UnroutableError):
            channel.basic_publish("", "on-majority", b"returned", PERSISTENT, mandatory=True)
        # Passive declares answer from the node's last view (and its links).
        channel.queue_declare("on-minority", passive=True)
        with pytest.raises(ChannelClosedByBroker) as passive:
            channel.queue_declare("on-majority", passive=True)
        assert f"{passive.value.reply_code} {passive.value.reply_text}" == home_down

    started = time.monotonic()
    with _connect(n3.url) as connection, pytest.raises(ConnectionClosedByBroker) as refused:
        connection.channel().queue_declare("on-minority", durable=True)
    assert refused.value.reply_code == 541
    assert time.monotonic() - started >= 4.5  # it waited for a majority first

    # The majority goes on.
    with _connect(n1.url) as connection:
        connection.channel().queue_declare("made-meanwhile", durable=True)

    lab.heal()
    lab_cluster.wait_healthy(60)
    wait_for(lambda: _consume_refusal(n3.url, "on-majority") is None, _LINK_DOWN_SECONDS, 0.5)
    with _connect(n3.url) as connection:
        channel = connection.channel()
        channel.queue_declare("made-meanwhile", passive=True)
        channel.confirm_delivery()
        channel.basic_publish("", "on-majority", b"after", PERSISTENT, mandatory=True)
    with _connect(n1.url) as connection:
        method, _properties, body = connection.channel().basic_get("on-majority", auto_ack=True)
        assert method is not None and body == b"after"
