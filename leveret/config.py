"""Node configuration: defaults as RabbitMQ's, overridden by a TOML file, environment and flags."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Config:
    node_name: str = "leveret@localhost"
    data_dir: str = "./leveret-data"
    bind: str = "0.0.0.0"
    amqp_port: int = 5672
    mgmt_port: int = 15672
    cluster_port: int = 25672
    join: list[str] = field(default_factory=list)
    # Cluster edit: the shared cluster secret (default DATA_DIR/.cluster_secret, made on first
    # start) and optional TLS between nodes (PEM files; with a CA both sides are checked).
    cluster_secret_file: str | None = None
    cluster_tls_cert: str | None = None
    cluster_tls_key: str | None = None
    cluster_tls_ca: str | None = None
    ports_file: str | None = None
    cluster_name: str = "leveret"
    default_user: str = "guest"
    default_pass: str = "guest"
    default_vhost: str = "/"
    max_message_size: int = 134217728
    # Memory alarm threshold in bytes of RSS; 0 disables it.
    memory_high_watermark: int = 0
    # Free disk space below which publishers are blocked (RabbitMQ's disk_free_limit).
    disk_free_limit: str = "50MB"
    log_level: str = "info"

    @classmethod
    def load(cls, path: str | None, overrides: dict[str, Any]) -> Config:
        """Defaults, then the TOML file, then LEVERET_* environment variables, then flags."""
        values: dict[str, Any] = {}
        if path:
            with open(path, "rb") as handle:
                values.update({key.replace("-", "_"): v for key, v in tomllib.load(handle).items()})
        names = {f.name: f for f in fields(cls)}
        for name, spec in names.items():
            env = os.environ.get("LEVERET_" + name.upper())
            if env is None:
                continue
            if name == "join":
                values[name] = [item for item in env.split(",") if item]
            elif spec.type in ("int", int):
                values[name] = int(env)
            else:
                values[name] = env
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"unknown configuration keys: {', '.join(sorted(unknown))}")
        return cls(**values)

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)
