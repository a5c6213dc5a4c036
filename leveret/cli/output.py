"""How `leveret ctl` prints results: rabbitmqctl's tab-separated, pretty_table and json formats."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _pretty_table(columns: Sequence[str], rows: list[list[str]]) -> str:
    widths = [
        max([len(column)] + [len(row[i]) for row in rows]) for i, column in enumerate(columns)
    ]

    def line(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * (width + 2) for width in widths) + right

    def row_text(cells: Sequence[str]) -> str:
        return (
            "│"
            + "│".join(f" {cell.ljust(width)} " for cell, width in zip(cells, widths, strict=True))
            + "│"
        )

    out = [line("┌", "┬", "┐"), row_text(columns), line("├", "┼", "┤")]
    out += [row_text(row) for row in rows]
    out.append(line("└", "┴", "┘"))
    return "\n".join(out)


def print_rows(
    args: argparse.Namespace, columns: Sequence[str], items: list[dict[str, Any]], banner: str
) -> None:
    formatter = getattr(args, "formatter", "table")
    if formatter == "json":
        print(json.dumps([{c: item.get(c) for c in columns} for item in items]))
        return
    if not getattr(args, "quiet", False) and banner:
        print(banner)
    rows = [[_cell(item.get(c)) for c in columns] for item in items]
    if formatter == "pretty_table":
        print(_pretty_table(columns, rows))
        return
    if not getattr(args, "no_table_headers", False):
        print("\t".join(columns))
    for row in rows:
        print("\t".join(row))


def print_done(args: argparse.Namespace, message: str) -> None:
    if not getattr(args, "quiet", False) and getattr(args, "formatter", "table") != "json":
        print(message)


def print_message(args: argparse.Namespace, message: str) -> None:
    """A command's one-line result, which the JSON formatter wraps as rabbitmqctl's does."""
    if getattr(args, "formatter", "table") == "json":
        print(json.dumps({"message": message}))
    else:
        print(message)
