"""The management HTTPS and header keys: TOML tables as RabbitMQ's dotted keys, the environment's
inline tables, and refusals that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from leveret.config import Config, ConfigError
from leveret.mgmt.http_settings import http_limits


def load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "leveret.toml"
    path.write_text(text)
    return Config.load(str(path), {})


def test_dotted_tables_map_to_keys(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
[management.ssl]
port = 15671
certfile = "/etc/leveret/server.pem"
keyfile = "/etc/leveret/server.key"
verify = "verify_peer"
cacertfile = "/etc/leveret/ca.pem"
only = true

[management.headers]
frame_options = "SAMEORIGIN"
xss_protection = "1; mode=block"

[management.hsts]
policy = ""

[management.http]
max_body_size = 1000

[prometheus.tcp]
port = 15692
""",
    )
    ssl = config.management_ssl
    assert ssl is not None and (ssl.port, ssl.only) == (15671, True)
    assert (ssl.tls.certfile, ssl.tls.verify) == ("/etc/leveret/server.pem", "verify_peer")
    assert config.prometheus_tcp_port == 15692 and config.prometheus_ssl is None
    limits = http_limits(config)
    assert limits.max_body_bytes == 1000
    assert ("x-frame-options", "SAMEORIGIN") in limits.headers
    assert ("x-xss-protection", "1; mode=block") in limits.headers
    assert ("x-content-type-options", "nosniff") in limits.headers
    assert limits.https_headers == ()  # an empty policy sends no header


def test_the_defaults_send_the_security_headers() -> None:
    limits = http_limits(Config())
    names = {name for name, _ in limits.headers}
    assert names == {"x-content-type-options", "x-frame-options", "content-security-policy"}
    assert limits.https_headers[0][0] == "strict-transport-security"
    assert limits.max_body_bytes == 10_000_000


def test_the_environment_gives_a_table_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "LEVERET_PROMETHEUS_SSL", '{port = 15691, certfile = "/c.pem", keyfile = "/k.pem"}'
    )
    config = Config.load(None, {})
    assert config.prometheus_ssl is not None and config.prometheus_ssl.port == 15691


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[management.ssl]\ncertfile = "/c.pem"\n', "management_ssl"),
        ('[management.ssl]\nport = 1\ncertfile = "/c.pem"\nbogus = 1\n', "management.ssl.bogus"),
        ("[management.ssl]\nport = 1\n", "management.ssl.certfile is required"),
        (
            '[management.ssl]\nport = 1\ncertfile = "/c"\nverify = "maybe"\n',
            "management.ssl.verify",
        ),
        ('[prometheus.ssl]\nport = 1\ncertfile = "/c"\nonly = true\n', "prometheus.ssl.only"),
        ('[management.headers]\nframe_options = "a\\r\\nb"\n', "management_headers_frame_options"),
        ("[management.http]\nmax_body_size = 0\n", "management_http_max_body_size"),
        ("[management.nothing]\nx = 1\n", "management_nothing_x"),
    ],
)
def test_wrong_values_are_refused_by_name(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, text)
    assert named in str(refused.value)
