"""Node configuration: defaults as RabbitMQ's, then TOML, environment and flags, each checked."""

from __future__ import annotations

import ipaddress
import os
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .busy_poll import DEFAULT_WINDOW_MICROSECONDS
from .consumer_timeout import DEFAULT_CONSUMER_TIMEOUT_MS
from .placement import CONFIGURABLE_LOCATORS
from .store.disk_monitor import parse_disk_free_limit
from .tls import TLSConfigError, TLSSettings, parse_settings

ENV_PREFIX = "LEVERET_"
# RabbitMQ's largest max_message_size (512 MiB); its default is 128 MiB.
MAX_MESSAGE_SIZE_LIMIT = 512 * 1024 * 1024
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
# RabbitMQ's listeners.ssl.default: the AMQPS port when [ssl_options] is given without a port.
DEFAULT_AMQPS_PORT = 5671
CERT_LOGIN_FIELDS = ("distinguished_name", "common_name")
# Publishes a connection may leave unconfirmed before it is paused (see session.py).
DEFAULT_MAX_UNCONFIRMED = 10_000
# Admission of new connections (server/admission.py). Failures, not connection rates, mark an
# address: behind a Kubernetes Service or a NAT many clients share one, and reconnecting at
# once after a restart is no abuse. 100 failed connections a minute is far more than a few
# misconfigured clients retrying every few seconds; a marked address still gets 50 new
# connections a second, at under 2% of a core of handshake work. Ten seconds' worth may wait:
# longer, the handshake timeout would close them anyway.
DEFAULT_ADMISSION_FAILURES = 100
DEFAULT_ADMISSION_WINDOW = 60
DEFAULT_ADMISSION_RATE = 50
DEFAULT_ADMISSION_MAX_HELD = 500


def short_hostname() -> str:
    return socket.gethostname().split(".")[0] or "localhost"


def default_node_name() -> str:
    """`leveret@<short hostname>`, as RabbitMQ's `rabbit@<hostname>`: a name peers can reach."""
    return "leveret@" + short_hostname()


@dataclass(slots=True)
class Config:
    node_name: str = field(default_factory=default_node_name)
    data_dir: str = "./leveret-data"
    bind: str = "0.0.0.0"
    amqp_port: int = 5672
    # AMQP over TLS: off unless [ssl_options] is given (then 5671 unless set otherwise).
    amqps_port: int | None = None
    ssl_options: TLSSettings | None = None
    # Which part of a client certificate names the user who logs in with EXTERNAL.
    ssl_cert_login_from: str = "distinguished_name"
    mgmt_port: int = 15672
    cluster_port: int = 25672
    # Messages between nodes (the queue data plane); 0: any free port, which the other nodes
    # ask for on the cluster port.
    data_port: int = 0
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
    # Files holding the default user's name and password (mounted secrets); they win over the
    # plain keys, and are read once, at start.
    default_user_file: str | None = None
    default_pass_file: str | None = None
    default_vhost: str = "/"
    # Users who may log in only from the node's own host (RabbitMQ's loopback_users).
    loopback_users: list[str] = field(default_factory=lambda: ["guest"])
    max_message_size: int = 134217728
    # RabbitMQ's vm_memory_high_watermark: a fraction of the machine's memory (0.4, its
    # default), or an absolute number of bytes ("2GB"). Above it publishers are blocked.
    memory_high_watermark: float | int = 0.4
    # Free disk space below which publishers are blocked (RabbitMQ's disk_free_limit).
    disk_free_limit: str = "50MB"
    log_level: str = "info"
    queue_leader_locator: str = "client-local"
    log_format: str = "text"
    log_file: str | None = None
    # A definitions file (as exported) imported at every start, as RabbitMQ's load_definitions.
    load_definitions: str | None = None
    # Milliseconds a delivery may stay unacknowledged before its channel is closed (0: never).
    consumer_timeout: int = DEFAULT_CONSUMER_TIMEOUT_MS
    # Publishes a connection may have unconfirmed before it is read no further (0: no cap).
    max_unconfirmed_per_connection: int = DEFAULT_MAX_UNCONFIRMED
    # Microseconds the event loop keeps polling after the sockets brought something, before it
    # sleeps (busy_poll.py; Erlang's scheduler busy wait). 0: it sleeps at once.
    busy_poll_microseconds: int = DEFAULT_WINDOW_MICROSECONDS
    # Failed connections (an error the node closed them for, a handshake abandoned or timed
    # out) from one address within the window (seconds) that mark it (0: never); a marked
    # address's new connections are read at the rate a second, up to max_held wait, the rest
    # are reset.
    admission_failures: int = DEFAULT_ADMISSION_FAILURES
    admission_window: int = DEFAULT_ADMISSION_WINDOW
    admission_rate: int = DEFAULT_ADMISSION_RATE
    admission_max_held: int = DEFAULT_ADMISSION_MAX_HELD
    # HTTPS for the management API, and /metrics on ports of its own (RabbitMQ's
    # management.ssl.*, prometheus.tcp.port and prometheus.ssl.*).
    management_ssl: HttpsListener | None = None
    prometheus_tcp_port: int | None = None
    prometheus_ssl: HttpsListener | None = None
    # RabbitMQ's management.http.max_body_size, and the headers of every management answer
    # (management.headers.*, management.csp.policy, management.hsts.policy); "" sends none.
    management_http_max_body_size: int = 10_000_000
    management_headers_content_type_options: str = "nosniff"
    management_headers_frame_options: str = "DENY"
    management_headers_xss_protection: str = ""
    management_csp_policy: str = (
        "script-src 'self' 'unsafe-eval' 'unsafe-inline'; object-src 'self'; frame-ancestors 'none'"
    )
    management_hsts_policy: str = "max-age=31536000; includeSubDomains"

    @classmethod
    def load(cls, path: str | None, overrides: dict[str, Any]) -> Config:
        """Defaults, then the TOML file, then LEVERET_* environment variables, then flags.

        Raises ConfigError, whose text is one line naming the key, the value and its source.
        """
        given: list[tuple[str, Any, str]] = []
        if path:
            for key, value in _flatten(_read_toml(path)):
                given.append((key, value, f"file {path}"))
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
            except TLSConfigError as error:
                raise ConfigError(f"{error} (from {source})") from None
            except (ValueError, TypeError):
                shown = "(hidden)" if name in SECRET_KEYS else repr(value)
                raise ConfigError(
                    f"invalid {name} = {shown} (from {source}): expected {setting.accepted}"
                ) from None
        for key, target in (
            ("default_user_file", "default_user"),
            ("default_pass_file", "default_pass"),
        ):
            if values.get(key):
                values[target] = _read_secret_file(key, values[key])
        config = cls(**values)
        if config.amqps_port is not None and config.ssl_options is None:
            raise ConfigError(
                f"amqps_port = {config.amqps_port} needs an [ssl_options] table with the "
                "listener's certfile and keyfile"
            )
        return config

    @property
    def amqps_listener_port(self) -> int | None:
        """The AMQPS port to listen on, or None: as RabbitMQ's listeners.ssl, the listener
        exists when TLS is configured, on 5671 unless another port is given."""
        if self.ssl_options is None:
            return None
        return DEFAULT_AMQPS_PORT if self.amqps_port is None else self.amqps_port

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    def memory_limit(self, total_memory: int) -> int:
        """The memory alarm's threshold in bytes, on a machine with `total_memory` bytes: an
        absolute size above the machine's memory counts as all of it, as in RabbitMQ."""
        watermark = self.memory_high_watermark
        if isinstance(watermark, float):
            return int(total_memory * watermark)
        return min(watermark, total_memory)


class ConfigError(Exception):
    """A configuration that cannot be used; the text is one line for the operator."""


# Keys whose values are never shown, in errors or anywhere else.
SECRET_KEYS = frozenset({"default_pass"})


def _read_secret_file(key: str, path: str) -> str:
    """The secret a file holds, without its line end (as Kubernetes and Docker mount them)."""
    try:
        with open(path, encoding="utf-8") as handle:
            secret = handle.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise ConfigError(f"cannot read {key} {path}: {reason}") from None
    if not secret:
        raise ConfigError(f"{key} {path} is empty")
    return secret


@dataclass(frozen=True, slots=True)
class HttpsListener:
    """An HTTPS port and its TLS settings; `only`: the plain port then refuses credentials."""

    port: int
    tls: TLSSettings
    only: bool = False


def _flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """TOML tables as flat keys, as RabbitMQ's dotted ones: `[management.headers]
    frame_options` is `management_headers_frame_options`; a table that is a setting itself
    (`[management.ssl]`) stays whole."""
    found: list[tuple[str, Any]] = []
    for key, value in table.items():
        name = prefix + key.replace("-", "_")
        if isinstance(value, dict) and name not in SETTINGS:
            found.extend(_flatten(value, name + "_"))
        else:
            found.append((name, value))
    return found


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
    metavar: str | None = None  # the flag's argument in help; else the key's last word
    repeatable: bool = False  # the flag may be given several times, each adding an item


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


def _path(value: Any) -> str:
    # A NUL byte would only fail later, deep inside an open() call.
    if "\0" in _text(value):
        raise ValueError(value)
    return str(value)


def _node_name(value: Any) -> str:
    """`name@host`; a bare `name` gets this machine's short host name, as RabbitMQ's nodes do."""
    name, at, host = _text(value).strip().partition("@")
    if not name or (at and not host) or "@" in host or any(c.isspace() for c in name + host):
        raise ValueError(value)
    return f"{name}@{host or short_hostname()}"


def _address(value: Any) -> str:
    """An IP address, or a host name that resolves (to an address of this machine, one hopes:
    that is checked when the node listens)."""
    text = _text(value).strip()
    try:
        ipaddress.ip_address(text)
    except ValueError:
        try:
            socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise ValueError(value) from None
    return text


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
    """A fraction of memory (a plain number from 0 to 1: 0.4, "0.4", 1) or an absolute size
    (a number with a unit, "2GB", or a whole number of bytes above 1, 2000000000).

    A plain number reads the same from TOML and from text, so "1" in the environment is all of
    the memory as `1` in the file is, not one byte.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(value)
    try:
        number = float(value)
    except ValueError:
        return parse_disk_free_limit(str(value))  # a size with a unit
    if 0.0 <= number <= 1.0:
        return number
    if number.is_integer() and "." not in str(value):
        return int(number)
    raise ValueError(value)  # 1.5: neither a fraction nor a number of bytes


def _ssl_options(value: Any) -> TLSSettings:
    if isinstance(value, str):  # from the environment: a TOML inline table
        try:
            value = tomllib.loads(f"table = {value}")["table"]
        except tomllib.TOMLDecodeError:
            raise ValueError(value) from None
    if not isinstance(value, dict):
        raise ValueError(value)
    return parse_settings(value, "ssl_options")


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


def _header_value(value: Any) -> str:
    if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
        raise ValueError(value)
    return value.strip()


def _https_listener(origin: str, *, with_only: bool) -> Callable[[Any], HttpsListener]:
    def parse(value: Any) -> HttpsListener:
        # The environment gives the table as TOML's inline table: {port = 15671, certfile = "..."}
        table = tomllib.loads(f"table = {value}")["table"] if isinstance(value, str) else value
        if not isinstance(table, dict) or "port" not in table:
            raise ValueError(value)
        options = {key.replace("-", "_"): item for key, item in table.items()}
        port = _in_range(0, 65535)(options.pop("port"))
        only = options.pop("only", False) if with_only else False
        if not isinstance(only, bool):
            raise ValueError(value)
        settings = parse_settings(options, origin)
        if not settings.certfile:
            raise TLSConfigError(f"{origin}.certfile is required to accept TLS")
        return HttpsListener(port, settings, only)

    return parse


def _names(value: Any) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(value)
    return [item.strip() for item in items if item.strip()]


_PORT = "an integer from 0 to 65535 (0 picks a free port)"
_SIZE = "a number of bytes, optionally with RabbitMQ's units (kB, MB, GB, KiB, MiB, GiB, ...)"
_PATH = "a file path"
_HTTPS = "a table with port (0 to 65535) and certfile, and RabbitMQ's other ssl keys"
_HEADER = "a header value on one line, or an empty string for none"

SETTINGS: dict[str, Setting] = {
    "node_name": Setting(
        _node_name,
        "NAME@HOST, or NAME (then @ this machine's host name)",
        "the node's name; its host is where peers reach it when bind is 0.0.0.0",
        flag=True,
    ),
    "data_dir": Setting(
        _path, "a directory path", "where the node keeps its data (one node per directory)", True
    ),
    "bind": Setting(
        _address,
        "an IP address or a host name of this machine",
        "the address every listener binds",
        flag=True,
        metavar="ADDRESS",
    ),
    "amqp_port": Setting(_in_range(0, 65535), _PORT, "the AMQP listener's port", flag=True),
    "amqps_port": Setting(
        _in_range(0, 65535),
        _PORT,
        "the AMQPS (AMQP over TLS) listener's port; needs [ssl_options]",
        flag=True,
        default_text=f"{DEFAULT_AMQPS_PORT} when [ssl_options] is set, else off",
    ),
    "ssl_options": Setting(
        _ssl_options,
        "a TOML table of RabbitMQ's ssl_options keys (cacertfile, certfile, keyfile, verify, "
        "fail_if_no_peer_cert, versions, ciphers); in the environment an inline table, "
        '{certfile = "/c.pem", keyfile = "/k.pem"}',
        "the AMQPS listener's TLS settings",
        default_text="none: no AMQPS listener",
    ),
    "ssl_cert_login_from": Setting(
        _one_of(CERT_LOGIN_FIELDS),
        " | ".join(CERT_LOGIN_FIELDS),
        "the part of a client certificate that names the EXTERNAL user",
    ),
    "mgmt_port": Setting(
        _in_range(0, 65535), _PORT, "the management HTTP API's port (also /metrics)", flag=True
    ),
    "cluster_port": Setting(
        _in_range(0, 65535), _PORT, "node-to-node traffic: Raft, gossip, joining", flag=True
    ),
    "data_port": Setting(
        _in_range(0, 65535),
        _PORT,
        "node-to-node messages (the other nodes ask the cluster port for it)",
        flag=True,
    ),
    "join": Setting(
        _seeds,
        "HOST:PORT items (comma-separated in the environment)",
        "join the cluster of the node at this cluster address; repeatable",
        flag=True,
        default_text="none: start or restart alone",
        metavar="HOST:PORT",
        repeatable=True,
    ),
    "cluster_secret_file": Setting(
        _path,
        _PATH,
        "the secret every member of a cluster shares",
        flag=True,
        default_text="DATA_DIR/.cluster_secret if present, else ~/.leveret/cluster_secret",
    ),
    "cluster_tls_cert": Setting(_path, _PATH, "PEM certificate for node-to-node TLS"),
    "cluster_tls_key": Setting(_path, _PATH, "PEM key for node-to-node TLS"),
    "cluster_tls_ca": Setting(_path, _PATH, "PEM CA that both sides of node-to-node TLS check"),
    "ports_file": Setting(
        _path, _PATH, "once connections are accepted, write the bound ports there as JSON", True
    ),
    "cluster_name": Setting(_text, "a name", "the cluster's name"),
    "default_user": Setting(_text, "a user name", "the user made on first start"),
    "default_pass": Setting(_text, "a password", "that user's password"),
    "default_user_file": Setting(
        _path, _PATH, "a file holding default_user (wins over it)", default_text="none"
    ),
    "default_pass_file": Setting(
        _path, _PATH, "a file holding default_pass (wins over it)", default_text="none"
    ),
    "loopback_users": Setting(
        _names,
        "user names (comma-separated in the environment; empty: none)",
        "users who may log in only from this host (RabbitMQ's loopback_users)",
        default_text="guest",
    ),
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
    "queue_leader_locator": Setting(
        _one_of(CONFIGURABLE_LOCATORS),
        " | ".join(CONFIGURABLE_LOCATORS),
        "where new queues live by default: the declaring client's node, or the node with the "
        "fewest queues",
    ),
    "log_level": Setting(
        _one_of(LOG_LEVELS),
        " | ".join(LOG_LEVELS),
        "log verbosity: " + " | ".join(LOG_LEVELS) + "; debug adds tracebacks to start-up errors",
        flag=True,
    ),
    "log_format": Setting(
        _one_of(LOG_FORMATS),
        " | ".join(LOG_FORMATS),
        "text, or json: one JSON object a line (time, level, logger, message, exception)",
        flag=True,
    ),
    "log_file": Setting(
        _path, _PATH, "write the log to this file instead of standard output", True
    ),
    "load_definitions": Setting(
        _path, _PATH, "import this definitions file (JSON, as exported) at every start"
    ),
    "consumer_timeout": Setting(
        _in_range(0, 2**53),
        "a whole number of milliseconds (0: no timeout)",
        "close a channel whose delivery stays unacknowledged this long (RabbitMQ's "
        "consumer_timeout)",
    ),
    "max_unconfirmed_per_connection": Setting(
        _in_range(0, 2**31),
        "a whole number of messages (0: no cap)",
        "stop reading a confirm publisher with this many publishes unconfirmed, until half "
        "are confirmed",
    ),
    "busy_poll_microseconds": Setting(
        _in_range(0, 1_000_000),
        "a whole number of microseconds from 0 to 1000000 (0: sleep at once)",
        "how long the node keeps polling its sockets after they brought something before it "
        "sleeps: lower latency, for CPU time while traffic flows",
    ),
    "admission_failures": Setting(
        _in_range(0, 2**31),
        "a whole number of connections (0: never slow an address)",
        "failed connections from one address within admission_window that slow its new "
        "connections: errors the node closed them for, handshakes abandoned or timed out",
    ),
    "admission_window": Setting(
        _in_range(1, 86400),
        "a whole number of seconds from 1 to 86400",
        "the sliding window in which admission_failures are counted",
    ),
    "admission_rate": Setting(
        _in_range(1, 1_000_000),
        "a whole number of connections a second",
        "new connections a second read from a slowed address (a second's worth at once)",
    ),
    "admission_max_held": Setting(
        _in_range(0, 2**31),
        "a whole number of connections",
        "new connections of a slowed address that wait their turn; more are reset",
    ),
    "management_ssl": Setting(
        _https_listener("management.ssl", with_only=True),
        _HTTPS,
        "HTTPS for the management API: port, certfile, keyfile, cacertfile, verify, ...; "
        "only = true: the plain port refuses credentials",
    ),
    "prometheus_tcp_port": Setting(
        _in_range(0, 65535), _PORT, "serve /metrics on this port too (HTTP)"
    ),
    "prometheus_ssl": Setting(
        _https_listener("prometheus.ssl", with_only=False),
        _HTTPS,
        "serve /metrics on this port too (HTTPS): port, certfile, keyfile, ...",
    ),
    "management_http_max_body_size": Setting(
        _in_range(1, 2**31), "a number of bytes", "the largest management request body"
    ),
    "management_headers_content_type_options": Setting(
        _header_value, _HEADER, "X-Content-Type-Options of every management answer"
    ),
    "management_headers_frame_options": Setting(
        _header_value, _HEADER, "X-Frame-Options of every management answer"
    ),
    "management_headers_xss_protection": Setting(
        _header_value,
        _HEADER,
        "X-XSS-Protection of every management answer",
        default_text="none",
    ),
    "management_csp_policy": Setting(
        _header_value, _HEADER, "Content-Security-Policy of every management answer"
    ),
    "management_hsts_policy": Setting(
        _header_value, _HEADER, "Strict-Transport-Security of every HTTPS management answer"
    ),
}

assert set(SETTINGS) == {f.name for f in fields(Config)}, "every key has its setting"
