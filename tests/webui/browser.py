"""Headless Chromium for the web UI's tests: Debian's chromium driven by playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# playwright cannot download its own browser here: the system's chromium is used instead.
CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    configured = os.environ.get("LEVERET_CHROMIUM")
    if configured:
        return configured
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> tuple[Any, str]:
    """playwright's sync API and the chromium binary; a test without them fails under CI (which
    installs them) and is skipped elsewhere."""
    problem = None
    chromium = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = "playwright is not installed (pip install -e '.[webui]')"
    if problem is None and chromium is None:
        problem = "Debian's chromium is not installed (apt-get install chromium)"
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{problem} (required when CI=true)")
        pytest.skip(problem)
    assert chromium is not None
    return sync_playwright, chromium


@contextmanager
def chromium_browser() -> Iterator[Any]:
    sync_playwright, chromium = require_browser()
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, headless=True)
        try:
            yield browser
        finally:
            browser.close()
