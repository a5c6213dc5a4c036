"""Limits set through one node of a 3-node cluster hold on another."""

from __future__ import annotations

import json

import pika
import pika.exceptions
import pytest

from tests.cluster.processes import queue_visible, running_cluster
from tests.support.node import wait_for


def _url(node: object) -> str:
    return f"amqp://guest:guest@127.0.0.1:{node.process.ports['amqp']}/"  # type: ignore[attr-defined]


def _refused(url: str) -> bool:
    try:
        pika.BlockingConnection(pika.URLParameters(url)).close()
    except pika.exceptions.ProbableAccessDeniedError as error:
        assert "connection limit (1) is reached" in str(error)
        return True
    return False


def test_limits_set_on_one_node_hold_on_another() -> None:
    with running_cluster(3) as cluster:
        first, third = cluster.nodes[0], cluster.nodes[2]
        result = first.ctl("set_vhost_limits", json.dumps({"max-connections": 1, "max-queues": 1}))
        assert result.code == 0, result.err
        listed = third.ctl("list_vhost_limits", "--formatter", "json")
        assert json.loads(listed.out) == [{"limits": '{"max-connections": 1, "max-queues": 1}'}]

        # Connections are counted across the cluster: one held through the first node fills the
        # vhost for the third once gossip has told it (within a few seconds).
        wait_for(lambda: _refused(_url(third)) is False, 10, 0.1)
        with pika.BlockingConnection(pika.URLParameters(_url(first))):
            wait_for(lambda: _refused(_url(third)), 15, 0.2)
        wait_for(lambda: not _refused(_url(third)), 15, 0.2)
        with pika.BlockingConnection(pika.URLParameters(_url(third))) as kept:
            assert _refused(_url(third))
            first.ctl("clear_vhost_limits")
            first.ctl("set_vhost_limits", json.dumps({"max-queues": 1}))
            wait_for(lambda: not _refused(_url(third)), 10, 0.1)
            # Queues are counted across the cluster: one declared through the first node fills
            # the vhost for the third.
            with pika.BlockingConnection(pika.URLParameters(_url(first))) as other:
                other.channel().queue_declare("cluster-limited", durable=True)
            wait_for(lambda: queue_visible(_url(third), "cluster-limited"), 10, 0.05)
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                kept.channel().queue_declare("cluster-second")
            assert refused.value.reply_code == 406
            assert refused.value.reply_text == (
                "PRECONDITION_FAILED - cannot declare queue 'cluster-second': queue limit in "
                "vhost '/' (1) is reached"
            )

        # A user limit set through the third node holds on the first. The first node counts
        # the third's channel just closed (kept's) until gossip tells it otherwise.
        assert third.ctl("set_user_limits", "guest", '{"max-channels": 1}').code == 0
        wait_for(lambda: "max-channels" in first.ctl("list_user_limits").out, 10, 0.1)
        wait_for(lambda: not _channel_refused(_url(first)), 15, 0.2)
        with pika.BlockingConnection(pika.URLParameters(_url(first))) as connection:
            connection.channel()
            with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
                connection.channel()
        assert closed.value.reply_code == 530

        # The user's channels on the third node count on the first as well. The third node
        # counts the first's channel just closed until gossip tells it otherwise.
        wait_for(lambda: not _channel_refused(_url(third)), 15, 0.2)
        with pika.BlockingConnection(pika.URLParameters(_url(third))) as holding:
            holding.channel()
            wait_for(lambda: _channel_refused(_url(first)), 15, 0.2)


def _channel_refused(url: str) -> bool:
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        try:
            connection.channel()
        except pika.exceptions.ConnectionClosedByBroker as closed:
            assert closed.reply_code == 530
            return True
    return False
