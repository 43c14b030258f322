"""The HTTP app served by uvicorn in the test's event loop, and a switchboard of faults.

`start(app, port=0)` serves `app` on a real loopback socket and returns the server, its
task and its URL; `AppServer` wraps that so a test can stop the server (a registry that
goes away) and start it again on the same port. `Faults` sits in front of the app: it
counts every request, and answers the requests a test picks with a status of its choice
or passes their response through a function (to truncate or corrupt a blob on the way).
Everything runs in the test's loop, so the app uses the very registry the test built, on
SQLite and on PostgreSQL, and a process the test starts can talk to it too.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send


async def start(
    app: Any, port: int = 0, *, lifespan: str = "on"
) -> tuple[uvicorn.Server, asyncio.Task[None], str]:
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose
    # protocol says TCP, and without it every keep-alive response waits on delayed ACKs.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan=lifespan)
    server = uvicorn.Server(config)
    task = await serve_on(server, sock)
    return server, task, f"http://127.0.0.1:{port}"


async def serve_on(server: uvicorn.Server, sock: socket.socket) -> asyncio.Task[None]:
    """Run `server` on the listening `sock` in this loop, once it has started; its task."""
    task = asyncio.create_task(server.serve(sockets=[sock]))
    # Startup wait, not a race: bounded, and the test fails loudly if it never starts.
    for _ in range(2000):
        if server.started or task.done():
            break
        await asyncio.sleep(0.005)
    if task.done():
        task.result()
    assert server.started, "uvicorn did not start"
    return task


@dataclass
class Rule:
    """Requests whose method and path match get `status`, or their body through `body`."""

    method: str
    path_contains: str
    status: int | None = None
    body: Callable[[bytes], bytes] | None = None
    times: int | None = None  # how many requests it applies to (None: until removed)

    def matches(self, scope: Scope) -> bool:
        return scope["method"] == self.method and self.path_contains in scope["path"]


@dataclass
class Faults:
    """An ASGI wrapper: counts requests, and injects the faults of its rules."""

    app: ASGIApp
    rules: list[Rule] = field(default_factory=list)
    seen: list[tuple[str, str, int]] = field(default_factory=list)

    def add(self, rule: Rule) -> Rule:
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    def count(self, method: str | None = None, path_contains: str = "") -> int:
        return sum(
            1 for m, p, _ in self.seen if (method is None or m == method) and path_contains in p
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = next((r for r in self.rules if r.matches(scope)), None)
        if rule is not None and rule.times is not None:
            rule.times -= 1
            if rule.times == 0:
                self.rules.remove(rule)
        status: list[int] = []

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            if rule is not None and rule.status is not None:
                await _problem(rule.status, counted)
            elif rule is not None and rule.body is not None:
                await self.app(scope, receive, _rewriting(counted, rule.body))
            else:
                await self.app(scope, receive, counted)
        finally:
            self.seen.append((scope["method"], scope["path"], status[0] if status else 0))


async def _problem(status: int, send: Send) -> None:
    body = json.dumps({"code": "injected", "detail": f"injected {status}", "status": status})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/problem+json")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


def _rewriting(send: Send, rewrite: Callable[[bytes], bytes]) -> Send:
    """A `send` that buffers the body and sends `rewrite(body)` without a Content-Length."""
    start: list[Message] = []
    body = bytearray()

    async def rewriting(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
            start.append({**message, "headers": headers})
            return
        if message["type"] == "http.response.body":
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            await send(start[0])
            await send({"type": "http.response.body", "body": rewrite(bytes(body))})
            return
        await send(message)

    return rewriting


class AppServer:
    """An app served in the test's loop that can be stopped and started again (same port)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.port = 0
        self.url = ""
        self._running: tuple[uvicorn.Server, asyncio.Task[None]] | None = None

    async def start(self) -> str:
        server, task, self.url = await start(self.app, self.port)
        self.port = int(self.url.rsplit(":", 1)[1])
        self._running = (server, task)
        return self.url

    async def stop(self) -> None:
        if self._running is None:
            return
        server, task = self._running
        self._running = None
        server.should_exit = True
        await task
