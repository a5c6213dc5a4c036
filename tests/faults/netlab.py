"""A bridge with one network namespace per node, whose links can be cut, slowed and made lossy.

Every name made here starts with `lv<pid>` (the harness's process id), so concurrent runs never
collide and a later run can tell the leftovers of a run that died (its pid is gone) and remove
them. Partitions and losses are iptables rules inside the nodes' namespaces, so they only touch
node-to-node packets: the root namespace, where the clients are, still reaches every node.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

# A private range for the bridges; each run takes a free /24 of it.
_RANGE = "10.213"
_LOCK_FILE = "/tmp/leveret-netlab.lock"
# The chain, in each node's namespace, that holds the current faults (flushed to heal).
FAULT_CHAIN = "LEVERET-FAULTS"
_STALE = re.compile(r"^lv(\d+)(?:n\d+|br|v\d+)$")
_RULE_TAG = "leveret-netlab"


class NetLabError(RuntimeError):
    """The host cannot provide what the lab needs (root, ip, iptables)."""


def missing_tools() -> list[str]:
    """What this host lacks to build a lab; empty when it can."""
    lacking = [tool for tool in ("ip", "iptables", "tc") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        lacking.append("root")
    return lacking


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)
    if check and done.returncode != 0:
        raise NetLabError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")
    return done


_lock_depth = 0


@contextlib.contextmanager
def host_lock() -> Iterator[None]:
    """One step for concurrent runs (pytest-xdist workers): building a lab, or sweeping.

    A sweep must never meet a lab half made by a run whose pid is gone, which is exactly what
    the sweep's own test makes. Reentrant within a process, since `build` sweeps first.
    """
    global _lock_depth
    with contextlib.ExitStack() as held:
        if not _lock_depth:
            fcntl.flock(held.enter_context(open(_LOCK_FILE, "a")), fcntl.LOCK_EX)
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netem_available() -> bool:
    """Whether the kernel has the netem qdisc (some VM kernels ship without it)."""
    probe = f"lv{os.getpid()}probe"[:15]
    run("ip", "link", "add", probe, "type", "dummy", check=False)
    try:
        return run("tc", "qdisc", "add", "dev", probe, "root", "netem", check=False).returncode == 0
    finally:
        run("ip", "link", "del", probe, check=False)


def sweep_stale() -> list[str]:
    """Remove what runs that died left behind (their pid no longer exists); what was removed."""
    with host_lock():
        return _sweep_stale()


def _sweep_stale() -> list[str]:
    removed: list[str] = []
    for line in run("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        match = _STALE.match(name)
        if match and not _alive(int(match.group(1))):
            # The nodes a dead run started in that namespace go with it.
            for pid in run("ip", "netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            run("ip", "netns", "del", name, check=False)
            removed.append(name)
    for line in run("ip", "-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        match = _STALE.match(name)
        if match and not _alive(int(match.group(1))):
            run("ip", "link", "del", name, check=False)
            removed.append(name)
    for tool in _iptables_tools():
        for rule in run(tool, "-S", "FORWARD", check=False).stdout.splitlines():
            tag = re.search(rf'{_RULE_TAG} lv(\d+)"?', rule)
            if tag and not _alive(int(tag.group(1))):
                run(tool, *shlex.split(rule.replace("-A FORWARD", "-D FORWARD", 1)), check=False)
                removed.append(f"{tool} {rule}")
    return removed


def _iptables_tools() -> list[str]:
    """The root namespace's iptables flavours: bridged packets pass the FORWARD chain of both
    when br_netfilter is loaded, and a Docker engine may set either's policy to DROP."""
    return [tool for tool in ("iptables", "iptables-legacy") if shutil.which(tool)]


@dataclass
class NetLab:
    """`size` namespaces on one bridge; the root namespace has the bridge's first address."""

    size: int
    prefix: str = field(default_factory=lambda: f"lv{os.getpid()}")
    subnet: str = ""
    netem: bool = False
    _undo: list[Callable[[], object]] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    @property
    def host_address(self) -> str:
        return f"{self.subnet}.1"

    def namespace(self, index: int) -> str:
        return f"{self.prefix}n{index}"

    def address(self, index: int) -> str:
        return f"{self.subnet}.{index + 2}"

    def exec_prefix(self, index: int) -> list[str]:
        """The command prefix that runs a program inside node `index`'s namespace."""
        return ["ip", "netns", "exec", self.namespace(index)]

    def in_node(self, index: int, *command: str, check: bool = True) -> None:
        run(*self.exec_prefix(index), *command, check=check)

    # -- building and tearing down ---------------------------------------------------------

    def build(self) -> NetLab:
        lacking = missing_tools()
        if lacking:
            raise NetLabError(f"network namespaces need {', '.join(lacking)}")
        with host_lock():
            sweep_stale()
            try:
                self.netem = _netem_available()
                self._make_bridge()
                for index in range(self.size):
                    self._make_node(index)
            except BaseException:
                self.teardown()
                raise
        return self

    def _make_bridge(self) -> None:
        # Under the host lock (see `build`), choosing a free /24 and taking it are one step.
        used = set(re.findall(rf"inet {_RANGE}\.(\d+)\.", run("ip", "-4", "addr").stdout))
        free = next((n for n in range(1, 255) if str(n) not in used), None)
        if free is None:
            raise NetLabError(f"no free /24 left in {_RANGE}.0.0/16")
        self.subnet = f"{_RANGE}.{free}"
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self._undo.append(lambda: run("ip", "link", "del", self.bridge, check=False))
        run("ip", "addr", "add", f"{self.host_address}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        tag = f"{_RULE_TAG} {self.prefix}"
        for tool in _iptables_tools():
            rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT"]
            comment = ["-m", "comment", "--comment", tag]
            if run(tool, "-I", *rule, *comment, check=False).returncode == 0:
                self._undo.append(functools.partial(run, tool, "-D", *rule, *comment, check=False))

    def _make_node(self, index: int) -> None:
        namespace, outside, inside = (
            self.namespace(index),
            f"{self.prefix}v{index}",
            f"{self.prefix}p{index}",
        )
        run("ip", "netns", "add", namespace)
        self._undo.append(lambda: run("ip", "netns", "del", namespace, check=False))
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        self._undo.append(lambda: run("ip", "link", "del", outside, check=False))
        run("ip", "link", "set", inside, "netns", namespace)
        self.in_node(index, "ip", "link", "set", inside, "name", "eth0")
        self.in_node(index, "ip", "addr", "add", f"{self.address(index)}/24", "dev", "eth0")
        self.in_node(index, "ip", "link", "set", "eth0", "up")
        self.in_node(index, "ip", "link", "set", "lo", "up")
        run("ip", "link", "set", outside, "master", self.bridge)
        run("ip", "link", "set", outside, "up")
        self.in_node(index, "iptables", "-N", FAULT_CHAIN)
        for hook in ("INPUT", "OUTPUT"):
            self.in_node(index, "iptables", "-I", hook, "-j", FAULT_CHAIN)

    def teardown(self) -> None:
        """Undo everything, newest first; each step is attempted whatever happened before."""
        while self._undo:
            self._undo.pop()()

    def leftovers(self) -> list[str]:
        """Anything of this lab still on the host (empty after `teardown`)."""
        found = [
            line.split()[0]
            for line in run("ip", "netns", "list", check=False).stdout.splitlines()
            if line.startswith(self.prefix)
        ]
        links = run("ip", "-o", "link", "show", check=False).stdout
        found += re.findall(rf"\d+: ({self.prefix}\w+)", links)
        for tool in _iptables_tools():
            rules = run(tool, "-S", "FORWARD", check=False).stdout
            found += [rule for rule in rules.splitlines() if f"{_RULE_TAG} {self.prefix}" in rule]
        return found

    # -- faults --------------------------------------------------------------------------------

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        """Drop every packet between nodes that share no group (a node may be in several)."""
        sets = [set(group) for group in groups]
        for a in range(self.size):
            for b in range(a + 1, self.size):
                if not any(a in group and b in group for group in sets):
                    self.cut(a, b)

    def cut(self, a: int, b: int) -> None:
        for here, there in ((a, b), (b, a)):
            peer = self.address(there)
            self.in_node(here, "iptables", "-A", FAULT_CHAIN, "-s", peer, "-j", "DROP")
            self.in_node(here, "iptables", "-A", FAULT_CHAIN, "-d", peer, "-j", "DROP")

    def lossy(self, probability: float) -> None:
        """Each node drops that share of the packets it sends to the other nodes."""
        for here in range(self.size):
            for there in range(self.size):
                if here != there:
                    self.in_node(
                        here,
                        *("iptables", "-A", FAULT_CHAIN, "-d", self.address(there)),
                        *("-m", "statistic", "--mode", "random"),
                        *("--probability", f"{probability:.3f}", "-j", "DROP"),
                    )

    def slow(self, delay_ms: int, rate_kbit: int) -> None:
        """Slow every node-to-node link: netem's delay where the kernel has it, and always a
        narrow htb class (queueing delay and a throughput cap) for packets to the other nodes."""
        for here in range(self.size):
            tc = ("tc", "qdisc", "add", "dev", "eth0")
            self.in_node(here, *tc, "root", "handle", "1:", "htb", "default", "10")
            for classid, rate in (("1:10", "10gbit"), ("1:20", f"{rate_kbit}kbit")):
                self.in_node(
                    here, "tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", classid,
                    "htb", "rate", rate,
                )  # fmt: skip
            if self.netem:
                self.in_node(here, *tc, "parent", "1:20", "netem", "delay", f"{delay_ms}ms")
            for there in range(self.size):
                if there != here:
                    self.in_node(
                        here, "tc", "filter", "add", "dev", "eth0", "parent", "1:", "protocol",
                        "ip", "prio", "1", "u32", "match", "ip", "dst",
                        f"{self.address(there)}/32", "flowid", "1:20",
                    )  # fmt: skip

    def heal(self) -> None:
        """Every link whole again."""
        for index in range(self.size):
            self.in_node(index, "iptables", "-F", FAULT_CHAIN)
            self.in_node(index, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)

    def reaches(self, here: int, there: int) -> bool:
        """Whether node `here` gets an answer from `there` (one ping, 1 s)."""
        done = run(
            *self.exec_prefix(here), "ping", "-c", "1", "-W", "1", self.address(there), check=False
        )
        return done.returncode == 0
