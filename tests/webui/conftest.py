"""A real node and a headless browser for the web UI's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from leveret.testing.process import LeveretProcess
from tests.webui.browser import chromium_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_browser() as running:
        yield running


@pytest.fixture(scope="module")
def node() -> Iterator[LeveretProcess]:
    with LeveretProcess() as running:
        yield running
