"""Driving the web UI as a user does: open it, log in, go to a page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Pages poll every POLL_MS; tests poll faster so that waits stay short.
POLL_MS = 500
WAIT_MS = 20_000


def open_ui(
    browser: Any,
    base_url: str,
    user: str = "guest",
    password: str = "guest",
    prepare: Callable[[Any], None] | None = None,
) -> Any:
    """A new page logged in as `user`; page errors are collected in `page.problems`.
    `prepare` is given the page before it loads (to route its requests)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    if prepare is not None:
        prepare(page)
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.problems = problems
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{base_url}/?poll_ms={POLL_MS}")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.click("form.login button[type=submit]")
    return page


def go(page: Any, route: str) -> None:
    page.evaluate("route => { location.hash = route; }", route)
