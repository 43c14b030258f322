"""Request bodies are limited while they stream in, never after they were buffered.

`BodyLimit` is an ASGI middleware. Before the app runs it finds the route the request
is for and that route's limit (`body_limit`), and:
- refuses at once a `Content-Length` above the limit (413, nothing read: a client that
  sent `Expect: 100-continue` is not even asked for the body);
- otherwise hands the app a `receive` that counts the bytes as they arrive and raises
  `body_too_large` (413) as soon as the count passes the limit, so an endless chunked
  body is cut off after at most one chunk beyond it;
- adds `Connection: close` to any response sent before the body was read to its end,
  so the server drops the connection instead of reading (and discarding) the rest.

The multipart parser (`registry/http/multipart.py`) adds the per-file limit on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fastapi import FastAPI
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from registry.http.metrics import Metrics
from registry.http.problems import HttpProblem, problem
from registry.settings import Settings

KiB: Final = 1024
# Bodies of endpoints that take small JSON documents (restore, decisions, controls).
DEFAULT_LIMIT: Final = 64 * KiB
# Room for part headers and boundaries in a multipart package upload, per file.
_PART_OVERHEAD: Final = 2 * KiB


def body_limit(route: str | None, content_type: str, settings: Settings) -> int:
    """The most body bytes a request to `route` may send."""
    if route == "put_blob":
        return settings.max_file_bytes
    if route == "put_skill":
        if content_type.startswith("multipart/"):
            return settings.max_package_bytes + settings.max_files * _PART_OVERHEAD + DEFAULT_LIMIT
        # A manifest: per file a path (at most depth x segment bytes), a digest and a size.
        per_file = settings.max_depth * (settings.max_segment_bytes + 1) + 256
        return settings.max_files * per_file + DEFAULT_LIMIT
    return DEFAULT_LIMIT


def route_name(app: FastAPI, scope: Scope) -> str | None:
    """The name of the route that will serve `scope`, if any."""
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "name", None)
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def too_large(limit: int) -> HttpProblem:
    return HttpProblem(
        "body_too_large",
        f"the request body is larger than this endpoint's limit of {limit} bytes",
        extra={"limit": limit},
        headers={"Connection": "close"},
    )


@dataclass
class BodyState:
    """What the limiter saw of one request's body."""

    limit: int
    received: int = 0
    complete: bool = False


class BodyLimit:
    """The ASGI middleware (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, fastapi: FastAPI, settings: Settings, metrics: Metrics
    ) -> None:
        self.app = app
        self.fastapi = fastapi
        self.settings = settings
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        content_type = (_header(scope, b"content-type") or "").lower()
        limit = body_limit(route_name(self.fastapi, scope), content_type, self.settings)
        state = BodyState(limit)
        declared = _header(scope, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            error = too_large(limit)
            self.metrics.count_problem(error.status_code, error.code)
            response = problem(
                error.status_code,
                error.code,
                str(error.detail),
                extra=error.extra,
                headers=error.headers,
            )
            await response(scope, receive, send)
            return
        # HTTP/1.1: a request has a body only if it declares a length or a transfer coding.
        chunked = _header(scope, b"transfer-encoding") is not None
        state.complete = not chunked and (declared is None or declared.strip() == "0")

        async def receive_limited() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                size = len(message.get("body", b""))
                state.received += size
                self.metrics.body_bytes.inc(size)
                if state.received > limit:
                    raise too_large(limit)
                if not message.get("more_body", False):
                    state.complete = True
            return message

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and not state.complete:
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"connection" for k, _ in headers):
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive_limited, send_closing)
