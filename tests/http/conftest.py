"""The HTTP service under test: uvicorn on an ephemeral loopback port, in the test's loop.

`serve(registry=None, jobs=False, **make_registry_kwargs)` starts `create_app(registry)`
on a real socket (127.0.0.1, port 0) and returns a `Served` with the base URL, an httpx client,
and tokens for every role in the workspace `acme` (and one `read` token of `other`).
Everything runs in the test's event loop, so the app uses the very registry (and
engine) the test built with `make_registry`, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn

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


@pytest.fixture
async def serve(make_registry) -> AsyncIterator[Serve]:
    running: list[tuple[uvicorn.Server, asyncio.Task[None], httpx.AsyncClient]] = []

    async def start(
        registry: Registry | None = None, *, jobs: bool = False, **kwargs: Any
    ) -> Served:
        reg = registry or await make_registry(**kwargs)
        server, task, url = await appserver.start(create_app(reg, jobs=jobs))
        client = httpx.AsyncClient(base_url=url, timeout=60)
        running.append((server, task, client))
        served = Served(url, reg, client)
        for role in Role:
            issued = await reg.tokens.create(WORKSPACE, role.value, name=f"{role}", actor="test")
            served.tokens[role.value] = issued.token
            issued = await reg.tokens.create(OTHER, role.value, name=f"{role}", actor="test")
            served.other_tokens[role.value] = issued.token
        return served

    yield start
    for server, task, client in running:
        await client.aclose()
        server.should_exit = True
        await task


@pytest.fixture
async def served(serve) -> Served:
    return await serve()
