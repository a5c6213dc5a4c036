"""The `leveret_node` pytest fixture: a real Leveret node for a test session, no Docker needed.

Installed with the package (a pytest11 entry point): a test takes `leveret_node` and connects
to `leveret_node.url`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .process import LeveretProcess


@pytest.fixture(scope="session")
def leveret_node() -> Iterator[LeveretProcess]:
    with LeveretProcess() as node:
        yield node
