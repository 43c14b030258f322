"""`skillreg serve`'s connections: which proxies are believed, and how long a request head
may take (docs/http.md, "Connections").

Each test runs the server `skillreg serve` builds (`server_for`, the settings it reads)
on a loopback socket in the test's loop.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from pydantic import ValidationError

from registry.api import Registry
from registry.http.server import server_for
from registry.settings import Settings
from tests.support.appserver import serve_on
from tests.support.cli import run


@asynccontextmanager
async def serving(registry: Registry) -> AsyncIterator[str]:
    """`server_for(registry)` on a loopback port; its base URL."""
    server = server_for(registry, jobs=False, host="127.0.0.1", port=0, log_level="warning")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    task = await serve_on(server, sock)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


async def _cookie_behind_a_tls_proxy(url: str) -> str:
    async with httpx.AsyncClient(base_url=url) as client:
        answer = await client.get("/console/signin", headers={"X-Forwarded-Proto": "https"})
    assert answer.status_code == 200
    return answer.headers["set-cookie"].lower()


@pytest.mark.parametrize(
    ("trusted", "secure"),
    [("*", True), ("127.0.0.0/8, ::1", True), ("192.0.2.1", False), ("", False)],
    ids=["any", "loopback-network", "another-proxy", "none"],
)
async def test_the_console_cookie_is_secure_behind_a_trusted_tls_proxy(
    make_registry, trusted, secure
):
    registry = await make_registry(settings=Settings(forwarded_allow_ips=trusted))
    async with serving(registry) as url:
        cookie = await _cookie_behind_a_tls_proxy(url)
    assert ("; secure" in cookie) is secure, cookie


@pytest.mark.parametrize("value", ["10.0.0.1/8", "proxy.example", "*,10.0.0.1", "10.0.0.300"])
def test_a_trusted_proxy_must_be_an_address_or_a_network(value):
    with pytest.raises(ValidationError, match="not an IP address or network"):
        Settings(forwarded_allow_ips=value)


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [
        ("--forwarded-allow-ips", "10.0.0.1/8", "not an IP address or network"),
        ("--header-timeout", "nan", "expected seconds"),
        ("--header-timeout", "0", "expected seconds"),
    ],
    ids=["proxy", "timeout-nan", "timeout-zero"],
)
def test_serve_refuses_a_connection_option_before_it_starts(option, value, rule):
    assert rule in run("serve", option, value, code=2)


async def _answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return head.split(b"\r\n", 1)[0]


async def _dribbled_until_closed(reader, writer, line: bytes) -> bytes:
    """Send `line` a byte at a time, slower than the deadline; what the server sent back."""

    async def dribble() -> None:
        for byte in line:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.2)

    sender = asyncio.create_task(dribble())
    try:
        # Far past the one-second deadline: without it, nothing ever closes the connection.
        return await asyncio.wait_for(reader.read(), 15)
    finally:
        sender.cancel()
        writer.close()


async def test_a_connection_whose_request_head_is_late_is_closed(make_registry):
    registry = await make_registry(settings=Settings(http_header_timeout=1.0))
    slow = b"GET /healthz?" + b"x" * 200 + b" HTTP/1.1\r\nHost: registry\r\n\r\n"
    async with serving(registry) as url:
        host, _, port = url.removeprefix("http://").partition(":")

        # A fresh connection that sends its request line byte by byte is closed, unanswered,
        # although bytes keep arriving.
        reader, writer = await asyncio.open_connection(host, int(port))
        assert await _dribbled_until_closed(reader, writer, slow) == b""

        # So is one kept alive after an answer, whose next request head is late: the
        # deadline starts again with each response.
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: registry\r\n\r\n")
        assert await _answer(reader) == b"HTTP/1.1 200 OK"
        assert await _dribbled_until_closed(reader, writer, slow) == b""
