"""`leveret ctl` run as a subprocess against a node: rabbitmqctl's commands, output, exit codes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pika
import pytest

from leveret.cli.ctl_client import EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_USAGE
from tests.mgmt.conftest import ManagedNode, amqp_connection
from tests.support.node import REPO, InProcessNode, wait_for


def ctl(
    managed: ManagedNode | None, *args: str, url: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    target = url or (managed.url if managed is not None else "")
    # `python -m leveret ctl` once the node's command has it; this module is the same command.
    command = [sys.executable, "-m", "leveret.cli.ctl", "--url", target, *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, cwd=REPO, input=stdin, check=False
    )


def test_list_queues_prints_rabbitmqs_default_columns_and_formats(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("jobs", durable=True)
        channel.basic_publish("", "jobs", b"x", pika.BasicProperties(delivery_mode=2))
        channel.queue_declare("jobs", passive=True)
    table = ctl(managed, "list_queues")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines() == [
        "Listing queues for vhost / ...",
        "name\tmessages",
        "jobs\t1",
    ]
    quiet = ctl(managed, "-q", "list_queues", "name", "durable", "messages_ready", "consumers")
    assert quiet.stdout.splitlines() == [
        "name\tdurable\tmessages_ready\tconsumers",
        "jobs\ttrue\t1\t0",
    ]
    as_json = ctl(managed, "list_queues", "--formatter", "json", "name", "messages", "arguments")
    assert json.loads(as_json.stdout) == [{"name": "jobs", "messages": 1, "arguments": {}}]
    pretty = ctl(managed, "--formatter", "pretty_table", "-q", "list_queues")
    assert pretty.stdout.splitlines()[0].startswith("┌") and "│ jobs │ 1        │" in pretty.stdout
    assert ctl(managed, "list_queues", "bogus_item").returncode == EX_USAGE


def test_policies_operator_policies_and_parameters(managed: ManagedNode) -> None:
    assert (
        ctl(
            managed,
            "set_policy",
            "cap",
            "^jobs$",
            '{"max-length": 10}',
            "--priority",
            "3",
            "--apply-to",
            "queues",
        ).returncode
        == 0
    )
    assert (
        ctl(managed, "set_operator_policy", "guard", ".*", '{"max-length": 1000}').returncode == 0
    )
    listed = json.loads(ctl(managed, "list_policies", "--formatter", "json").stdout)
    assert listed == [
        {
            "vhost": "/",
            "name": "cap",
            "pattern": "^jobs$",
            "apply-to": "queues",
            "definition": {"max-length": 10},
            "priority": 3,
        }
    ]
    operator = json.loads(ctl(managed, "list_operator_policies", "--formatter", "json").stdout)
    assert [p["name"] for p in operator] == ["guard"]
    refused = ctl(managed, "set_operator_policy", "bad", ".*", '{"overflow": "drop-head"}')
    assert (
        refused.returncode == EX_DATAERR and "are not recognised policy settings" in refused.stderr
    )
    assert ctl(managed, "set_policy", "x", ".", "not json").returncode == EX_DATAERR
    assert ctl(managed, "clear_policy", "cap").returncode == 0
    assert ctl(managed, "clear_policy", "cap").returncode == EX_DATAERR
    assert (
        ctl(managed, "set_parameter", "federation-upstream", "up", '{"uri": "amqp://h"}').returncode
        == 0
    )
    parameters = json.loads(ctl(managed, "list_parameters", "--formatter", "json").stdout)
    assert parameters == [
        {"component": "federation-upstream", "name": "up", "value": {"uri": "amqp://h"}}
    ]
    assert ctl(managed, "clear_parameter", "federation-upstream", "up").returncode == 0


def test_users_vhosts_and_permissions(managed: ManagedNode) -> None:
    assert ctl(managed, "add_vhost", "shop").returncode == 0
    assert ctl(managed, "add_user", "bob", "secret").returncode == 0
    assert ctl(managed, "add_user", "bob", "again").returncode != 0
    assert ctl(managed, "set_user_tags", "bob", "management", "monitoring").returncode == 0
    assert ctl(managed, "set_permissions", "-p", "shop", "bob", ".*", ".*", ".*").returncode == 0
    users = json.loads(ctl(managed, "list_users", "--formatter", "json").stdout)
    assert {"user": "bob", "tags": ["management", "monitoring"]} in users
    assert ctl(managed, "-q", "list_permissions", "-p", "shop").stdout.splitlines() == [
        "user\tconfigure\twrite\tread",
        "bob\t.*\t.*\t.*",
        "guest\t.*\t.*\t.*",
    ]
    assert ctl(managed, "change_password", "bob", "newer").returncode == 0
    with amqp_connection(managed, "bob", "newer", vhost="shop"):
        pass
    assert ctl(managed, "-q", "list_vhosts").stdout.splitlines() == ["name", "/", "shop"]
    missing_user = ctl(managed, "delete_user", "nobody")
    assert (
        missing_user.returncode == EX_NOUSER
        and 'User "nobody" does not exist' in missing_user.stderr
    )
    assert (
        ctl(managed, "set_permissions", "-p", "nowhere", "bob", ".*", ".*", ".*").returncode
        == EX_DATAERR
    )
    assert ctl(managed, "delete_vhost", "shop").returncode == 0
    assert ctl(managed, "delete_vhost", "shop").returncode == EX_DATAERR
    assert ctl(managed, "delete_user", "bob").returncode == 0


def test_purge_and_delete_queues(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("old")
        channel.basic_publish("", "old", b"x")
        channel.queue_declare("old", passive=True)
        assert ctl(managed, "delete_queue", "old", "--if-empty").returncode == EX_UNAVAILABLE
        assert ctl(managed, "purge_queue", "old").returncode == 0
        assert channel.queue_declare("old", passive=True).method.message_count == 0
        deleted = ctl(managed, "delete_queue", "old", "--if-empty")
        assert (
            deleted.returncode == 0
            and "Queue was successfully deleted with 0 ready messages" in deleted.stdout
        )
        assert ctl(managed, "purge_queue", "old").returncode == EX_DATAERR


def test_listing_clients(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        channel = connection.channel()
        channel.queue_declare("work")
        channel.basic_consume("work", lambda *args: None, consumer_tag="w1")
        connections = json.loads(ctl(managed, "list_connections", "--formatter", "json").stdout)
        assert [(c["user"], c["state"]) for c in connections] == [("guest", "running")]
        channels = json.loads(ctl(managed, "list_channels", "--formatter", "json").stdout)
        assert [(c["consumer_count"], c["messages_unacknowledged"]) for c in channels] == [(1, 0)]
        consumers = json.loads(ctl(managed, "list_consumers", "--formatter", "json").stdout)
        assert [(c["queue_name"], c["consumer_tag"], c["ack_required"]) for c in consumers] == [
            ("work", "w1", True)
        ]
        exchanges = ctl(managed, "-q", "list_exchanges").stdout.splitlines()
        assert exchanges[0] == "name\ttype" and "amq.topic\ttopic" in exchanges
        bindings = json.loads(ctl(managed, "list_bindings", "--formatter", "json").stdout)
        assert {
            "source_name": "",
            "source_kind": "exchange",
            "destination_name": "work",
            "destination_kind": "queue",
            "routing_key": "work",
            "arguments": {},
        } in bindings


def test_status_and_definitions(managed: ManagedNode, tmp_path: Path) -> None:
    status = json.loads(ctl(managed, "status", "--formatter", "json").stdout)
    assert status["node"] == "leveret@localhost" and status["product_name"] == "Leveret"
    assert {"port": managed.amqp_port, "protocol": "amqp"} in [
        {"port": listener["port"], "protocol": listener["protocol"]}
        for listener in status["listeners"]
    ]
    assert "Status of node leveret@localhost" in ctl(managed, "status").stdout
    managed.api.put("/api/queues/%2F/kept", {"durable": True})
    target = tmp_path / "defs.json"
    assert ctl(managed, "export_definitions", str(target)).returncode == 0
    document = json.loads(target.read_text())
    assert [q["name"] for q in document["queues"]] == ["kept"]
    managed.api.request("DELETE", "/api/queues/%2F/kept")
    assert ctl(managed, "import_definitions", "-", stdin=target.read_text()).returncode == 0
    assert managed.api.get("/api/queues/%2F/kept")["durable"] is True
    assert (
        ctl(managed, "import_definitions", str(tmp_path / "missing.json")).returncode == EX_DATAERR
    )


def test_errors_have_rabbitmqctls_exit_codes(managed: ManagedNode) -> None:
    unreachable = ctl(None, "list_queues", url="http://guest:guest@127.0.0.1:1")
    assert (
        unreachable.returncode == EX_UNAVAILABLE
        and "unable to perform an operation" in unreachable.stderr
    )
    wrong_password = ctl(
        None, "list_queues", url=f"http://guest:nope@127.0.0.1:{managed.mgmt_port}"
    )
    assert wrong_password.returncode == EX_UNAVAILABLE and "not authorised" in wrong_password.stderr
    assert ctl(managed, "add_user", "only-a-name").returncode == EX_USAGE
    assert ctl(managed, "list_queues", "-p", "nowhere").returncode == EX_DATAERR
    assert ctl(managed, "list_queues", url="ftp://x").returncode == EX_USAGE


def test_ping(managed: ManagedNode) -> None:
    answered = ctl(managed, "ping")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines()[-1] == "Ping succeeded"
    assert "Timeout: 60000 ms." in answered.stdout.splitlines()[0]
    assert ctl(managed, "-q", "ping").stdout == "Ping succeeded\n"
    as_json = ctl(managed, "ping", "--formatter", "json")
    assert json.loads(as_json.stdout) == {"message": "Ping succeeded"}
    down = ctl(None, "ping", "-t", "5", url=f"http://guest:guest@127.0.0.1:{free_port()}")
    assert down.returncode == EX_UNAVAILABLE
    assert "Failed to connect and authenticate to 127.0.0.1:" in down.stderr
    assert "in 5000 ms" in down.stderr
    wrong = ctl(None, "ping", url=f"http://guest:nope@127.0.0.1:{managed.mgmt_port}")
    assert wrong.returncode == EX_UNAVAILABLE and "Ping succeeded" not in wrong.stdout


def free_port() -> int:
    """A port nothing listens on (the kernel just handed it out and took it back)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_await_startup_returns_once_a_running_node_answers(managed: ManagedNode) -> None:
    done = ctl(managed, "await_startup")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_await_startup_retries_until_the_node_starts() -> None:
    port = free_port()
    url = f"http://guest:guest@127.0.0.1:{port}"
    with socket.create_server(("127.0.0.1", port)) as early:
        early.settimeout(20)
        waiting = subprocess.Popen(
            [sys.executable, "-m", "leveret.cli.ctl", "--url", url, "await_startup", "-t", "60"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Something not yet a node: it takes the first attempt and hangs up.
            attempt, _ = early.accept()
            attempt.close()
        except BaseException:
            waiting.kill()
            waiting.communicate(timeout=10)
            raise
    # Now nothing listens, so attempts are refused, until the node comes up on that port.
    node = InProcessNode(mgmt_port=port)
    try:
        out, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate(timeout=10)
        node.stop()
    assert waiting.returncode == 0, err
    assert out == ""


def test_await_startup_gives_up_after_its_timeout() -> None:
    url = f"http://guest:guest@127.0.0.1:{free_port()}"
    given_up = ctl(None, "await_startup", "--timeout", "1", url=url)
    assert given_up.returncode == EX_UNAVAILABLE
    assert "did not start within 1 seconds" in given_up.stderr


def test_close_connection_tells_the_client_why(managed: ManagedNode) -> None:
    with amqp_connection(managed) as connection:
        (listed,) = json.loads(
            ctl(managed, "list_connections", "pid", "--formatter", "json").stdout
        )
        reason = "maintenance — back at 10:00"
        closed = ctl(managed, "close_connection", listed["pid"], reason)
        assert closed.returncode == 0, closed.stderr
        assert closed.stdout == f"Closing connection {listed['pid']}, reason: {reason}...\n"
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as told:
            wait_for(lambda: connection.process_data_events(time_limit=0.05), timeout=10)
        assert told.value.reply_code == 320
        assert told.value.reply_text == f"CONNECTION_FORCED - {reason}"
    unknown = ctl(managed, "close_connection", listed["pid"], "again")
    assert unknown.returncode == EX_UNAVAILABLE and "does not exist" in unknown.stderr


def test_list_user_permissions(managed: ManagedNode) -> None:
    assert ctl(managed, "add_vhost", "shop").returncode == 0
    assert ctl(managed, "add_user", "bob", "secret").returncode == 0
    assert ctl(managed, "set_permissions", "-p", "shop", "bob", "^bob-.*", ".*", "").returncode == 0
    assert ctl(managed, "set_permissions", "bob", "", "", ".*").returncode == 0
    listed = ctl(managed, "list_user_permissions", "bob")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        'Listing permissions for user "bob" ...',
        "vhost\tconfigure\twrite\tread",
        "/\t\t\t.*",
        "shop\t^bob-.*\t.*\t",
    ]
    as_json = json.loads(ctl(managed, "list_user_permissions", "--formatter", "json", "bob").stdout)
    assert as_json == [
        {"vhost": "/", "configure": "", "write": "", "read": ".*"},
        {"vhost": "shop", "configure": "^bob-.*", "write": ".*", "read": ""},
    ]
    pretty = ctl(managed, "-q", "list_user_permissions", "bob", "--formatter", "pretty_table")
    assert "│ vhost │ configure │ write │ read │" in pretty.stdout
    missing = ctl(managed, "list_user_permissions", "nobody")
    assert missing.returncode == EX_NOUSER and 'User "nobody" does not exist' in missing.stderr
    assert ctl(managed, "list_user_permissions").returncode == EX_USAGE
