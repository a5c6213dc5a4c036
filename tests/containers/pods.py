"""The chart's StatefulSet run as Kubernetes would run it, with Docker standing in for the
kubelet: one container per pod with exactly the rendered args, env, volumes and security
context, on a network where each answers to its pod DNS name; probes and preStop are executed
as the kubelet executes them.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pika
import pika.exceptions

from tests.deploy.chart import Manifest, the
from tests.support.node import wait_for
from tests.support.ports import restartable_ports

_VARIABLE = re.compile(r"\$\((\w+)\)")


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@dataclass
class Pod:
    """One pod of the StatefulSet: its container, once created, and its published ports."""

    name: str
    fqdn: str
    container: str = ""
    ports: dict[int, int] = field(default_factory=dict)  # container port -> host port

    def url(self, user: str, password: str) -> str:
        return f"amqp://{user}:{password}@127.0.0.1:{self.ports[5672]}/%2F"

    def probe(self, path: str) -> int:
        """An httpGet probe's status code (0: no answer)."""
        address = f"http://127.0.0.1:{self.ports[15672]}{path}"
        try:
            with urllib.request.urlopen(address, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0


class StatefulSetOnDocker:
    """Runs the rendered StatefulSet `release` (its Secret and ConfigMap alongside)."""

    def __init__(self, manifests: list[Manifest], image: str) -> None:
        self.statefulset = the(manifests, "StatefulSet")
        self.secret = {
            key: base64.b64decode(value).decode()
            for key, value in the(manifests, "Secret")["data"].items()
        }
        self.configmap = the(manifests, "ConfigMap")["data"]
        self.image = image
        spec = self.statefulset["spec"]
        self.pod_spec: Manifest = spec["template"]["spec"]
        [self.container_spec] = self.pod_spec["containers"]
        headless = spec["serviceName"]
        namespace = self.statefulset["metadata"]["namespace"]
        name = self.statefulset["metadata"]["name"]
        self.pods = [
            Pod(f"{name}-{ordinal}", f"{name}-{ordinal}.{headless}.{namespace}.svc.cluster.local")
            for ordinal in range(spec["replicas"])
        ]
        self.run_id = uuid.uuid4().hex[:8]
        self.network = f"leveret-pods-{self.run_id}"
        self._tmp = tempfile.TemporaryDirectory(prefix="leveret-pods-")
        docker("network", "create", self.network)

    # --- the pod as Kubernetes makes it -----------------------------------------------------

    def env(self, pod: Pod) -> dict[str, str]:
        """The container's environment: fieldRefs and secretKeyRefs resolved, and $(VAR)
        references to variables defined before expanded, as the kubelet does."""
        found: dict[str, str] = {}
        for item in self.container_spec["env"]:
            if "value" in item:
                value = _VARIABLE.sub(lambda m: found.get(m.group(1), m.group(0)), item["value"])
            else:
                source = item["valueFrom"]
                if "fieldRef" in source:
                    assert source["fieldRef"]["fieldPath"] == "metadata.name"
                    value = pod.name
                else:
                    value = self.secret[source["secretKeyRef"]["key"]]
            found[item["name"]] = value
        return found

    def _etc(self, pod: Pod) -> Path:
        """The projected /etc/leveret volume, owned as fsGroup would make it."""
        group = int(self.pod_spec["securityContext"]["fsGroup"])
        root = Path(self._tmp.name) / pod.name / "etc"
        [volume] = [v for v in self.pod_spec["volumes"] if v["name"] == "etc"]
        for source in volume["projected"]["sources"]:
            kind = "configMap" if "configMap" in source else "secret"
            for item in source[kind]["items"]:
                target = root / item["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                data = self.configmap if kind == "configMap" else self.secret
                target.write_text(data[item["key"]])
                os.chown(target, 0, group)
                target.chmod(item["mode"])
        for directory in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
            os.chown(directory, 0, group)
            directory.chmod(0o755)
        return root

    def create(self, pod: Pod) -> None:
        spec, security = self.container_spec, self.container_spec["securityContext"]
        pod_security = self.pod_spec["securityContext"]
        args = [
            "create",
            "--name",
            f"{pod.name}-{self.run_id}",
            "--hostname",
            pod.name,
            "--network",
            self.network,
            "--network-alias",
            pod.fqdn,
            "--user",
            f"{security.get('runAsUser', pod_security['runAsUser'])}:"
            f"{security.get('runAsGroup', pod_security.get('runAsGroup', 0))}",
            "--group-add",
            str(pod_security["fsGroup"]),
            "--security-opt",
            "no-new-privileges",
            "--stop-timeout",
            str(self.pod_spec["terminationGracePeriodSeconds"]),
        ]
        if security.get("readOnlyRootFilesystem"):
            args.append("--read-only")
        for capability in security.get("capabilities", {}).get("drop", []):
            args += ["--cap-drop", capability]
        for name, value in self.env(pod).items():
            args += ["--env", f"{name}={value}"]
        # Host ports chosen here (tests/containers/published.py says why), kept across restarts.
        container_ports = [port["containerPort"] for port in spec["ports"]]
        pod.ports = dict(zip(container_ports, restartable_ports(len(container_ports)), strict=True))
        for container_port, host_port in pod.ports.items():
            args += ["--publish", f"127.0.0.1:{host_port}:{container_port}"]
        for mount in spec["volumeMounts"]:
            path = mount["mountPath"]
            if mount["name"] == "data":  # the PVC: a volume that outlives the container
                args += ["--volume", f"data-{pod.name}-{self.run_id}:{path}"]
            elif mount["name"] == "etc":
                args += ["--volume", f"{self._etc(pod)}:{path}:ro"]
            else:  # emptyDir
                args += ["--tmpfs", f"{path}:uid={pod_security['runAsUser']}"]
        pod.container = docker(*args, self.image, *spec.get("args", []))

    def start(self, pod: Pod) -> None:
        docker("start", pod.container)

    def pre_stop_and_stop(self, pod: Pod) -> str:
        """What the kubelet does to stop a pod: the preStop command, then SIGTERM."""
        command = self.container_spec["lifecycle"]["preStop"]["exec"]["command"]
        out = docker("exec", pod.container, *command, timeout=300)
        docker("stop", pod.container, timeout=300)
        return out

    def exit_code(self, pod: Pod) -> int:
        return int(docker("inspect", "--format", "{{.State.ExitCode}}", pod.container))

    def probe_path(self, probe: str) -> str:
        path: str = self.container_spec[probe]["httpGet"]["path"]
        return path

    def logs(self) -> str:
        return "\n".join(
            f"===== {pod.name}\n" + docker("logs", "--tail", "60", pod.container, check=False)
            for pod in self.pods
            if pod.container
        )

    def cleanup(self) -> None:
        for pod in self.pods:
            if pod.container:
                docker("rm", "-f", "-v", pod.container, check=False)
            docker("volume", "rm", "-f", f"data-{pod.name}-{self.run_id}", check=False)
        docker("network", "rm", self.network, check=False)
        shutil.rmtree(self._tmp.name, ignore_errors=True)
        self._tmp.cleanup()

    def status(self, pod: Pod) -> dict[str, Any]:
        """cluster_status as an operator would run it in the pod (kubectl exec)."""
        out = docker(
            "exec", pod.container, "leveret", "ctl", "cluster_status", "--formatter", "json"
        )
        result: dict[str, Any] = json.loads(out)
        return result


QUEUE = "orders"
PERSISTENT = pika.BasicProperties(delivery_mode=2)
# Errors that mean "this pod went away, or refused for now": move on to another pod.
_GONE = (pika.exceptions.AMQPError, ConnectionError, OSError)


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


def start_seed_last(pods: StatefulSetOnDocker) -> float:
    """Create and start every pod, the joiners first and pod 0 (everyone's seed) last; the
    seconds until all are ready."""
    for pod in pods.pods:
        pods.create(pod)
    began = time.monotonic()
    for pod in reversed(pods.pods):
        pods.start(pod)
    for pod in pods.pods:
        wait_ready(pods, pod)
    return time.monotonic() - began
