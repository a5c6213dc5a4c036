"""The default user, its password and the cluster secret come from files, and no log line of
the node shows them."""

from __future__ import annotations

from pathlib import Path

import pika
import pika.exceptions
import pytest

from leveret.config import Config, ConfigError
from tests.support.node import NodeProcess

PASSWORD = "pw-7f3a9c-do-not-log"
CLUSTER_SECRET = "cs-51be02-do-not-log"


def test_secrets_from_files_never_reach_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "user").write_text("operator\n")
    (tmp_path / "pass").write_text(PASSWORD + "\n")
    (tmp_path / "secret").write_text(CLUSTER_SECRET + "\n")
    monkeypatch.setenv("LEVERET_DEFAULT_USER_FILE", str(tmp_path / "user"))
    monkeypatch.setenv("LEVERET_DEFAULT_PASS_FILE", str(tmp_path / "pass"))
    node = NodeProcess(
        extra_args=["--cluster-secret-file", str(tmp_path / "secret"), "--log-level", "debug"]
    ).start()
    try:
        url = f"amqp://operator:{PASSWORD}@127.0.0.1:{node.ports['amqp']}/"
        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            connection.channel().queue_declare("secrets-check")
        # The file's user is the only one: guest was not made, and a wrong password fails.
        for user, password in (("guest", "guest"), ("operator", PASSWORD + "x")):
            bad = f"amqp://{user}:{password}@127.0.0.1:{node.ports['amqp']}/"
            with pytest.raises(pika.exceptions.AMQPConnectionError):
                pika.BlockingConnection(pika.URLParameters(bad))
    finally:
        node.terminate()
    log = Path(node.log_path).read_text(errors="replace")
    assert "login refused for operator" in log  # the log was written, and read here
    assert PASSWORD not in log
    assert CLUSTER_SECRET not in log
    node.cleanup()


def test_file_wins_and_errors_never_show_the_secret(tmp_path: Path) -> None:
    secret_file = tmp_path / "pass"
    secret_file.write_text("from-the-file\r\n")
    config = Config.load(None, {"default_pass": "plain", "default_pass_file": str(secret_file)})
    assert config.default_pass == "from-the-file"
    with pytest.raises(ConfigError) as missing:
        Config.load(None, {"default_pass_file": str(tmp_path / "absent")})
    assert "default_pass_file" in str(missing.value)
    secret_file.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        Config.load(None, {"default_pass_file": str(secret_file)})
    with pytest.raises(ConfigError) as invalid:
        Config.load(None, {"default_pass": ""})
    assert "(hidden)" in str(invalid.value)
