"""Request bodies are limited while they stream in, never after they were buffered.

`BodyLimit` is an ASGI middleware around the app:
- before the app runs, a `Content-Length` above the largest limit of any endpoint is
  refused at once (413, nothing read);
- the app gets a `receive` that, on its first call (routing is done by then, so the
  endpoint is known), refuses a `Content-Length` above that endpoint's limit
  (`body_limit`) before reading a byte (a client that sent `Expect: 100-continue` is
  not even asked for the body; the endpoint has authenticated the caller first), and
  then counts the bytes as they arrive and raises `body_too_large` (413) as soon as the
  count passes the limit, so an endless chunked body is cut off after at most one chunk
  beyond it;
- a response sent before the body was read to its end (a 401, 403, 404 or 412 decided
  before the upload was needed) first drains a short remainder, so the connection can
  be reused; a refused or long body is not read: the response gets `Connection: close`
  and the server drops the connection instead.

The 413 is raised only where the app can still answer with it: in an endpoint that reads
its body, before its response started. A `StreamingResponse` (the archive downloads)
calls `receive` too, from a task that waits for `http.disconnect` while another task
sends the response. A 413 raised there after the headers went out cuts the download
off, and one raised before them is no better: anyio cancels only a task that has
started, so the scheduled sending task still runs up to its first real wait and writes
a 200 on the way; Starlette then fails with "response already started" and the client
gets a truncated 200. So a GET or HEAD body, which no route here reads (RFC 9110,
9.3.1: it has no defined meaning), is never refused: the app sees it empty and only its
bytes are counted; and a message that passes the limit after any response started is
counted and handed on empty. What is still unread when the response goes out is left
to the rule above: drained when short, else the connection is closed.

Before any of that, the request's framing is checked, whatever server runs the app: a
request with both `Content-Length` and `Transfer-Encoding` is refused with 400 and
`Connection: close` (RFC 9112, 6.3: the two can be read differently by a proxy in front
and the server behind, which is how a second request is smuggled inside the first, so
the connection is not trusted with another request either), and so is a `Content-Length`
that is not one decimal number; one with more digits than the cap has is 413.

The multipart parser (`registry/http/multipart.py`) adds the per-file limit on top.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from registry.domain.numbers import decimal
from registry.http.metrics import Metrics
from registry.http.problems import HttpProblem, problem
from registry.settings import Settings

KiB: Final = 1024
# Bodies of endpoints that take small JSON documents (restore, decisions, controls).
DEFAULT_LIMIT: Final = 64 * KiB
# Room for part headers and boundaries in a multipart package upload, per file.
_PART_OVERHEAD: Final = 2 * KiB
# A response sent before the body was read drains at most this much of it (see `_drain`).
_DRAIN_LIMIT: Final = 256 * KiB


def body_limit(route: str | None, content_type: str, settings: Settings) -> int:  # noqa: PLR0911 - a limit per kind of body
    """The most body bytes a request to `route` may send."""
    if route in ("put_blob", "clawhub_upload"):
        return settings.max_file_bytes
    if route == "clawhub_publish":  # a manifest, as JSON with a SHA-256 and an id a file
        return body_limit("put_skill", "application/json", settings) * 2
    if route == "put_listing":  # an archive: the reader refuses a larger file anyway
        return 2 * settings.archive_max_bytes
    if route in ("console_edit", "console_decide"):  # the console's editor: one whole file
        return settings.max_file_bytes + DEFAULT_LIMIT
    if route == "decide_proposal":  # an alternative's manifest
        return body_limit("put_skill", "application/json", settings)
    if route == "put_skill":
        if content_type.startswith("multipart/"):
            return settings.max_package_bytes + settings.max_files * _PART_OVERHEAD + DEFAULT_LIMIT
        # A manifest: per file a path (at most depth x segment bytes, up to three times
        # that once JSON escapes it), a digest, a size and the keys.
        per_file = 3 * settings.max_depth * (settings.max_segment_bytes + 1) + 256
        return settings.max_files * per_file + DEFAULT_LIMIT
    return DEFAULT_LIMIT


def largest_limit(settings: Settings) -> int:
    """The largest body any endpoint takes: the cap applied before routing."""
    return max(
        body_limit("put_skill", "multipart/form-data", settings),
        body_limit("put_skill", "application/json", settings),
        body_limit("put_blob", "", settings),
        body_limit("put_listing", "", settings),
    )


def _header(scope: Scope, name: bytes) -> str | None:
    values = _headers(scope, name)
    return values[0] if values else None


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [
        bytes(value).decode("latin-1")
        for key, value in scope.get("headers", ())
        if bytes(key).lower() == name
    ]


def _bad_framing(detail: str) -> HttpProblem:
    return HttpProblem("bad_request", detail, headers={"Connection": "close"})


def framing_problem(scope: Scope, cap: int) -> HttpProblem | None:
    """Why the request's body framing is refused (see the module docstring), or None."""
    lengths = [v.strip() for v in _headers(scope, b"content-length")]
    if lengths and _headers(scope, b"transfer-encoding"):
        return _bad_framing(
            "a request may not have both Content-Length and Transfer-Encoding (RFC 9112, 6.3)"
        )
    if len(set(lengths)) > 1:
        return _bad_framing("the request has conflicting Content-Length values")
    if lengths and not (lengths[0].isascii() and lengths[0].isdigit()):
        return _bad_framing("Content-Length is not a decimal number")
    if lengths and decimal(lengths[0], cap) is None:
        return too_large(cap)
    return None


def too_large(limit: int) -> HttpProblem:
    return HttpProblem(
        "body_too_large",
        f"the request body is larger than this endpoint's limit of {limit} bytes",
        extra={"limit": limit},
        headers={"Connection": "close"},
    )


class _Body:
    """One request's body on its way in: its limit, what was read, whether it ended."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, *, limiter: BodyLimit) -> None:
        self.scope = scope
        self.inner_receive = receive
        self.inner_send = send
        self.limiter = limiter
        # `framing_problem` let only a number within the cap through.
        raw_length = (_header(scope, b"content-length") or "").strip()
        self.declared = int(raw_length) if raw_length else None
        # HTTP/1.1: a request has a body only if it declares a length or a transfer coding.
        chunked = _header(scope, b"transfer-encoding") is not None
        self.complete = not chunked and not self.declared
        # See the module docstring: the app gets such a body empty and never a 413 for it.
        self.unread = scope.get("method") in ("GET", "HEAD")
        self.limit: int | None = None
        self.received = 0
        self.refused = False
        self.started = False

    def _route_limit(self) -> int:
        # Called on the first receive: routing has happened, the scope names the endpoint.
        route = getattr(self.scope.get("route"), "name", None)
        content_type = (_header(self.scope, b"content-type") or "").lower()
        return body_limit(route, content_type, self.limiter.settings)

    def _may_refuse(self) -> bool:
        return not self.unread and not self.started

    async def receive(self) -> Message:
        if self.limit is None:
            self.limit = self._route_limit()
            if self._may_refuse() and self.declared is not None and self.declared > self.limit:
                self.refused = True
                raise too_large(self.limit)
        message = await self.inner_receive()
        if message["type"] != "http.request":
            return message
        size = len(message.get("body", b""))
        self.received += size
        self.limiter.metrics.body_bytes.inc(size)
        over = self.received > self.limit
        if over and self._may_refuse():
            self.refused = True
            raise too_large(self.limit)
        if not message.get("more_body", False):
            self.complete = True
        if over or self.unread:
            return {**message, "body": b""}
        return message

    async def _drain(self) -> None:
        """Read and drop what is left of a small body, so the connection stays usable.

        Closing a socket with unread bytes in it makes the kernel answer with a reset,
        which can reach the client before the response does; a short remainder is
        cheaper to read than to lose the response over. A body over its limit, or a
        long remainder, is not read: the connection is closed instead.
        """
        if self.refused:
            return
        while not self.complete and self.received < _DRAIN_LIMIT:
            message = await self.inner_receive()
            if message["type"] != "http.request":
                return
            self.received += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start" and not self.complete:
            await self._drain()
        if message["type"] == "http.response.start" and not self.complete:
            headers = list(message.get("headers", []))
            if not any(k.lower() == b"connection" for k, _ in headers):
                headers.append((b"connection", b"close"))
            message = {**message, "headers": headers}
        if message["type"] == "http.response.start":
            self.started = True
        await self.inner_send(message)


class BodyLimit:
    """The ASGI middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, settings: Settings, metrics: Metrics) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics
        self.cap = largest_limit(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        error = framing_problem(scope, self.cap)
        if error is not None:
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
        body = _Body(scope, receive, send, limiter=self)
        await self.app(scope, body.receive, body.send)
