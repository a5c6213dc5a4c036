"""A streamed route (server-sent events) served like any other: routed, authenticated, with the
headers every answer carries."""

from __future__ import annotations

import asyncio
import base64
import http.client
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict

from leveret.mgmt import Route, start_management
from leveret.mgmt.context import Context, Reply
from tests.support.node import InProcessNode

AUTH = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}


async def three_ticks(request: web.BaseRequest, headers: CIMultiDict[str]) -> web.StreamResponse:
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    await response.prepare(request)
    for tick in range(3):
        await response.write(f"data: {tick}\n\n".encode())
    await response.write_eof()
    return response


def ticks(ctx: Context) -> Reply:
    return Reply(stream=three_ticks)


async def echo(request: web.BaseRequest, headers: CIMultiDict[str]) -> web.StreamResponse:
    socket = web.WebSocketResponse()
    socket.headers.extend(headers)
    await socket.prepare(request)
    async for message in socket:
        await socket.send_str(message.data.upper())
    return socket


def shout(ctx: Context) -> Reply:
    return Reply(stream=echo)


@pytest.fixture
def mgmt_port() -> Iterator[int]:
    node = InProcessNode()
    routes = [Route("api/ticks", {"GET": ticks}), Route("api/shout", {"GET": shout})]
    server = asyncio.run_coroutine_threadsafe(
        start_management(node.broker, "127.0.0.1", 0, extra_routes=routes), node.loop
    ).result(10)

    async def close() -> None:
        server.close()
        await server.wait_closed()

    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        try:
            asyncio.run_coroutine_threadsafe(close(), node.loop).result(10)
        finally:
            node.stop()


def test_server_sent_events_through_a_route(mgmt_port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", mgmt_port, timeout=10)
    connection.request("GET", "/api/ticks", headers=AUTH)
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/event-stream")
    assert response.getheader("x-content-type-options") == "nosniff"
    assert response.read() == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    connection.request("GET", "/api/ticks")
    refused = connection.getresponse()
    refused.read()
    assert refused.status == 401


def test_a_websocket_through_a_route(mgmt_port: int) -> None:
    async def talk() -> list[str]:
        async with (
            aiohttp.ClientSession(headers=AUTH) as session,
            session.ws_connect(f"http://127.0.0.1:{mgmt_port}/api/shout") as socket,
        ):
            heard = []
            for word in ("hello", "leveret"):
                await socket.send_str(word)
                heard.append(await asyncio.wait_for(socket.receive_str(), 10))
            return heard

    assert asyncio.run(talk()) == ["HELLO", "LEVERET"]
