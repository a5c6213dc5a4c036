"""The lab's partitions are real and leave the clients' paths alone; nothing outlives it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.faults.conftest import require_namespaces
from tests.faults.netlab import NetLab, host_lock, run, sweep_stale

_PROBE = (
    "import socket, sys\n"
    "s = socket.socket(); s.settimeout(1.0)\n"
    "print(s.connect_ex((sys.argv[1], 9)))\n"
)
_REFUSED, _TIMED_OUT = 111, 11


def _connect_result(lab: NetLab, source: int | None, target: int) -> int:
    """errno of a TCP connect to a closed port: refused when packets pass, timed out when not."""
    prefix = [] if source is None else lab.exec_prefix(source)
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _PROBE, lab.address(target)],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    return int(done.stdout)


def test_a_partition_drops_node_to_node_packets_only(lab: NetLab) -> None:
    lab.partition([[0], [1, 2]])
    assert _connect_result(lab, 0, 1) == _TIMED_OUT
    assert _connect_result(lab, 2, 0) == _TIMED_OUT
    assert _connect_result(lab, 1, 2) == _REFUSED
    for node in range(3):
        assert _connect_result(lab, None, node) == _REFUSED  # the clients' side
    lab.heal()
    assert _connect_result(lab, 0, 1) == _REFUSED


def test_a_bridge_node_reaches_both_halves(lab: NetLab) -> None:
    lab.partition([[0, 1], [1, 2]])
    assert _connect_result(lab, 1, 0) == _REFUSED
    assert _connect_result(lab, 1, 2) == _REFUSED
    assert _connect_result(lab, 0, 2) == _TIMED_OUT


def test_slow_and_lossy_links_install_and_heal(lab: NetLab) -> None:
    lab.slow(50, 256)
    lab.lossy(0.2)
    rules = run(*lab.exec_prefix(0), "iptables", "-S", "LEVERET-FAULTS").stdout
    assert "statistic" in rules
    assert "htb" in run(*lab.exec_prefix(0), "tc", "qdisc", "show", "dev", "eth0").stdout
    lab.heal()
    assert "statistic" not in run(*lab.exec_prefix(0), "iptables", "-S", "LEVERET-FAULTS").stdout
    assert "htb" not in run(*lab.exec_prefix(0), "tc", "qdisc", "show", "dev", "eth0").stdout


def test_teardown_leaves_nothing_behind() -> None:
    require_namespaces()
    lab = NetLab(2).build()
    assert lab.leftovers()
    lab.teardown()
    assert lab.leftovers() == []


def test_leftovers_of_a_run_that_died_are_swept() -> None:
    require_namespaces()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = NetLab(1, prefix=f"lv{gone.pid}")
    # Held throughout, so that no other worker's lab build sweeps this lab first.
    with host_lock():
        dead.build()  # as if that process had made it, then died without tearing it down
        try:
            assert dead.leftovers()
            swept = sweep_stale()
            assert dead.namespace(0) in swept
            assert dead.leftovers() == []
        finally:
            dead.teardown()


def test_a_sweep_waits_for_a_lab_being_built_elsewhere() -> None:
    # pytest-xdist workers build labs at once; a sweep from one must not land mid-build in another.
    require_namespaces()
    sweep = [sys.executable, "-c", "from tests.faults.netlab import sweep_stale; sweep_stale()"]
    with host_lock():
        sweeper = subprocess.Popen(sweep)
        with pytest.raises(subprocess.TimeoutExpired):
            sweeper.wait(timeout=2)
    assert sweeper.wait(timeout=30) == 0
