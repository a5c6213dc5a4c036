"""Real Leveret brokers for tests: a node process (`LeveretProcess`, and the `leveret_node`
pytest fixture) or a container (`LeveretContainer`, with `pip install leveret[testing]`)."""

from __future__ import annotations

from typing import Any

from .process import LeveretProcess

__all__ = ["LeveretContainer", "LeveretProcess"]


def __getattr__(name: str) -> Any:
    # The container needs testcontainers, which a user of the process alone does not install.
    if name == "LeveretContainer":
        from .container import LeveretContainer

        return LeveretContainer
    raise AttributeError(name)
