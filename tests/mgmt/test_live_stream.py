"""`/api/live` against a real node: server-sent events with the JSON routes' figures, the
caller's access, and one shared sampling however many streams are open."""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import pika
import pytest

from leveret.testing.process import LeveretProcess


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


GUEST = basic("guest", "guest")


@pytest.fixture(scope="module")
def node() -> Iterator[LeveretProcess]:
    with LeveretProcess() as running:
        yield running


def api(node: LeveretProcess, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{node.management_url}/api/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={**GUEST, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = response.read()
        return json.loads(answer) if answer else None


class EventStream:
    """An open /api/live response, read one server-sent event at a time."""

    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.response = response

    def next(self) -> dict[str, Any]:
        lines: list[bytes] = []
        for _ in range(1000):  # an event is a few lines; bounded all the same
            line = self.response.readline()
            if not line:
                raise EOFError("the stream ended")
            if line == b"\n":
                break
            lines.append(line.rstrip(b"\n"))
        assert lines[0] == b"event: answer"
        assert lines[1].startswith(b"data: ")
        return json.loads(lines[1][len(b"data: ") :])


@contextmanager
def live(
    node: LeveretProcess, *paths: str, headers: dict[str, str] = GUEST
) -> Iterator[tuple[int, EventStream | bytes]]:
    address = urlsplit(node.management_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    query = "&".join(f"path={quote(p, safe='')}" for p in paths)
    connection.request("GET", f"/api/live?{query}", headers=headers)
    response = connection.getresponse()
    try:
        if response.status != 200:
            yield response.status, response.read()
        else:
            assert response.getheader("content-type", "").startswith("text/event-stream")
            yield 200, EventStream(response)
    finally:
        connection.close()


def live_stats(node: LeveretProcess) -> dict[str, int]:
    """The node's count of open streams, ticks, renders and readings of the queues' figures."""
    return dict(api(node, "GET", "live/stats"))


def test_events_carry_the_json_routes_figures(node: LeveretProcess) -> None:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as connection:
        channel = connection.channel()
        channel.queue_declare("live-figures")
        for _ in range(3):
            channel.basic_publish("", "live-figures", b"x")
        with live(node, "overview", "queues/%2F/live-figures") as (status, stream):
            assert status == 200 and isinstance(stream, EventStream)
            first = [stream.next(), stream.next()]
            assert [e["path"] for e in first] == ["overview", "queues/%2F/live-figures"]
            assert all(e["status"] == 200 for e in first)
            queue = first[1]["body"]
            assert (queue["name"], queue["messages_ready"]) == ("live-figures", 3)
            assert (
                queue["messages_ready"]
                == api(node, "GET", "queues/%2F/live-figures")["messages_ready"]
            )
            assert first[0]["body"]["queue_totals"] == api(node, "GET", "overview")["queue_totals"]
            # The next tick shows a change made meanwhile.
            channel.basic_publish("", "live-figures", b"x")
            deadline = time.monotonic() + 10
            ready = 3
            while ready != 4 and time.monotonic() < deadline:
                got = stream.next()
                if got["path"] == "queues/%2F/live-figures":
                    ready = got["body"]["messages_ready"]
            assert ready == 4
        channel.queue_delete("live-figures")


def test_a_stream_refuses_without_credentials_and_bad_paths(node: LeveretProcess) -> None:
    with live(node, "overview", headers={}) as (status, _body):
        assert status == 401
    with live(node, "overview", headers=basic("guest", "wrong")) as (status, _body):
        assert status == 401
    for unwatchable in ("definitions", "cluster/metadata", "live", "queues/%2F/q/get"):
        with live(node, unwatchable) as (status, _body):
            assert status == 400
    with live(node) as (status, _body):
        assert status == 400


def test_a_management_user_sees_only_its_vhosts(node: LeveretProcess) -> None:
    api(node, "PUT", "vhosts/live-team", {})
    api(node, "PUT", "users/live-member", {"password": "member", "tags": "management"})
    api(
        node,
        "PUT",
        "permissions/live-team/live-member",
        {"configure": ".*", "write": ".*", "read": ".*"},
    )
    api(node, "PUT", "queues/live-team/theirs", {"durable": False})
    api(node, "PUT", "queues/%2F/not-theirs", {"durable": False})
    member = basic("live-member", "member")
    try:
        with live(node, "queues", "queues/%2F/not-theirs", headers=member) as (status, stream):
            assert status == 200 and isinstance(stream, EventStream)
            listing, refused = stream.next(), stream.next()
            assert {q["name"] for q in listing["body"]} == {"theirs"}
            assert refused["status"] == 401
        # The streams' own figures are for monitors.
        stats = urllib.request.Request(f"{node.management_url}/api/live/stats", headers=member)
        with pytest.raises(urllib.error.HTTPError) as refusal:
            urllib.request.urlopen(stats, timeout=10)
        assert refusal.value.code == 401
    finally:
        api(node, "DELETE", "queues/%2F/not-theirs")
        api(node, "DELETE", "vhosts/live-team")
        api(node, "DELETE", "users/live-member")


def streams_become(node: LeveretProcess, count: int) -> None:
    """Wait for the node to count `count` open streams (a closed one is noticed within a tick)."""
    deadline = time.monotonic() + 10
    while live_stats(node)["streams"] != count and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_stats(node)["streams"] == count


def test_ten_streams_share_one_sampling(node: LeveretProcess) -> None:
    streams_become(node, 0)
    with ExitStack() as open_streams:
        streams = []
        for _ in range(10):
            status, stream = open_streams.enter_context(live(node, "overview"))
            assert status == 200 and isinstance(stream, EventStream)
            stream.next()  # its own first answer
            streams.append(stream)
        assert live_stats(node)["streams"] == 10
        before = live_stats(node)
        for _ in range(3):
            for stream in streams:
                assert stream.next()["status"] == 200
        after = live_stats(node)
    ticked, rendered, read = (
        after[name] - before[name] for name in ("ticks", "renders", "queue_readings")
    )
    assert ticked >= 3
    # One answer and one reading a tick for all ten streams, not ten (the statistics sampler
    # reads too, every 5 s).
    assert rendered == ticked
    assert read <= ticked + 1 + ticked // 5
    # Closed streams are forgotten and the sampling stops.
    streams_become(node, 0)
    stopped = live_stats(node)["ticks"]
    time.sleep(2.5)
    assert live_stats(node)["ticks"] == stopped
