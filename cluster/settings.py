"""The cluster layer's settings, taken from the node's configuration."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster.gossip import SwimConfig
from cluster.node_loop import LoopSettings
from cluster.raft import RaftConfig
from cluster.secret import load_or_create_secret
from cluster.transport import TlsFiles

_ANY_ADDRESS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class ClusterSettings:
    """Who this node is, where it listens, whom it joins, and the protocol timings."""

    node_name: str
    data_dir: Path
    bind: str
    port: int
    secret: bytes
    join: tuple[str, ...] = ()
    # The host other nodes reach this one at; None: `bind`, or the node name's host part.
    advertise_host: str | None = None
    tls: TlsFiles | None = None
    # The leader writes its log while its appends travel (one disk write off each change's
    # path), and an idle cluster goes quiet (see RaftConfig.quiesce).
    raft: RaftConfig = field(
        default_factory=lambda: RaftConfig(parallel_leader_persist=True, quiesce=True)
    )
    loop: LoopSettings = field(default_factory=LoopSettings)
    gossip: SwimConfig = field(default_factory=SwimConfig)
    # How long a metadata change may wait for a majority before failing with "no quorum".
    submit_timeout: float = 5.0

    @property
    def raft_dir(self) -> Path:
        return self.data_dir / "cluster" / "raft"

    def advertised(self, port: int) -> str:
        """The `host:port` peers use to reach this node, once it listens on `port`."""
        host = self.advertise_host
        if host is None:
            host = self.bind if self.bind not in _ANY_ADDRESS else self.node_name.partition("@")[2]
        host = host or "localhost"
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @classmethod
    def from_config(cls, config: Any) -> ClusterSettings:
        """Settings for a node with `config` (leveret.config.Config); reads or creates the
        secret."""
        data_dir = Path(config.data_dir)
        cert, key = (
            getattr(config, "cluster_tls_cert", None),
            getattr(config, "cluster_tls_key", None),
        )
        ca = getattr(config, "cluster_tls_ca", None)
        tls = TlsFiles(Path(cert), Path(key), Path(ca) if ca else None) if cert and key else None
        return cls(
            node_name=config.node_name,
            data_dir=data_dir,
            bind=config.bind,
            port=config.cluster_port,
            secret=load_or_create_secret(data_dir, getattr(config, "cluster_secret_file", None)),
            join=other_seeds(config.join or (), config.node_name, config.cluster_port),
            tls=tls,
        )


def other_seeds(seeds: Iterable[str], node_name: str, port: int) -> tuple[str, ...]:
    """`seeds` without those that name this node itself (its node name's host, its port).

    Every pod of a StatefulSet gets the same seed, the pod with ordinal 0: that pod skips it
    and starts the cluster (or restarts with its data), and the others join it."""
    own_host = node_name.partition("@")[2].lower().rstrip(".")
    kept = []
    for seed in seeds:
        host, _, seed_port = seed.rpartition(":")
        host = host.strip("[]").lower().rstrip(".")
        if host == own_host and seed_port == str(port):
            continue
        kept.append(seed)
    return tuple(kept)
