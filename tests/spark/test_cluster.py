"""The Spark connector on a 3-node Leveret cluster: a stream reads a queue homed on one node
through another, which is SIGKILLed after the first micro-batch. The query fails naming the
lost connection; restarted from its checkpoint with the next node in `uri`, it gets every
message (the first batch's again, marked redelivered: it was never acknowledged)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

from tests.cluster.processes import Cluster, queue_visible, running_cluster
from tests.spark.conftest import declare, publish
from tests.support.node import wait_for

try:
    import pyspark  # noqa: F401 - the spark extra
except ImportError as missing:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"pyspark is not installed: {missing}", allow_module_level=True)

QUEUE = "spark.cluster"
MESSAGES = 300
STREAM_SECONDS = 90


def _url(cluster: Cluster, index: int) -> str:
    process = cluster.nodes[index].process
    assert process is not None
    return process.url


def _all_seen(bodies: list[bytes], seen: list[tuple[bytes, bool]]) -> bool:
    return set(bodies) <= {body for body, _ in seen}


def test_a_node_killed_under_the_source_loses_nothing(spark: Any) -> None:
    with running_cluster(3) as cluster:
        home, reader, other = (_url(cluster, index) for index in range(3))
        declare(home, QUEUE)
        wait_for(lambda: queue_visible(reader, QUEUE) and queue_visible(other, QUEUE), 30, 0.1)
        bodies = [b"c%d" % n for n in range(MESSAGES)]
        publish(other, QUEUE, bodies)
        seen: list[tuple[bytes, bool]] = []
        first_batch: list[bytes] = []

        def kill_after_first_batch(frame: Any, batch: int) -> None:
            rows = [(bytes(row.body), row.redelivered) for row in frame.collect()]
            seen.extend(rows)
            if not first_batch:
                first_batch.extend(body for body, _ in rows)
                cluster.nodes[1].kill()  # before Spark logs the batch, so before its ack

        def collect(frame: Any, batch: int) -> None:
            seen.extend((bytes(row.body), row.redelivered) for row in frame.collect())

        with tempfile.TemporaryDirectory() as checkpoint:
            for run, uri in ((kill_after_first_batch, reader), (collect, f"{reader},{other}")):
                query = (
                    spark.readStream.format("leveret")
                    .option("uri", uri)
                    .option("queue", QUEUE)
                    .option("maxMessages", "50")
                    .load()
                    .writeStream.foreachBatch(run)
                    .option("checkpointLocation", checkpoint)
                    .start()
                )
                try:
                    if run is kill_after_first_batch:
                        with pytest.raises(Exception, match=f"for queue '{QUEUE}' ended"):
                            query.awaitTermination(STREAM_SECONDS)
                    else:
                        wait_for(lambda: _all_seen(bodies, seen), STREAM_SECONDS, 0.2)
                finally:
                    query.stop()
        assert first_batch and len(first_batch) <= 50
        assert {body for body, _ in seen} == set(bodies)
        again = [body for body, redelivered in seen if redelivered]
        assert set(first_batch) <= set(again)
        # A message seen twice is marked redelivered from its second delivery on.
        first_seen: set[bytes] = set()
        for body, redelivered in seen:
            assert redelivered or body not in first_seen, body
            first_seen.add(body)
