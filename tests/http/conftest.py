"""The HTTP service under test: the app in the test's loop, in-process or on a socket.

`serve(registry=None, *, jobs=False, socket=False, **make_registry_kwargs)` runs
`create_app(registry)` (its lifespan too) and returns a `Served` with the base URL, an httpx
client, and tokens for every role in the workspace `acme` (and one `read` token of `other`).
By default the client talks to the app through httpx's ASGI transport: no socket, no
server start. With `socket=True` the app is served by uvicorn on an ephemeral loopback port
(127.0.0.1, port 0), for the tests whose subject is the socket (raw HTTP/1.1 framing, a
client that disconnects) or whose client is another thread or process (schemathesis, the
`clawhub` client, the command line). Everything runs in the test's event loop, so the app
uses the very registry (and engine) the test built with `make_registry`, on SQLite and on
PostgreSQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from registry.api import Registry
from registry.domain.access import Role
from registry.http.app import create_app
from tests.support import appserver
from tests.support.scopes import ACME, GLOBEX

WORKSPACE = ACME.workspace
OTHER = GLOBEX.workspace


@dataclass
class Served:
    url: str
    registry: Registry
    client: httpx.AsyncClient
    tokens: dict[str, str] = field(default_factory=dict)
    other_tokens: dict[str, str] = field(default_factory=dict)

    def auth(self, role: str = "admin", *, other: bool = False) -> dict[str, str]:
        token = (self.other_tokens if other else self.tokens)[role]
        return {"Authorization": f"Bearer {token}"}


Serve = Callable[..., Awaitable[Served]]


# What uvicorn reports for a loopback client; the in-process transport says the same.
CLIENT = ("127.0.0.1", 50000)
IN_PROCESS = "http://127.0.0.1:8000"


@pytest.fixture
async def serve(make_registry) -> AsyncIterator[Serve]:
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            registry: Registry | None = None,
            *,
            jobs: bool = False,
            socket: bool = False,
            **kwargs: Any,
        ) -> Served:
            reg = registry or await make_registry(**kwargs)
            app = create_app(reg, jobs=jobs)
            if socket:
                server, task, url = await appserver.start(app)

                async def stop() -> None:
                    server.should_exit = True
                    await task

                stack.push_async_callback(stop)
                client = httpx.AsyncClient(base_url=url, timeout=60)
            else:
                # As uvicorn does: the lifespan around the requests, and an exception the
                # app raises is the 500 its error middleware sent, not an exception here.
                await stack.enter_async_context(app.router.lifespan_context(app))
                transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=CLIENT)
                url = IN_PROCESS
                client = httpx.AsyncClient(transport=transport, base_url=url, timeout=60)
            await stack.enter_async_context(client)
            served = Served(url, reg, client)
            for role in Role:
                issued = await reg.tokens.create(
                    WORKSPACE, role.value, name=f"{role}", actor="test"
                )
                served.tokens[role.value] = issued.token
                issued = await reg.tokens.create(OTHER, role.value, name=f"{role}", actor="test")
                served.other_tokens[role.value] = issued.token
            return served

        yield start


@pytest.fixture
async def served(serve) -> Served:
    return await serve()
