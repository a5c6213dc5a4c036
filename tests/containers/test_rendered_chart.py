"""The rendered Helm chart runs: three pods form one cluster whatever order they start in, a
rolling restart under confirmed publishing loses nothing and refuses metadata writes for no
longer than an election, and a killed pod rejoins with its data."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest

from tests.containers.pods import (
    PERSISTENT,
    QUEUE,
    Load,
    StatefulSetOnDocker,
    docker,
    start_seed_last,
    wait_ready,
)
from tests.deploy.chart import render, required_module
from tests.support.node import wait_for


@pytest.fixture(scope="module")
def pods(leveret_image: str) -> Iterator[StatefulSetOnDocker]:
    helm = required_module("helm_python")
    repository, tag = leveret_image.split(":")
    manifests = render(helm, {"image": {"repository": repository, "tag": tag}})
    statefulset = StatefulSetOnDocker(manifests, leveret_image)
    try:
        yield statefulset
    except BaseException:
        print(statefulset.logs())
        raise
    finally:
        statefulset.cleanup()


def test_pods_form_one_cluster_survive_a_rolling_restart_and_rejoin(
    pods: StatefulSetOnDocker,
) -> None:
    env = pods.env(pods.pods[0])
    user, password = env["LEVERET_DEFAULT_USER"], env["LEVERET_DEFAULT_PASS"]
    formed_in = start_seed_last(pods)
    names = sorted(f"leveret@{pod.fqdn}" for pod in pods.pods)
    for pod in pods.pods:
        assert sorted(pods.status(pod)["running_nodes"]) == names
    print(f"3 pods ready in {formed_in:.1f} s")

    home = pods.pods[1]
    with pika.BlockingConnection(pika.URLParameters(home.url(user, password))) as conn:
        conn.channel().queue_declare(QUEUE, durable=True)

    load = Load(pods, user, password)
    workers = [
        threading.Thread(target=load.publish, daemon=True),
        threading.Thread(target=load.write_metadata, daemon=True),
    ]
    for worker in workers:
        worker.start()
    try:
        wait_for(lambda: len(load.confirmed) > 100, 30, 0.1)
        # A rolling update: the highest ordinal first, each pod drained, stopped, started
        # again and ready before the next.
        for pod in reversed(pods.pods):
            said = pods.pre_stop_and_stop(pod)
            assert "Closed" in said
            assert pods.exit_code(pod) == 0  # SIGTERM after the drain: a clean stop
            pods.start(pod)
            wait_ready(pods, pod)
            floor = len(load.confirmed)
            wait_for(lambda floor=floor: len(load.confirmed) > floor + 50, 30, 0.1)
    finally:
        load.stop.set()
        for worker in workers:
            worker.join(30)
    gap = load.longest_write_gap()
    print(f"{len(load.confirmed)} confirmed; longest metadata write gap {gap:.2f} s")
    assert gap < 10  # about one election (1-2 s) plus a client's reconnect, never minutes

    # Nothing confirmed was lost: every confirmed number is in the queue.
    with pika.BlockingConnection(pika.URLParameters(pods.pods[0].url(user, password))) as conn:
        channel = conn.channel()
        found: set[int] = set()
        for _, _, body in channel.consume(QUEUE, auto_ack=True, inactivity_timeout=3):
            if body is None:
                break
            found.add(int(body))
    assert set(load.confirmed) <= found

    # A pod killed outright comes back with its data and rejoins.
    with pika.BlockingConnection(pika.URLParameters(home.url(user, password))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("", QUEUE, b"before the kill", PERSISTENT)

    docker("kill", home.container)
    pods.start(home)
    wait_ready(pods, home)
    assert sorted(pods.status(pods.pods[0])["running_nodes"]) == names
    with pika.BlockingConnection(pika.URLParameters(pods.pods[2].url(user, password))) as conn:
        _, _, body = conn.channel().basic_get(QUEUE, auto_ack=True)
    assert body == b"before the kill"
