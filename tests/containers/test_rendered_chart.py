"""The rendered Helm chart runs: three pods form one cluster whatever order they start in, a
rolling restart under confirmed publishing loses nothing and refuses metadata writes for no
longer than an election, and a killed pod rejoins with its data."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pytest

from tests.containers.pods import Pod, StatefulSetOnDocker, docker
from tests.deploy.chart import render, required_module
from tests.support.node import wait_for

QUEUE = "orders"
PERSISTENT = pika.BasicProperties(delivery_mode=2)
# Errors that mean "this pod went away, or refused for now": move on to another pod.
_GONE = (pika.exceptions.AMQPError, ConnectionError, OSError)


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


def wait_ready(pods: StatefulSetOnDocker, pod: Pod, seconds: float = 90) -> None:
    """The startup probe until it passes, then the readiness probe, as the kubelet runs them."""
    wait_for(lambda: pod.probe(pods.probe_path("startupProbe")) == 200, seconds, 0.2)
    wait_for(lambda: pod.probe(pods.probe_path("readinessProbe")) == 200, seconds, 0.2)


@dataclass
class Load:
    """Confirmed publishes through whichever pod answers, and metadata writes beside them."""

    pods: StatefulSetOnDocker
    user: str
    password: str
    confirmed: list[int] = field(default_factory=list)
    write_times: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def _connect(self, start: int) -> tuple[pika.BlockingConnection, int]:
        pods = self.pods.pods
        for step in range(len(pods)):
            index = (start + step) % len(pods)
            try:
                url = pods[index].url(self.user, self.password)
                return pika.BlockingConnection(pika.URLParameters(url)), index
            except _GONE:
                continue
        raise ConnectionError("no pod answers")

    def publish(self) -> None:
        number, start = 0, 0
        while not self.stop.is_set():
            try:
                conn, start = self._connect(start)
                with conn:
                    channel = conn.channel()
                    channel.confirm_delivery()
                    while not self.stop.is_set():
                        try:
                            # Mandatory: a message for a queue whose home pod is down comes
                            # back (then is confirmed); only one that stayed counts.
                            channel.basic_publish(
                                "", QUEUE, str(number).encode(), PERSISTENT, mandatory=True
                            )
                            self.confirmed.append(number)
                        except pika.exceptions.UnroutableError:
                            pass
                        number += 1
                        time.sleep(0.002)
            except _GONE:
                start += 1
                time.sleep(0.1)

    def write_metadata(self) -> None:
        start = 1
        while not self.stop.is_set():
            try:
                conn, start = self._connect(start)
                with conn:
                    channel = conn.channel()
                    while not self.stop.is_set():
                        channel.queue_declare("metadata-probe", durable=True)
                        channel.queue_delete("metadata-probe")
                        self.write_times.append(time.monotonic())
                        time.sleep(0.05)
            except _GONE:
                start += 1
                time.sleep(0.05)

    def longest_write_gap(self) -> float:
        times = self.write_times
        return max((later - earlier for earlier, later in itertools.pairwise(times)), default=0.0)


def test_pods_form_one_cluster_survive_a_rolling_restart_and_rejoin(
    pods: StatefulSetOnDocker,
) -> None:
    env = pods.env(pods.pods[0])
    user, password = env["LEVERET_DEFAULT_USER"], env["LEVERET_DEFAULT_PASS"]
    for pod in pods.pods:
        pods.create(pod)
    # The pods that join start first; pod 0, which they all name as their seed, comes last.
    began = time.monotonic()
    for pod in reversed(pods.pods):
        pods.start(pod)
    for pod in pods.pods:
        wait_ready(pods, pod)
    formed_in = time.monotonic() - began
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
