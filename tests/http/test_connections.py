"""`skillreg serve`'s connections: which proxies are believed (docs/http.md, "Connections").

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
from tests.support.cli import run


@asynccontextmanager
async def serving(registry: Registry) -> AsyncIterator[str]:
    """`server_for(registry)` on a loopback port; its base URL."""
    server = server_for(registry, jobs=False, host="127.0.0.1", port=0, log_level="warning")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    # Startup wait, not a race: bounded, and the test fails loudly if it never starts.
    for _ in range(2000):
        if server.started or task.done():
            break
        await asyncio.sleep(0.005)
    assert server.started, "uvicorn did not start"
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


def test_serve_refuses_a_trusted_proxy_that_is_no_address_before_it_starts():
    output = run("serve", "--forwarded-allow-ips", "10.0.0.1/8", code=2)
    assert "not an IP address or network" in output
