"""bench/cross_node.py compares each cluster scenario with a standalone node under its load."""

from __future__ import annotations

from bench.cross_node import THROUGHPUT, _mode, _modes


def test_each_scenario_has_a_standalone_mode_with_its_own_settings() -> None:
    modes = _modes()
    assert list(modes) == ["auto-ack", "confirms + acks", "confirms + acks, prefetch 1000"]
    for name, (settings, _, _) in THROUGHPUT.items():
        assert modes[_mode(name)] == settings, name
