"""The management web UI measured against RabbitMQ 3.10.8's: first paint of the overview and of
the queues page with many queues (the browser's performance API), and the node's CPU seconds
while ten tabs poll.

Run: flock /tmp/leveret-bench.lock .venv/bin/python -m bench.webui [--queues N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pika

from bench.procinfo import cpu_seconds, process_group_pids
from leveret.testing.process import LeveretProcess
from tests.support.rabbitmq import start_rabbitmq
from tests.webui.browser import chromium_browser

# RabbitMQ's UI refreshes every 5 s by default; Leveret's is set to the same for a fair count.
REFRESH_MS = 5000
TABS = 10
# The browser's clock when the page first painted, and when the page showed its data.
# The paint entry is recorded a frame after the paint: wait for it (at most 2 s).
_TIMING = """selector => new Promise(resolve => {
  let shown = null;
  const check = () => {
    if (shown === null && document.querySelector(selector)) shown = performance.now();
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    if (shown !== null && (paint || performance.now() > shown + 2000)) {
      resolve({first_paint_ms: paint ? paint.startTime : -1, data_shown_ms: shown});
    } else setTimeout(check, 10);
  };
  check();
})"""


@dataclass
class Target:
    name: str
    base_url: str
    pids: Callable[[], list[int]]
    amqp_url: str
    overview: str  # route and the selector that shows the page's data
    overview_ready: str
    queues: str
    queues_ready: str
    prepare: Callable[[Any], None]  # logs a browser context in


def declare_queues(url: str, count: int) -> None:
    with pika.BlockingConnection(pika.URLParameters(url)) as connection:
        channel = connection.channel()
        for index in range(count):
            channel.queue_declare(f"bench-{index:05d}", durable=False)


def leveret_login(context: Any) -> None:
    context.add_init_script("sessionStorage.setItem('leveret.auth', btoa('guest:guest'))")


def rabbitmq_login(base_url: str) -> Callable[[Any], None]:
    def login(context: Any) -> None:
        page = context.new_page()
        page.goto(base_url + "/")
        page.fill("input[name=username]", "guest")
        page.fill("input[name=password]", "guest")
        page.click("input[type=submit]")
        page.wait_for_selector("#main table.list tbody tr", timeout=60_000)
        page.close()

    return login


def first_paint(
    browser: Any, target: Target, route: str, ready: str, runs: int = 3
) -> dict[str, float]:
    """Median of `runs` fresh loads of the page, logged in."""
    results = []
    for _ in range(runs):
        context = browser.new_context()
        target.prepare(context)
        page = context.new_page()
        page.goto(f"{target.base_url}/{route}")
        results.append(page.evaluate(_TIMING, ready))
        context.close()
    middle = runs // 2
    return {
        key: round(sorted(r[key] for r in results)[middle], 1)
        for key in ("first_paint_ms", "data_shown_ms")
    }


def tabs_cpu(browser: Any, target: Target, route: str, ready: str, seconds: float) -> float:
    """The node's CPU seconds while TABS tabs show the page, less the same time idle."""
    pids = target.pids()
    before = cpu_seconds(pids)
    time.sleep(seconds)
    idle = cpu_seconds(pids) - before
    context = browser.new_context()
    target.prepare(context)
    pages = []
    for _ in range(TABS):
        page = context.new_page()
        page.goto(f"{target.base_url}/{route}")
        page.wait_for_selector(ready, timeout=60_000)
        pages.append(page)
    before = cpu_seconds(pids)
    time.sleep(seconds)
    busy = cpu_seconds(pids) - before
    context.close()
    return round(busy - idle, 2)


@contextmanager
def leveret_target(queues: int) -> Iterator[Target]:
    with LeveretProcess() as node:
        declare_queues(node.url, queues)
        assert node.proc is not None
        pid = node.proc.pid
        yield Target(
            "leveret",
            node.management_url,
            lambda: [pid],
            node.url,
            f"?poll_ms={REFRESH_MS}#/overview",
            "#totals .total",
            f"?poll_ms={REFRESH_MS}#/queues",
            "tr[data-queue]",
            leveret_login,
        )


@contextmanager
def rabbitmq_target(queues: int) -> Iterator[Target]:
    with start_rabbitmq(management=True) as node:
        declare_queues(node.url, queues)
        base = f"http://127.0.0.1:{node.mgmt_port}"
        yield Target(
            "rabbitmq-3.10.8",
            base,
            lambda: process_group_pids(node.pid),
            node.url,
            "#/",
            "#main table.list tbody tr",
            "#/queues",
            "#main table.list tbody tr",
            rabbitmq_login(base),
        )


def measure(target: Target, browser: Any, seconds: float) -> dict[str, Any]:
    return {
        "overview_paint": first_paint(browser, target, target.overview, target.overview_ready),
        "queues_paint": first_paint(browser, target, target.queues, target.queues_ready),
        f"cpu_s_{TABS}_tabs_overview_{int(seconds)}s": tabs_cpu(
            browser, target, target.overview, target.overview_ready, seconds
        ),
        f"cpu_s_{TABS}_tabs_queues_{int(seconds)}s": tabs_cpu(
            browser, target, target.queues, target.queues_ready, seconds
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--only", choices=("leveret", "rabbitmq"))
    args = parser.parse_args()
    report: dict[str, Any] = {"queues": args.queues, "tabs": TABS, "refresh_ms": REFRESH_MS}
    with chromium_browser() as browser:
        for name, start in (("leveret", leveret_target), ("rabbitmq", rabbitmq_target)):
            if args.only in (None, name):
                with start(args.queues) as target:
                    report[target.name] = measure(target, browser, args.seconds)
                    print(json.dumps({target.name: report[target.name]}), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
