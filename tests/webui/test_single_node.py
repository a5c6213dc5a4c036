"""The web UI against a real node: login, queues, publish and get, live rates, policies, and
what each user tag may see and do."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest

from leveret.testing.process import LeveretProcess
from tests.support.node import wait_for
from tests.webui.ui import go, open_ui


def api(node: LeveretProcess, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{node.management_url}/api/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
    )
    request.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = response.read()
        return json.loads(answer) if answer else None


def live_streams(node: LeveretProcess) -> int:
    """Live streams open on the node."""
    return int(api(node, "GET", "live/stats")["streams"])


@pytest.fixture
def channel(node: LeveretProcess) -> Iterator[Any]:
    connection = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        yield connection.channel()
    finally:
        connection.close()


@pytest.fixture
def page(browser: Any, node: LeveretProcess) -> Iterator[Any]:
    opened = open_ui(browser, node.management_url)
    opened.wait_for_selector("#totals .total")
    yield opened
    problems = list(opened.problems)
    opened.close()
    assert problems == []


def test_root_serves_the_page_to_browsers_and_the_old_answer_to_api_clients(
    node: LeveretProcess,
) -> None:
    html = urllib.request.Request(f"{node.management_url}/", headers={"Accept": "text/html"})
    with urllib.request.urlopen(html, timeout=10) as response:
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert b'<script type="module" src="/ui/app.js">' in response.read()
        etag = response.headers["etag"]
    with urllib.request.urlopen(f"{node.management_url}/", timeout=10) as response:
        assert response.read() == b"Leveret management: see /api/overview and /metrics\n"
    with urllib.request.urlopen(f"{node.management_url}/ui/live.js", timeout=10) as response:
        assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    again = urllib.request.Request(
        f"{node.management_url}/", headers={"Accept": "text/html", "If-None-Match": etag}
    )
    with pytest.raises(urllib.error.HTTPError) as unchanged:
        urllib.request.urlopen(again, timeout=10)
    assert unchanged.value.code == 304
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{node.management_url}/ui/nothing.js", timeout=10)
    assert missing.value.code == 404


def test_a_wrong_password_is_refused(browser: Any, node: LeveretProcess) -> None:
    page = open_ui(browser, node.management_url, "guest", "wrong")
    try:
        assert page.locator("[role=alert]").inner_text() == "Login failed"
        assert page.locator("#top").is_hidden()
    finally:
        page.close()


def test_a_queue_appears_after_a_client_declares_it(page: Any, channel: Any) -> None:
    go(page, "#/queues")
    page.wait_for_selector("#queue-count")
    channel.queue_declare("declared-by-pika")
    row = page.wait_for_selector("tr[data-queue=declared-by-pika]")
    assert "declared-by-pika" in row.inner_text()


def test_publish_from_the_page_and_get_the_message_back(page: Any, channel: Any) -> None:
    channel.queue_declare("round-trip")
    go(page, "#/queue/%2F/round-trip")
    page.fill("#publish textarea[name=payload]", "hello from the page")
    page.click("#publish button[type=submit]")
    page.wait_for_selector("#outcome >> text=Message published.")
    page.select_option("#get select[name=ackmode]", "ack_requeue_false")
    page.click("#get button[type=submit]")
    assert page.wait_for_selector("#outcome .payload").inner_text() == "hello from the page"
    method, _, _ = channel.basic_get("round-trip")
    assert method is None  # acked by the page's get


def test_the_rates_chart_moves_while_a_producer_runs(page: Any, node: LeveretProcess) -> None:
    go(page, "#/queue/%2F/busy")
    stop = threading.Event()

    def produce() -> None:
        connection = pika.BlockingConnection(pika.URLParameters(node.url))
        channel = connection.channel()
        channel.queue_declare("busy")
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            channel.basic_publish("", "busy", b"x")
            connection.process_data_events(0.01)
        connection.close()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    try:
        published = "[data-chart=rates] path[data-label=Published]"
        # Samples are taken every 5 s: two of them draw a line.
        # A steady rate draws a flat line, which has no height: Playwright calls it hidden.
        page.wait_for_selector(published, state="attached", timeout=30_000)
        first = page.get_attribute(published, "d")
        wait_for(lambda: page.get_attribute(published, "d") != first, timeout=20, interval=0.5)
        legend = page.inner_text("[data-chart=rates] .legend")
        assert "Published: 0/s" not in legend
        # The figures came over the page's live stream, not by polling.
        assert live_streams(node) >= 1
    finally:
        stop.set()
        producer.join(10)


def test_pages_poll_when_the_live_stream_fails(
    browser: Any, node: LeveretProcess, channel: Any
) -> None:
    refused: list[str] = []

    def refuse_streams(page: Any) -> None:
        def abort(route: Any) -> None:
            refused.append(route.request.url)
            route.abort()

        page.route("**/api/live?**", abort)

    page = open_ui(browser, node.management_url, prepare=refuse_streams)
    try:
        go(page, "#/queues")
        page.wait_for_selector("#queue-count")
        channel.queue_declare("seen-by-polling")
        page.wait_for_selector("tr[data-queue=seen-by-polling]")
        assert refused  # the page did try its stream
        assert page.problems == []
    finally:
        page.close()
        channel.queue_delete("seen-by-polling")


def test_create_a_policy_see_a_validation_message_and_delete_it(
    page: Any, node: LeveretProcess
) -> None:
    go(page, "#/policies")
    form = page.locator("form[data-form=policies]")
    form.locator("input[name=name]").fill("ui-limits")
    form.locator("input[name=pattern]").fill("^ui-")
    form.locator("textarea[name=definition]").fill('{"max-length": "lots"}')
    form.locator("button[type=submit]").click()
    refused = page.wait_for_selector("[role=alert]").inner_text()
    assert "is not a valid maximum length" in refused  # the API's own validation text
    form.locator("textarea[name=definition]").fill('{"max-length": 10}')
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#policies >> text=ui-limits")
    assert page.wait_for_selector("#policies >> text=^ui-")
    page.click("#policies button[data-delete=ui-limits]")
    page.wait_for_selector("#policies >> text=ui-limits", state="detached")
    assert api(node, "GET", "policies") == []


def test_a_monitoring_user_sees_but_cannot_change(
    browser: Any, node: LeveretProcess, channel: Any
) -> None:
    api(node, "PUT", "users/watcher", {"password": "watch", "tags": "monitoring"})
    api(node, "PUT", "permissions/%2F/watcher", {"configure": ".*", "write": ".*", "read": ".*"})
    channel.queue_declare("watched")
    page = open_ui(browser, node.management_url, "watcher", "watch")
    try:
        page.wait_for_selector("#totals .total")
        assert "Admin" not in page.inner_text("#nav")
        go(page, "#/queue/%2F/watched")
        page.wait_for_selector("#queue-total")
        assert page.locator("#publish").count() == 0
        assert page.locator("#purge").count() == 0
        go(page, "#/policies")
        page.wait_for_selector("#policies")
        assert page.locator("form[data-form=policies]").count() == 0
        go(page, "#/connections")
        page.wait_for_selector("table >> text=guest")
        assert page.locator("button:has-text('Close')").count() == 0
    finally:
        page.close()


def test_a_management_user_sees_only_its_vhosts(
    browser: Any, node: LeveretProcess, channel: Any
) -> None:
    api(node, "PUT", "vhosts/team", {})
    api(node, "PUT", "users/teamlead", {"password": "lead", "tags": "management"})
    api(node, "PUT", "permissions/team/teamlead", {"configure": ".*", "write": ".*", "read": ".*"})
    api(node, "PUT", "queues/team/team-work", {"durable": True})
    channel.queue_declare("not-for-team")
    page = open_ui(browser, node.management_url, "teamlead", "lead")
    try:
        page.wait_for_selector("#totals .total")
        go(page, "#/queues")
        page.wait_for_selector("tr[data-queue=team-work]")
        assert page.locator("tr[data-queue=not-for-team]").count() == 0
        assert page.locator("#add-queue").count() == 1
    finally:
        page.close()


def test_close_a_connection_from_the_page(page: Any, node: LeveretProcess) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(node.url))
    try:
        go(page, "#/connections")
        page.wait_for_selector("button:has-text('Close')")
        before = len(api(node, "GET", "connections"))
        page.locator("button:has-text('Close')").first.click()
        wait_for(lambda: len(api(node, "GET", "connections")) < before, timeout=10)
    finally:
        with contextlib.suppress(pika.exceptions.AMQPError):  # closed by the page, as intended
            connection.close()


def queue_count() -> int:
    """Queues for the paging test: 10,000 under LEVERET_SLOW=1, as the UI is meant for."""
    return 10_000 if os.environ.get("LEVERET_SLOW") == "1" else 250


def test_the_queues_page_pages_sorts_and_filters_on_the_server(
    page: Any, node: LeveretProcess, channel: Any
) -> None:
    count = queue_count()
    for index in range(count):
        channel.queue_declare(f"many-{index:05d}")
    go(page, "#/queues")
    page.fill("input[aria-label=filter]", "many-")
    wait_for(lambda: f"{count:,} of" in page.inner_text("#queue-count"), timeout=20, interval=0.2)
    assert page.locator("#queues tbody tr").count() == 100  # one page
    assert page.locator("#queues tbody tr").first.get_attribute("data-queue") == "many-00000"
    page.click("#queues th:has-text('Name')")  # sorted by name already: now reversed
    last = f"many-{count - 1:05d}"
    page.wait_for_selector(f"#queues tbody tr:first-child[data-queue='{last}']")
    page.click("button[aria-label='next page']")
    wait_for(lambda: "page 2 of" in page.inner_text(".toolbar"), timeout=10, interval=0.2)
    page.fill("input[aria-label=filter]", "many-0012[0-4]$")
    page.check(".toolbar input[type=checkbox]")
    wait_for(lambda: page.locator("#queues tbody tr").count() == 5, timeout=10, interval=0.2)


def test_publish_to_an_exchange_reaches_the_bound_queue(
    page: Any, node: LeveretProcess, channel: Any
) -> None:
    channel.queue_declare("routed-here")
    channel.queue_bind("routed-here", "amq.direct", "invoices")
    go(page, "#/exchanges/%2F/amq.direct")
    page.wait_for_selector("table >> text=routed-here")
    page.fill("#publish input[name=routing_key]", "invoices")
    page.fill("#publish textarea[name=payload]", "via amq.direct")
    page.click("#publish button[type=submit]")
    page.wait_for_selector("#outcome >> text=Message published.")
    method, _, body = channel.basic_get("routed-here", auto_ack=True)
    assert method is not None and body == b"via amq.direct"


def test_an_administrator_adds_a_vhost_a_user_and_a_permission(
    page: Any, node: LeveretProcess
) -> None:
    go(page, "#/admin")
    page.fill("#add-vhost input[name=name]", "from-the-page")
    page.click("#add-vhost button[type=submit]")
    page.wait_for_selector("#vhosts >> text=from-the-page")
    page.fill("#add-user input[name=name]", "carol")
    page.fill("#add-user input[name=password]", "c4rol")
    page.fill("#add-user input[name=tags]", "management")
    page.click("#add-user button[type=submit]")
    page.wait_for_selector("#users >> text=carol")
    page.fill("#set-permission input[name=user]", "carol")
    page.fill("#set-permission input[name=vhost]", "from-the-page")
    page.click("#set-permission button[type=submit]")
    # (The vhost's creator, guest, already has a row for it: wait for carol's.)
    page.wait_for_selector('#permissions tr:has-text("carol"):has-text("from-the-page")')
    assert api(node, "GET", "permissions/from-the-page/carol")["configure"] == ".*"
    refused = urllib.request.Request(f"{node.management_url}/api/whoami")
    refused.add_header("Authorization", "Basic " + base64.b64encode(b"carol:c4rol").decode())
    with urllib.request.urlopen(refused, timeout=10) as response:
        assert json.loads(response.read())["tags"] == ["management"]
