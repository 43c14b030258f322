"""Prometheus metrics of one app, in a collector registry of its own (no global state).

- `skillreg_http_requests_total{method,route,status}` and
  `skillreg_http_request_duration_seconds{method,route}`: every request. Every label comes
  from a fixed set, never from the request as sent, so that no client can add series: the
  method is one of HTTP's (`METHODS`) or `other` (a method is any token a client invents),
  the route is the matched route's *template* (`/v1/workspaces/{workspace}/skills/{slug}`)
  or `unmatched`, never the raw path.
- `skillreg_write_duration_seconds{operation,outcome}`: the registry call of each write
  endpoint (publish, upload, restore, decide, ...), outcome `ok` or the error code.
- `skillreg_conflicts_total{code}` (409 and 412) and `skillreg_refusals_total{code}`
  (400, 413, 415, 422 and other refused input).
- `skillreg_upload_bytes_total{kind}`: bytes of accepted upload bodies (`blob`,
  `package`, `archive`), and `skillreg_request_body_bytes_total`: every body byte read,
  refused ones included (the body limit's test reads it to prove how little of an
  oversized body the server read).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

# The methods of RFC 9110 (9.3) and PATCH (RFC 5789), as sent: methods are case-sensitive.
METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
)
OTHER_METHOD: Final = "other"
UNMATCHED: Final = "unmatched"

_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The counters and histograms of one app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "skillreg_http_requests",
            "HTTP requests by route template and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "skillreg_http_request_duration_seconds",
            "HTTP request latency by route template.",
            ("method", "route"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.writes = Histogram(
            "skillreg_write_duration_seconds",
            "Latency of the registry call behind each write endpoint.",
            ("operation", "outcome"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.conflicts = Counter(
            "skillreg_conflicts",
            "Requests refused as conflicts (409) or failed preconditions (412).",
            ("code",),
            registry=self.registry,
        )
        self.refusals = Counter(
            "skillreg_refusals",
            "Requests refused for their input (400, 413, 415, 422, 428).",
            ("code",),
            registry=self.registry,
        )
        self.upload_bytes = Counter(
            "skillreg_upload_bytes",
            "Bytes of accepted upload bodies.",
            ("kind",),
            registry=self.registry,
        )
        self.body_bytes = Counter(
            "skillreg_request_body_bytes",
            "Request body bytes read, refused bodies included.",
            registry=self.registry,
        )

    def count_problem(self, status: int, code: str) -> None:
        if status in (409, 412):
            self.conflicts.labels(code).inc()
        elif status in (400, 413, 415, 422, 428):
            self.refusals.labels(code).inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    @contextmanager
    def write(self, operation: str) -> Iterator[None]:
        """Time a write; the outcome is `ok` or the code of the error that ended it."""
        started = time.perf_counter()
        outcome = "ok"
        try:
            yield
        except BaseException as exc:
            outcome = str(getattr(exc, "code", type(exc).__name__))
            raise
        finally:
            self.writes.labels(operation, outcome).observe(time.perf_counter() - started)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware: count and time every request by method, route template and status."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the app raises before responding

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            # The router stored the matched route in the scope; unmatched paths share
            # one label, and invented methods another, so that scanners cannot create a
            # series per path or per method.
            route = scope.get("route")
            template = getattr(route, "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in METHODS else OTHER_METHOD
            self.metrics.observe_request(method, template, status, time.perf_counter() - started)
