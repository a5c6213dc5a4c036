"""Retention: whole segments go once a stream is beyond max-length-bytes or older than max-age
(arguments or policies); offsets are never reused, and a consumer asking for an offset that is
gone starts at the first one kept."""

from __future__ import annotations

import json
import time
import urllib.request
from base64 import b64encode
from collections.abc import Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.streams.support import declare_stream, publish, read
from tests.support.node import InProcessNode

# Records of 100-byte bodies take about 170 bytes: a few per 1000-byte segment.
SEGMENT = 1000


@pytest.fixture
def ch(node: InProcessNode) -> Iterator[BlockingChannel]:
    with pika.BlockingConnection(pika.URLParameters(node.url)) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        yield channel


def _count(ch: BlockingChannel, name: str) -> int:
    return int(ch.queue_declare(name, passive=True).method.message_count)


def _check_kept(ch: BlockingChannel, name: str, published: int) -> int:
    """The stream keeps a contiguous tail ending at the last offset; returns its first offset."""
    kept = _count(ch, name)
    first = published - kept
    got = read(ch, name, "first", count=kept, prefetch=1000)
    assert [offset for offset, _ in got] == list(range(first, published))
    # An offset that is gone starts the consumer at the first one kept.
    assert read(ch, name, 0, count=1)[0][0] == first
    return first


def test_max_length_bytes_drops_the_oldest_segments(ch: BlockingChannel) -> None:
    declare_stream(ch, "by-bytes", max_length_bytes=3000, stream_max_segment_size_bytes=SEGMENT)
    publish(ch, "by-bytes", [b"x" * 100 for _ in range(100)])
    kept = _count(ch, "by-bytes")
    assert 0 < kept < 40, kept  # 3000 bytes and the segment being written hold about 24
    first = _check_kept(ch, "by-bytes", 100)
    assert first > 0
    publish(ch, "by-bytes", [b"after"])
    assert read(ch, "by-bytes", "last", count=1) == [(100, b"after")]


def test_max_age_drops_segments_older_than_it(ch: BlockingChannel) -> None:
    declare_stream(ch, "by-age", max_age="2s", stream_max_segment_size_bytes=SEGMENT)
    publish(ch, "by-age", [b"x" * 100 for _ in range(30)])
    assert _count(ch, "by-age") == 30
    deadline = time.monotonic() + 10
    while _count(ch, "by-age") == 30 and time.monotonic() < deadline:
        time.sleep(0.2)
    kept = _count(ch, "by-age")
    assert 0 < kept < 10, kept  # only the segment being written stays
    assert _check_kept(ch, "by-age", 30) > 0


def test_a_policy_limits_a_stream_and_wins_over_its_argument(
    node: InProcessNode, ch: BlockingChannel
) -> None:
    declare_stream(
        ch, "by-policy", max_length_bytes=10_000_000, stream_max_segment_size_bytes=SEGMENT
    )
    publish(ch, "by-policy", [b"x" * 100 for _ in range(60)])
    assert _count(ch, "by-policy") == 60
    port = node.node.ports["mgmt"]
    body = {"pattern": "^by-policy$", "definition": {"max-length-bytes": 2000}}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/policies/%2F/cap",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"content-type": "application/json"},
    )
    request.add_header("Authorization", "Basic " + b64encode(b"guest:guest").decode())
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status in (201, 204)
    deadline = time.monotonic() + 10
    while _count(ch, "by-policy") == 60 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert 0 < _count(ch, "by-policy") < 30
    _check_kept(ch, "by-policy", 60)


def test_invalid_max_age_policy_is_refused(node: InProcessNode) -> None:
    port = node.node.ports["mgmt"]
    body = {"pattern": ".*", "definition": {"max-age": "10x"}}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/policies/%2F/bad-age",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"content-type": "application/json"},
    )
    request.add_header("Authorization", "Basic " + b64encode(b"guest:guest").decode())
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 400
    assert "is not a valid max age" in json.loads(refused.value.read())["reason"]
