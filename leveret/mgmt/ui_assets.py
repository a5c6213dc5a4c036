"""The management web UI's files (leveret/mgmt/ui/), served from the route table: `/` gives a
browser the page and API clients the old one-line answer; `/ui/{asset}` gives the modules."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .context import Context, Reply, Route, not_found_unless

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_API_CLIENT_ANSWER = b"Leveret management: see /api/overview and /metrics\n"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


@cache
def assets() -> dict[str, Asset]:
    """Every file of the UI by name, read once: the files ship inside the package."""
    found: dict[str, Asset] = {}
    for entry in resources.files("leveret.mgmt").joinpath("ui").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _CONTENT_TYPES:
            body = entry.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            found[entry.name] = Asset(body, _CONTENT_TYPES[suffix], etag)
    return found


def _serve(ctx: Context, asset: Asset) -> Reply:
    # The files change only with the package: an unchanged one costs the browser a 304.
    if ctx.request.header("if-none-match") == asset.etag:
        return Reply(304, headers=[("etag", asset.etag)])
    return Reply(
        200, raw=asset.body, content_type=asset.content_type, headers=[("etag", asset.etag)]
    )


def root(ctx: Context) -> Reply:
    """The UI for a browser (it asks for HTML), the one-line answer for anything else."""
    if "text/html" in ctx.request.header("accept"):
        return _serve(ctx, assets()["index.html"])
    return Reply(200, raw=_API_CLIENT_ANSWER, content_type="text/plain")


def asset(ctx: Context) -> Reply:
    found = assets().get(ctx.param("asset"))
    not_found_unless(found is not None)
    assert found is not None
    return _serve(ctx, found)


ROUTES = [
    Route("", {"GET": root}, public=True),
    Route("ui/{asset}", {"GET": asset}, public=True),
]
