"""Leveret in containers: image size, time from `docker run` to accepting AMQP, time for the
Helm chart's three pods to form a cluster, and the longest metadata-write outage during a
rolling restart of them (the chart's StatefulSet run on Docker, as tests/containers does)."""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from bench.sections import write_section
from tests.containers.pods import Load, StatefulSetOnDocker, docker, start_seed_last, wait_ready
from tests.deploy.chart import render, required_module
from tests.support.docker_engine import DockerEngine
from tests.support.node import REPO

IMAGE = "leveret:bench"
_HANDSHAKE = b"AMQP\x00\x00\x09\x01"


def _accepts_amqp(port: int) -> bool:
    """Whether the node answers the protocol header with connection.start (a method frame)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(_HANDSHAKE)
            connection.settimeout(2)
            return connection.recv(1)[:1] == b"\x01"
    except OSError:
        return False


def seconds_to_amqp(image: str) -> float:
    began = time.monotonic()
    container = docker("run", "-d", "-p", "127.0.0.1::5672", image)
    try:
        port = int(docker("port", container, "5672/tcp").splitlines()[0].rsplit(":", 1)[1])
        while not _accepts_amqp(port):
            if time.monotonic() - began > 60:
                raise TimeoutError("the container did not accept AMQP within 60 s")
            time.sleep(0.01)
        return time.monotonic() - began
    finally:
        docker("rm", "-f", "-v", container)


def chart_figures(image: str) -> dict[str, Any]:
    repository, tag = image.split(":")
    manifests = render(
        required_module("helm_python"), {"image": {"repository": repository, "tag": tag}}
    )
    pods = StatefulSetOnDocker(manifests, image)
    try:
        formed = start_seed_last(pods)
        env = pods.env(pods.pods[0])
        load = Load(pods, env["LEVERET_DEFAULT_USER"], env["LEVERET_DEFAULT_PASS"])
        workers = [threading.Thread(target=load.write_metadata, daemon=True)]
        for worker in workers:
            worker.start()
        time.sleep(2)
        restart_began = time.monotonic()
        for pod in reversed(pods.pods):
            pods.pre_stop_and_stop(pod)
            pods.start(pod)
            wait_ready(pods, pod)
        restart = time.monotonic() - restart_began
        time.sleep(2)
        load.stop.set()
        for worker in workers:
            worker.join(30)
        return {"formed": formed, "restart": restart, "gap": load.longest_write_gap()}
    finally:
        pods.cleanup()


def report(size: int, starts: list[float], chart: dict[str, Any]) -> str:
    load = os.getloadavg()[0]
    return "\n".join(
        [
            "<!-- containers.py: start -->",
            "## Containers and the Helm chart on Docker (bench/containers.py)",
            "",
            "The image built by deploy/build-image.sh (deploy/Dockerfile on the Debian bookworm "
            "minbase image made with debootstrap, since no registry is reachable here; the default "
            "base for users is python:3.11-slim). Startup: `docker run` of a fresh container until "
            "the node answers the AMQP protocol header, median of "
            f"{len(starts)}. The chart's StatefulSet (3 pods, default values) is run as "
            "tests/containers runs it: pods started in reverse order; a rolling restart runs each "
            "pod's preStop drain, stops it, starts it and waits for readiness, highest ordinal "
            "first, while a client declares and deletes a durable queue every 50 ms through "
            "whichever pod answers.",
            "",
            "| figure | Leveret | goal |",
            "| --- | --: | --- |",
            f"| image size | {size / 1e6:.0f} MB | under 150 MB (slim base) |",
            f"| `docker run` to accepting AMQP | {statistics.median(starts):.2f} s "
            f"(min {min(starts):.2f}, max {max(starts):.2f}) | ≤ 2 s |",
            f"| 3 pods started to all ready (one cluster) | {chart['formed']:.1f} s | |",
            f"| rolling restart of 3 pods | {chart['restart']:.1f} s | |",
            f"| longest metadata-write outage during it | {chart['gap']:.2f} s | ≤ one election |",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
            f"Load average (1 min) as the runs began: {load:.2f}.",
            "<!-- containers.py: end -->",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="containers", description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="docker run timings to take")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args(argv)
    engine = DockerEngine().start()
    try:
        subprocess.run([str(REPO / "deploy" / "build-image.sh"), IMAGE, sys.executable], check=True)
        size = int(docker("image", "inspect", "--format", "{{.Size}}", IMAGE))
        starts = [seconds_to_amqp(IMAGE) for _ in range(args.starts)]
        section = report(size, starts, chart_figures(IMAGE))
    finally:
        engine.stop()
    print(section)
    if args.write:
        write_section("containers.py", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
