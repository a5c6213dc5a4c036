"""List parameters of the API: `columns`, `sort`, `sort_reverse`, and paging with `name` filters."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, bad_request

MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 100


def select_columns(item: Any, columns: str | None) -> Any:
    """Keep only the named (dotted) fields of an object, e.g. `name,message_stats.publish`."""
    if not columns or not isinstance(item, dict):
        return item
    selected: dict[str, Any] = {}
    for column in (c.strip() for c in columns.split(",")):
        if not column:
            continue
        path = column.split(".")
        value = _dig(item, path)
        if value is _MISSING:
            continue
        target = selected
        for part in path[:-1]:
            existing = target.get(part)
            if not isinstance(existing, dict):
                existing = target[part] = {}
            target = existing
        target[path[-1]] = value
    return selected


_MISSING = object()


def _dig(item: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(item, dict) or part not in item:
            return _MISSING
        item = item[part]
    return item


def _sort_key(value: Any) -> tuple[int, Any]:
    # Missing values sort first, then numbers, then text; other types by their JSON-ish text.
    if value is _MISSING or value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))


def sort_items(
    items: list[dict[str, Any]], sort: str | None, reverse: bool, default: Sequence[str]
) -> list[dict[str, Any]]:
    fields = [f for f in sort.split(",") if f] if sort else list(default)
    if not fields:
        return items
    paths = [f.split(".") for f in fields]
    return sorted(
        items, key=lambda item: [_sort_key(_dig(item, p)) for p in paths], reverse=reverse
    )


def _page_numbers(query: Mapping[str, str]) -> tuple[int, int]:
    page_text = query.get("page", "")
    size_text = query.get("page_size")
    try:
        page = int(page_text)
        size = int(size_text) if size_text is not None else DEFAULT_PAGE_SIZE
    except ValueError:
        raise bad_request("Pagination parameters are invalid") from None
    if page < 1 or size < 1 or size > MAX_PAGE_SIZE:
        shown_size = size_text if size_text is not None else "undefined"
        raise ApiError(
            400,
            "invalid_pagination_parameters",
            f"Invalid pagination parameters: page number {page}, page size {shown_size}",
        )
    return page, size


def _name_filter(query: Mapping[str, str]) -> Any:
    name = query.get("name")
    if not name:
        return None
    if query.get("use_regex", "false").lower() == "true":
        try:
            pattern = re.compile(name, re.IGNORECASE)  # RabbitMQ matches caselessly too
        except re.error:
            raise bad_request("Invalid regex in name filter") from None
        return lambda text: pattern.search(text) is not None
    lowered = name.lower()
    return lambda text: lowered in text.lower()


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: the items on it and RabbitMQ's counts around them."""

    items: list[dict[str, Any]]
    page: int
    page_size: int
    page_count: int
    filtered_count: int
    total_count: int

    def answer(self, rendered: list[dict[str, Any]], columns: str | None) -> dict[str, Any]:
        """RabbitMQ's paged answer, with `rendered` (the page's items, as shown) in place."""
        return {
            "filtered_count": self.filtered_count,
            "item_count": len(rendered),
            "items": [select_columns(item, columns) for item in rendered],
            "page": self.page,
            "page_count": self.page_count,
            "page_size": self.page_size,
            "total_count": self.total_count,
        }


def _sort_fields(query: Mapping[str, str], default: Sequence[str]) -> list[str]:
    sort = query.get("sort")
    return [f for f in sort.split(",") if f] if sort else list(default)


def pages_by_name(
    query: Mapping[str, str], default_sort: Sequence[str] = ("vhost", "name")
) -> bool:
    """Whether a listing asked for a page sorted by names alone (or not sorted): its page can then
    be chosen before its items are rendered, from their names (see `page_of`)."""
    return "page" in query and all(f in _NAME_FIELDS for f in _sort_fields(query, default_sort))


_NAME_FIELDS = frozenset({"name", "vhost"})


def page_of(
    items: list[dict[str, Any]],
    query: Mapping[str, str],
    default_sort: Sequence[str] = ("vhost", "name"),
) -> Page:
    """The page `query` asks for of `items`, filtered and sorted; `items` need hold only the
    fields sorted and filtered on."""
    page, size = _page_numbers(query)
    total_count = len(items)
    matches = _name_filter(query)
    if matches is not None:
        items = [item for item in items if matches(str(item.get("name", "")))]
    reverse = query.get("sort_reverse", "false").lower() == "true"
    items = sort_items(items, query.get("sort"), reverse, default_sort)
    filtered = len(items)
    page_count = max(1, math.ceil(filtered / size))
    if page > page_count:
        raise ApiError(
            400,
            "page_out_of_range",
            f"Page out of range, page: {page} page size: {size}, len: {filtered}",
        )
    chosen = items[(page - 1) * size : page * size]
    return Page(chosen, page, size, page_count, filtered, total_count)


def list_response(
    items: list[dict[str, Any]],
    query: Mapping[str, str],
    *,
    pageable: bool = True,
    default_sort: Sequence[str] = ("vhost", "name"),
) -> Any:
    """The answer to a list request: sorted, optionally paged and filtered, columns selected."""
    columns = query.get("columns")
    if pageable and "page" in query:
        page = page_of(items, query, default_sort)
        return page.answer(page.items, columns)
    reverse = query.get("sort_reverse", "false").lower() == "true"
    items = sort_items(items, query.get("sort"), reverse, default_sort)
    return [select_columns(item, columns) for item in items]
