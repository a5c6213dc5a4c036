"""The data plane between real nodes: what a stranger sends to a node's data port is refused
without disturbing the node's links, and a link finds its home node again when that node comes
back."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from cluster.data_connection import DATA_PATH, MAX_FRAME_BYTES
from cluster.frames import FrameReader, frame_header
from cluster.secret import CallSigner
from proto import queues_pb2
from tests.cluster.processes import Cluster, ClusterNode, queue_visible, running_cluster
from tests.support.node import wait_for

A, B = 0, 1


@pytest.fixture(scope="module")
def two() -> Iterator[Cluster]:
    with running_cluster(2) as cluster:
        yield cluster


def url(node: ClusterNode) -> str:
    assert node.process is not None
    return node.process.url


def declare_on_a(cluster: Cluster, queue: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(url(cluster.nodes[A]))) as conn:
        channel = conn.channel()
        channel.queue_delete(queue)
        channel.queue_declare(queue, durable=True)
    wait_for(lambda: queue_visible(url(cluster.nodes[B]), queue), 10, 0.02)


def get_all(node: ClusterNode, queue: str) -> list[bytes]:
    bodies = []
    with pika.BlockingConnection(pika.URLParameters(url(node))) as conn:
        channel = conn.channel()
        while True:
            _, _, body = channel.basic_get(queue, auto_ack=True)
            if body is None:
                return bodies
            bodies.append(body)


class Stranger:
    """A plain socket to a node's data port, past its challenge."""

    def __init__(self, node: ClusterNode) -> None:
        assert node.process is not None
        self.sock = socket.create_connection(("127.0.0.1", node.process.ports["data"]), timeout=5)
        self._reader = FrameReader(
            4096, {2: queues_pb2.Challenge.FromString, 3: queues_pb2.Verdict.FromString}
        )
        self.nonce = self.next_frame().nonce

    def next_frame(self) -> Any:
        while (frame := self._reader.next_frame()) is None:
            data = self.sock.recv(4096)
            assert data, "the node closed the connection"
            self._reader.feed(data)
        return frame[1]

    def closed_by_node(self) -> bool:
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        self.sock.close()
        return True


def test_strangers_are_refused_and_the_links_carry_on(two: Cluster) -> None:
    declare_on_a(two, "plane-strangers")
    log_before = len(two.nodes[A].log())
    publisher = pika.BlockingConnection(pika.URLParameters(url(two.nodes[B])))
    channel = publisher.channel()
    channel.confirm_delivery()
    channel.basic_publish("", "plane-strangers", b"before")  # the link from B to A is up

    # A node of another cluster (another secret), answering the challenge properly.
    outsider = Stranger(two.nodes[A])
    values = dict(
        CallSigner(b"another cluster", "x@localhost", "").metadata(f"{DATA_PATH}/{outsider.nonce}")
    )
    hello = queues_pb2.Hello(
        node=values["x-leveret-node"],
        address=values["x-leveret-address"],
        auth=values["x-leveret-auth"],
    )
    outsider.sock.sendall(queues_pb2.ToHome(hello=hello).SerializeToString())
    assert "wrong cluster secret" in outsider.next_frame().refused
    assert outsider.closed_by_node()

    for garbage in (
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64),  # a TLS client hello
        frame_header(1, 16) + bytes(16),  # data without credentials
        frame_header(2, MAX_FRAME_BYTES),  # a length to make the node wait for (and keep) it all
        b"\x12" + b"\xff" * 32,  # a length that never ends
    ):
        stranger = Stranger(two.nodes[A])
        stranger.sock.sendall(garbage)
        assert stranger.closed_by_node()

    channel.basic_publish("", "plane-strangers", b"after")  # confirmed: the same link carries on
    publisher.close()
    assert get_all(two.nodes[A], "plane-strangers") == [b"before", b"after"]
    log = two.nodes[A].log()[log_before:]
    assert "refused a data connection" in log and "wrong cluster secret" in log
    assert "closing the data connection" in log


def test_a_link_reconnects_to_a_home_node_that_restarted(two: Cluster) -> None:
    declare_on_a(two, "plane-restart")
    persistent = pika.BasicProperties(delivery_mode=2)
    with pika.BlockingConnection(pika.URLParameters(url(two.nodes[B]))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("", "plane-restart", b"one", persistent)
    home = two.nodes[A]
    assert home.terminate() == 0
    home.start(same_ports=True)  # the same cluster port; the data port is any free one

    def published_through_b() -> bool:
        try:
            with pika.BlockingConnection(pika.URLParameters(url(two.nodes[B]))) as conn:
                channel = conn.channel()
                channel.confirm_delivery()
                channel.basic_publish("", "plane-restart", b"two", persistent)
                return True
        except (pika.exceptions.AMQPError, pika.exceptions.NackError):
            return False

    wait_for(published_through_b, 20, 0.2)
    assert get_all(two.nodes[B], "plane-restart") == [b"one", b"two"]


def test_a_home_node_that_restarted_serves_through_other_nodes_at_once(two: Cluster) -> None:
    queue = "plane-at-once"
    declare_on_a(two, queue)
    with pika.BlockingConnection(pika.URLParameters(url(two.nodes[B]))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("", queue, b"kept", pika.BasicProperties(delivery_mode=2))
    home = two.nodes[A]
    home.kill()
    with pika.BlockingConnection(pika.URLParameters(url(two.nodes[B]))) as conn:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            conn.channel().queue_declare(queue, passive=True)
        assert refused.value.reply_code == 404
    time.sleep(3)  # down long enough for B's attempts to reconnect to space out
    home.start(same_ports=True)

    # The first operations through B, as soon as A is back, reach A's queue: a publish is
    # not dropped as one to a node that is down would be.
    with pika.BlockingConnection(pika.URLParameters(url(two.nodes[B]))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("", queue, b"after", pika.BasicProperties(delivery_mode=2))
        channel.queue_bind(queue, "amq.direct", "at-once")
        assert channel.queue_declare(queue, passive=True).method.message_count == 2
        assert [channel.basic_get(queue, auto_ack=True)[2] for _ in range(2)] == [b"kept", b"after"]


class Peer(Stranger):
    """A plain socket to a node's data port that proves it is node `name` of the cluster and
    then speaks the data protocol as that node's link would."""

    def __init__(self, cluster: Cluster, home: ClusterNode, name: str) -> None:
        super().__init__(home)
        with open(cluster.secret_file, "rb") as file:
            secret = file.read().strip()
        values = dict(CallSigner(secret, name, "").metadata(f"{DATA_PATH}/{self.nonce}"))
        hello = queues_pb2.Hello(
            node=values["x-leveret-node"],
            address=values["x-leveret-address"],
            auth=values["x-leveret-auth"],
        )
        self.sock.sendall(queues_pb2.ToHome(hello=hello).SerializeToString())
        assert not self.next_frame().refused
        self._reader.expect(MAX_FRAME_BYTES, {1: queues_pb2.Down.FromString})

    def send(self, up: queues_pb2.Up) -> None:
        self.sock.sendall(queues_pb2.ToHome(up=[up]).SerializeToString())

    def downs_until_reply(self) -> list[Any]:
        """What the node sent back up to and with the next reply to a request."""
        downs = []
        for _ in range(10_000):  # heartbeats come once a second; a reply well before this many
            down = self.next_frame()
            downs.append(down)
            if down.replies:
                return downs
        raise AssertionError("no reply")


def publishes(queue: str, count: int) -> list[queues_pb2.Publish]:
    """`count` publishes to `queue`: the first names it, the rest go where the one before them
    went (the home node numbers them by their order on the link)."""
    header = b"\x00\x3c\x00\x00" + bytes(8) + b"\x00\x00"  # basic, no properties
    named = queues_pb2.Publish(vhost="/", queues=[queue], routing_key=queue, header=header)
    same = queues_pb2.Publish(routing_key=queue, header=header)
    return [named] + [same] * (count - 1)


def status(queue: str, request: int) -> queues_pb2.Up:
    ask = queues_pb2.Request(id=request, kind=queues_pb2.STATUS, vhost="/", queue=queue)
    return queues_pb2.Up(requests=[ask])


def test_the_home_node_confirms_what_is_waited_for_and_says_when_a_queue_congests(
    two: Cluster,
) -> None:
    queue = "plane-confirms"
    declare_on_a(two, queue)
    peer = Peer(two, two.nodes[A], two.nodes[B].name)

    # Publishes nobody waits for are not confirmed; the others are, in order.
    peer.send(queues_pb2.Up(publishes=publishes(queue, 3), unconfirmed=True))
    peer.send(status(queue, 1))
    downs = peer.downs_until_reply()
    assert [confirm for down in downs for confirm in down.confirms] == []
    assert downs[-1].replies[0].message_count == 3
    peer.send(queues_pb2.Up(publishes=publishes(queue, 1)))
    peer.send(status(queue, 2))
    confirms = [confirm for down in peer.downs_until_reply() for confirm in down.confirms]
    assert [(c.upto, c.congested) for c in confirms] == [(4, False)]

    # A consumer that takes one message and holds it: the queue's backlog grows past what the
    # home node lets its publishers run ahead of, and it says so, asked or not.
    with pika.BlockingConnection(pika.URLParameters(url(two.nodes[A]))) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch_count=1)
        held: list[int] = []
        channel.basic_consume(queue, lambda _c, method, _p, _b: held.append(method.delivery_tag))
        wait_for(lambda: conn.process_data_events(0.05) or held, 10, 0)
        peer.send(queues_pb2.Up(publishes=publishes(queue, 1500), unconfirmed=True))
        peer.send(status(queue, 3))
        confirms = [confirm for down in peer.downs_until_reply() for confirm in down.confirms]
        assert [(c.upto, c.congested) for c in confirms] == [(1504, True)]
        purge = queues_pb2.Request(id=4, kind=queues_pb2.PURGE, vhost="/", queue=queue)
        peer.send(queues_pb2.Up(requests=[purge]))
        peer.downs_until_reply()
        channel.basic_cancel(channel.consumer_tags[0])
        channel.basic_ack(held[0])  # the consumer caught up
        conn.process_data_events(0.1)
    # The next publish hears it, confirmed though unasked.
    peer.send(queues_pb2.Up(publishes=publishes(queue, 1), unconfirmed=True))
    peer.send(status(queue, 5))
    confirms = [confirm for down in peer.downs_until_reply() for confirm in down.confirms]
    assert [(c.upto, c.congested) for c in confirms] == [(1505, False)]
    peer.sock.close()


def test_a_consumers_window_leaves_the_home_node_in_pieces_in_order(two: Cluster) -> None:
    # Written as one batch, a whole prefetch window travels as one lump and the two nodes take
    # turns waiting for each other; in pieces (of at most half the window), the client's node
    # starts on the first at once.
    queue = "plane-pieces"
    declare_on_a(two, queue)
    peer = Peer(two, two.nodes[A], two.nodes[B].name)
    bodies = [b"m%d" % n for n in range(200)]
    publish_all = []
    for publish, body in zip(publishes(queue, len(bodies)), bodies, strict=True):
        publish_all.append(queues_pb2.Publish(body=body))
        publish_all[-1].MergeFrom(publish)
    peer.send(queues_pb2.Up(publishes=publish_all))
    peer.send(status(queue, 1))
    assert peer.downs_until_reply()[-1].replies[0].message_count == 200

    subscribe = queues_pb2.Subscribe(
        consumer=7, vhost="/", queue=queue, tag="pieces", prefetch=150, credit=1000
    )
    peer.send(queues_pb2.Up(subscribes=[subscribe]))
    pieces: list[list[Any]] = []
    subscribed_first = None
    while sum(len(piece) for piece in pieces) < 150:
        down = peer.next_frame()
        if down.subscribed and subscribed_first is None:
            subscribed_first = not pieces
        if down.deliveries:
            pieces.append(list(down.deliveries))
    assert subscribed_first, "basic.consume-ok must reach the client before its deliveries"
    assert len(pieces) >= 3 and max(len(piece) for piece in pieces) <= 150 // 2
    delivered = [delivery for piece in pieces for delivery in piece]
    assert [d.body for d in delivered] == bodies[:150]  # the prefetch holds: 150, not 200

    # Settled, they make room for the other 50, which come the same way.
    peer.send(queues_pb2.Up(settles=[queues_pb2.Settle(deliveries=[d.id for d in delivered])]))
    rest: list[Any] = []
    while len(rest) < 50:
        rest.extend(peer.next_frame().deliveries)
    assert [d.body for d in rest] == bodies[150:]
    peer.sock.close()
