"""Cluster settings from the node's configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.settings import ClusterSettings, other_seeds
from leveret.config import Config


def test_settings_come_from_the_config_and_the_secret_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = Config(
        node_name="n1@example",
        data_dir=str(tmp_path),
        bind="0.0.0.0",
        cluster_port=0,
        join=["h:1", "h:2"],
        cluster_tls_cert="c.pem",
        cluster_tls_key="k.pem",
    )
    settings = ClusterSettings.from_config(config)
    user_secret = tmp_path / "home" / ".leveret" / "cluster_secret"
    assert settings.secret == user_secret.read_bytes().strip()
    assert settings.join == ("h:1", "h:2")
    assert settings.tls is not None and settings.tls.ca is None
    # Listening on every address, a node is reached at its name's host.
    assert settings.advertised(25672) == "example:25672"
    assert settings.raft_dir == tmp_path / "cluster" / "raft"


def test_a_specific_bind_address_is_the_advertised_one(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s")
    config = Config(
        data_dir=str(tmp_path), bind="::1", cluster_secret_file=str(secret), cluster_port=0
    )
    settings = ClusterSettings.from_config(config)
    assert settings.secret == b"s" and settings.tls is None
    assert settings.advertised(7) == "[::1]:7"


def test_a_seed_naming_the_node_itself_is_skipped() -> None:
    seeds = ["leveret-0.headless.ns.svc.cluster.local:25672", "other:25672"]
    # Pod 0 skips itself (whatever the case of the name or a trailing dot)...
    assert other_seeds(
        [seeds[0].upper(), seeds[1]], "leveret@leveret-0.headless.ns.svc.cluster.local.", 25672
    ) == ("other:25672",)
    # ...pod 1 keeps it, and a seed on another port of the same host is another node.
    assert other_seeds(seeds, "leveret@leveret-1.headless.ns.svc.cluster.local", 25672) == tuple(
        seeds
    )
    assert other_seeds(["[::1]:25673"], "n1@::1", 25672) == ("[::1]:25673",)
    assert other_seeds(["[::1]:25672"], "n1@::1", 25672) == ()
