"""A node answers from its own view of the definitions only once that view is current.

A node cut off from the majority (or just back from a pause or a restart) may not have applied
what the majority's clients were already told. Before answering a redeclare, a delete of a
queue it does not know, or a bind or unbind it would not change, it makes sure it has applied
everything committed: cut off, it refuses as it refuses changes (541), instead of answering from
a stale view. The fault harness's linearizability check found the stale answers.
"""

from __future__ import annotations

import pika
import pytest
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker

from tests.faults.netlab import NetLab
from tests.faults.nodes import LabCluster

ARGS = {"x-max-length": 10}


def _channel(url: str) -> pika.adapters.blocking_connection.BlockingChannel:
    return pika.BlockingConnection(pika.URLParameters(url)).channel()


def _refused_541(action: object) -> str:
    assert callable(action)
    with pytest.raises(ConnectionClosedByBroker) as refused:
        action()
    assert refused.value.reply_code == 541
    return str(refused.value.reply_text)


def test_a_cut_off_node_does_not_answer_from_a_stale_view(
    lab: NetLab, lab_cluster: LabCluster
) -> None:
    n1, _n2, n3 = lab_cluster.nodes
    majority = _channel(n1.url)
    majority.queue_declare("gone", durable=True, arguments=ARGS)
    majority.queue_bind("gone", "amq.direct", "gone")
    lab.partition([[0, 1], [2]])
    majority.queue_delete("gone")
    majority.queue_declare("made", durable=True, arguments=ARGS)

    # n3 still has "gone" and not "made": each answer it would give from that view is stale.
    assert _refused_541(
        lambda: _channel(n3.url).queue_declare("gone", durable=True, arguments=ARGS)
    ) == (
        f"INTERNAL_ERROR - Could not declare queue 'gone' in vhost '/' on node '{n3.name}' "
        "because the metadata store operation timed out"
    )
    assert _refused_541(lambda: _channel(n3.url).queue_delete("made")) == (
        "INTERNAL_ERROR - The operation to delete the queue from the metadata store timed out"
    )
    assert _refused_541(lambda: _channel(n3.url).queue_bind("made", "amq.direct", "made")) == (
        "INTERNAL_ERROR - Could not add binding due to timeout"
    )

    lab.heal()
    lab_cluster.wait_healthy(60)
    healed = _channel(n3.url)
    healed.queue_declare("made", durable=True, arguments=ARGS)  # exists: answered from n3's view
    with pytest.raises(ChannelClosedByBroker) as missing:
        healed.queue_declare("gone", passive=True)
    assert missing.value.reply_code == 404


def test_answers_from_a_current_view_are_unchanged(lab_cluster: LabCluster) -> None:
    n1, n2, _n3 = lab_cluster.nodes
    _channel(n1.url).queue_declare("shared", durable=True, arguments=ARGS)
    follower = _channel(n2.url)
    # Redeclares, deletes of missing queues, binds that exist and unbinds of missing bindings
    # still answer ok through any node.
    follower.queue_declare("shared", durable=True, arguments=ARGS)
    follower.queue_bind("shared", "amq.direct", "k")
    follower.queue_bind("shared", "amq.direct", "k")
    follower.queue_unbind("shared", "amq.direct", "never-bound")
    follower.queue_delete("never-made")
    follower.exchange_declare("amq.direct", "direct", passive=False, durable=True)
    follower.exchange_delete("never-made")
    with pytest.raises(ChannelClosedByBroker) as conflict:
        follower.queue_declare("shared", durable=True, arguments={"x-max-length": 20})
    assert conflict.value.reply_code == 406
