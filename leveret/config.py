"""Node configuration: defaults as RabbitMQ's, then TOML, environment and flags, each checked."""

from __future__ import annotations

import os
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .store.disk_monitor import parse_disk_free_limit

ENV_PREFIX = "LEVERET_"
# RabbitMQ's largest max_message_size (512 MiB); its default is 128 MiB.
MAX_MESSAGE_SIZE_LIMIT = 512 * 1024 * 1024
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


def default_node_name() -> str:
    """`leveret@<short hostname>`, as RabbitMQ's `rabbit@<hostname>`: a name peers can reach."""
    return "leveret@" + (socket.gethostname().split(".")[0] or "localhost")


@dataclass(slots=True)
class Config:
    node_name: str = field(default_factory=default_node_name)
    data_dir: str = "./leveret-data"
    bind: str = "0.0.0.0"
    amqp_port: int = 5672
    mgmt_port: int = 15672
    cluster_port: int = 25672
    join: list[str] = field(default_factory=list)
    # The shared cluster secret; by default the user's (see cluster.secret) and optional TLS
    # between nodes (PEM files; with a CA both sides are checked).
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
    # RabbitMQ's vm_memory_high_watermark: a fraction of the machine's memory (0.4, its
    # default), or an absolute number of bytes ("2GB"). Above it publishers are blocked.
    memory_high_watermark: float | int = 0.4
    # Free disk space below which publishers are blocked (RabbitMQ's disk_free_limit).
    disk_free_limit: str = "50MB"
    log_level: str = "info"
    log_format: str = "text"
    log_file: str | None = None

    @classmethod
    def load(cls, path: str | None, overrides: dict[str, Any]) -> Config:
        """Defaults, then the TOML file, then LEVERET_* environment variables, then flags.

        Raises ConfigError, whose text is one line naming the key, the value and its source.
        """
        given: list[tuple[str, Any, str]] = []
        if path:
            for key, value in _read_toml(path).items():
                given.append((key.replace("-", "_"), value, f"file {path}"))
        for name in SETTINGS:
            env = os.environ.get(ENV_PREFIX + name.upper())
            if env is not None:
                given.append((name, env, f"environment variable {ENV_PREFIX}{name.upper()}"))
        for name, value in overrides.items():
            if value is not None:
                given.append((name, value, f"flag --{name.replace('_', '-')}"))
        values: dict[str, Any] = {}
        # Every value given is checked, also one a later source overrides: it is wrong all the same.
        for name, value, source in given:
            setting = SETTINGS.get(name)
            if setting is None:
                raise ConfigError(f"unknown configuration key {name!r} (from {source})")
            try:
                values[name] = setting.parse(value)
            except (ValueError, TypeError):
                raise ConfigError(
                    f"invalid {name} = {value!r} (from {source}): expected {setting.accepted}"
                ) from None
        return cls(**values)

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    def memory_limit(self, total_memory: int) -> int:
        """The memory alarm's threshold in bytes, on a machine with `total_memory` bytes."""
        watermark = self.memory_high_watermark
        if isinstance(watermark, float):
            return int(total_memory * watermark)
        return watermark


class ConfigError(Exception):
    """A configuration that cannot be used; the text is one line for the operator."""


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read the configuration file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"the configuration file {path} is not valid TOML: {error}") from None


# --- what each key accepts ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setting:
    """How one key is read from text or TOML, what it accepts, and what it means."""

    parse: Callable[[Any], Any]
    accepted: str
    help: str
    flag: bool = False  # also a `leveret server` flag
    default_text: str | None = None  # the default as help shows it, when it is not a value


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, str):
        return int(value.strip())
    if isinstance(value, int):
        return value
    raise ValueError(value)


def _in_range(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        number = _integer(value)
        if not low <= number <= high:
            raise ValueError(value)
        return number

    return parse


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(value)
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value.lower() not in choices:
            raise ValueError(value)
        return value.lower()

    return parse


def _size(value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(value)
    parse_disk_free_limit(value if isinstance(value, int) else str(value))
    return str(value)


def _watermark(value: Any) -> float | int:
    """A fraction of memory (0 to 1: "0.4", 0.4) or an absolute size ("2GB", 2000000000)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, float) or (isinstance(value, str) and "." in value):
        fraction = float(value)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(value)
        return fraction
    if isinstance(value, int) and value in (0, 1):
        return float(value)
    return parse_disk_free_limit(value if isinstance(value, int) else str(value))


def _seeds(value: Any) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(value)
    seeds = [item.strip() for item in items if isinstance(item, str) and item.strip()]
    for seed in seeds:
        host, _, port = seed.rpartition(":")
        if not host:
            raise ValueError(value)
        _in_range(1, 65535)(port)
    if len(seeds) != len(items) and not isinstance(value, str):
        raise ValueError(value)
    return seeds


_PORT = "an integer from 0 to 65535 (0 picks a free port)"
_SIZE = "a number of bytes, optionally with RabbitMQ's units (kB, MB, GB, KiB, MiB, GiB, ...)"
_PATH = "a file path"

SETTINGS: dict[str, Setting] = {
    "node_name": Setting(_text, "a name such as leveret@host", "the node's name", flag=True),
    "data_dir": Setting(_text, "a directory path", "where the node keeps its data", flag=True),
    "bind": Setting(_text, "an IP address", "the address listeners bind", flag=True),
    "amqp_port": Setting(_in_range(0, 65535), _PORT, "the AMQP listener's port", flag=True),
    "mgmt_port": Setting(
        _in_range(0, 65535), _PORT, "the management HTTP API's port (also /metrics)", flag=True
    ),
    "cluster_port": Setting(
        _in_range(0, 65535), _PORT, "node-to-node traffic: Raft, gossip, joining", flag=True
    ),
    "join": Setting(
        _seeds, "HOST:PORT items (comma-separated in the environment)", "a node to join"
    ),
    "cluster_secret_file": Setting(
        _text,
        _PATH,
        "the secret every member of a cluster shares",
        flag=True,
        default_text="DATA_DIR/.cluster_secret if present, else ~/.leveret/cluster_secret",
    ),
    "cluster_tls_cert": Setting(_text, _PATH, "PEM certificate for node-to-node TLS"),
    "cluster_tls_key": Setting(_text, _PATH, "PEM key for node-to-node TLS"),
    "cluster_tls_ca": Setting(_text, _PATH, "PEM CA that both sides of node-to-node TLS check"),
    "ports_file": Setting(
        _text, _PATH, "once connections are accepted, write the bound ports there as JSON", True
    ),
    "cluster_name": Setting(_text, "a name", "the cluster's name"),
    "default_user": Setting(_text, "a user name", "the user made on first start"),
    "default_pass": Setting(_text, "a password", "that user's password"),
    "default_vhost": Setting(_text, "a virtual host name", "the vhost made on first start"),
    "max_message_size": Setting(
        _in_range(1, MAX_MESSAGE_SIZE_LIMIT),
        f"an integer number of bytes from 1 to {MAX_MESSAGE_SIZE_LIMIT}",
        "the largest message body accepted",
    ),
    "memory_high_watermark": Setting(
        _watermark,
        "a fraction of memory from 0 to 1 (0.4) or a size (" + _SIZE + ")",
        "memory use above which publishers are blocked",
    ),
    "disk_free_limit": Setting(_size, _SIZE, "free disk space below which publishers are blocked"),
    "log_level": Setting(_one_of(LOG_LEVELS), " | ".join(LOG_LEVELS), "log verbosity", True),
    "log_format": Setting(
        _one_of(LOG_FORMATS), " | ".join(LOG_FORMATS), "plain text, or JSON lines", True
    ),
    "log_file": Setting(_text, _PATH, "write the log to this file instead of stderr", True),
}

assert set(SETTINGS) == {f.name for f in fields(Config)}, "every key has its setting"
