"""The registry's HTTP API as a host that syncs uses it, trusting nothing it cannot check.

A host runs `skillreg sync` against a URL it was given; whatever answers there may be
broken or hostile. This client bounds what it takes before anything else looks at it:

    url       https://, or http:// to this machine (`localhost`, a loopback address); plain
              http:// elsewhere only when the caller accepts the risk (`allow_plain_http`),
              since the token and the packages would travel readable and alterable
    redirect  never followed: a 3xx is refused (`redirect`), so the token goes to no other host
    size      a JSON body larger than `Bounds.max_json_bytes` is refused (`too_large`) as
              soon as its Content-Length says so or its bytes pass the bound; an error body
              is read up to `Bounds.max_error_bytes` and the rest dropped; a blob is never
              read past the size its manifest names
    time      every request has a deadline from sending to the last byte
              (`Bounds.request_timeout`, `too_slow`), beside the per-read timeout, so a
              body trickled one byte at a time cannot hold a run

Every failure is a `RegistryError`: no answer or a 5xx is `StorageUnavailable("registry",
...)`, a refused answer `RemoteRefused(what, rule, detail)`, a problem document the error
its `code` names (its strings made `visible`), anything else a `RegistryError` saying what
came back. The run's own deadline (`Bounds.run_timeout`) is applied by `sync.Sync`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from dataclasses import dataclass, is_dataclass
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from registry.domain.display import visible
from registry.errors import (
    Inconsistency,
    RegistryError,
    RemoteRefused,
    StorageUnavailable,
    Unauthenticated,
    by_code,
)

KiB: Final = 1024
MiB: Final = 1024 * KiB
PROBLEM_JSON: Final = "application/problem+json"
RULE_PLAIN_HTTP: Final = "plain_http"
RULE_SCHEME: Final = "unsupported_scheme"
RULE_CREDENTIALS: Final = "credentials_in_url"
RULE_REDIRECT: Final = "redirect"
RULE_TOO_LARGE: Final = "too_large"
RULE_TOO_SLOW: Final = "too_slow"
RULE_RUN_DEADLINE: Final = "run_deadline"
RULE_MALFORMED: Final = "malformed"


@dataclass(frozen=True)
class Bounds:
    """How much, and for how long, a host takes from a registry (docs/sync.md)."""

    max_json_bytes: int = 16 * MiB
    max_error_bytes: int = 64 * KiB
    read_timeout: float = 30.0  # between two reads of one answer
    request_timeout: float = 60.0  # one request, from sending it to the last byte
    run_timeout: float = 1800.0  # one sync run once the target is locked, in all


@dataclass(frozen=True)
class Answer:
    """A response read whole (within its bound): status, headers and body."""

    status: int
    headers: httpx.Headers
    content: bytes


def check_url(url: str, *, allow_plain_http: bool = False) -> str:
    """The registry's base URL without a trailing slash, or `RemoteRefused("url", rule)`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteRefused("url", RULE_SCHEME, "give an https:// (or local http://) base URL")
    if parts.username is not None or parts.password is not None:
        raise RemoteRefused("url", RULE_CREDENTIALS, "pass the token with --token or --token-file")
    if parts.scheme == "http" and not allow_plain_http and not is_loopback(parts.hostname):
        detail = (
            f"http:// to {visible(parts.hostname, 255)} would send the token and receive the "
            "packages unencrypted, readable and alterable on the way; use https://, or accept "
            "that risk explicitly (--insecure-plain-http)"
        )
        raise RemoteRefused("url", RULE_PLAIN_HTTP, detail)
    return url.rstrip("/")


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses: traffic that never leaves this machine.

    Names are not resolved: a name that happens to resolve to 127.0.0.1 today is not
    trusted as local.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RegistryClient:
    """The registry's HTTP API for one base URL and one token, within `Bounds`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        bounds: Bounds | None = None,
        allow_plain_http: bool = False,
        user_agent: str = "skillreg-sync",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = check_url(url, allow_plain_http=allow_plain_http)
        self.bounds = bounds or Bounds()
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": user_agent},
            timeout=self.bounds.read_timeout,
            transport=transport,
            follow_redirects=False,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def request(
        self, method: str, path: str, *, ok: tuple[int, ...] = (200,), **kwargs: Any
    ) -> Answer:
        """Send one request; its answer if the status is in `ok`, else the error it means."""
        limit = self.bounds.max_json_bytes

        def too_large(size: int) -> RegistryError:
            detail = f"a body of {size} bytes or more, at most {limit} taken"
            return RemoteRefused(f"{method} {path}", RULE_TOO_LARGE, detail)

        return await self._send(method, path, ok, limit=limit, over=too_large, kwargs=kwargs)

    async def download(self, path: str, limit: int) -> bytes:
        """The body of `GET path`, refused (`Inconsistency`) as soon as it passes `limit`."""

        def too_long(size: int) -> RegistryError:
            return Inconsistency(f"GET {path}: {size} bytes or more, the manifest names {limit}")

        answer = await self._send(
            "GET", path, (HTTPStatus.OK,), limit=limit, over=too_long, kwargs={}
        )
        return answer.content

    async def _send(
        self,
        method: str,
        path: str,
        ok: tuple[int, ...],
        *,
        limit: int,
        over: Any,
        kwargs: dict[str, Any],
    ) -> Answer:
        deadline = asyncio.timeout(self.bounds.request_timeout)
        try:
            async with deadline, self._http.stream(method, path, **kwargs) as response:
                status = response.status_code
                if status in ok:
                    body = await _read(response, limit)
                    if body is None:
                        raise over(_declared(response) or limit + 1)
                    return Answer(status, response.headers, body)
                if HTTPStatus.MULTIPLE_CHOICES <= status < HTTPStatus.BAD_REQUEST:
                    raise _redirected(method, path, response)
                error = await _read(response, self.bounds.max_error_bytes)
                raise failure(method, path, status, response, error)
        except TimeoutError:
            if not deadline.expired():
                raise
            detail = f"no complete answer within {self.bounds.request_timeout:g}s"
            raise RemoteRefused(f"{method} {path}", RULE_TOO_SLOW, detail) from None
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: httpx.TransportError) -> StorageUnavailable:
        return StorageUnavailable("registry", f"{self.url}: {type(exc).__name__}: {exc}")


def _declared(response: httpx.Response) -> int | None:
    raw = response.headers.get("content-length", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 20 else None  # noqa: PLR2004


async def _read(response: httpx.Response, limit: int) -> bytes | None:
    """The whole body if it is at most `limit` bytes, else None (the rest is never read)."""
    declared = _declared(response)
    if declared is not None and declared > limit:
        return None
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def _redirected(method: str, path: str, response: httpx.Response) -> RemoteRefused:
    location = urlsplit(response.headers.get("location", ""))
    where = visible(location.hostname or "the same host", 255)
    detail = f"{response.status_code} to {where}; a host follows no redirect with its token"
    return RemoteRefused(f"{method} {path}", RULE_REDIRECT, detail)


def failure(
    method: str, path: str, status: int, response: httpx.Response, body: bytes | None
) -> RegistryError:
    """The registry error an unexpected answer stands for (`body`: None if it was too long)."""
    problem: dict[str, Any] = {}
    if body is not None and response.headers.get("content-type", "").startswith(PROBLEM_JSON):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        problem = parsed if isinstance(parsed, dict) else {}
    code = visible(str(problem.get("code", "")), 64)
    detail = visible(str(problem.get("detail", "")))
    if status == HTTPStatus.UNAUTHORIZED:
        return Unauthenticated()
    details = problem.get("details")
    rebuilt = _rebuild(code, details if isinstance(details, dict) else {}, detail)
    if rebuilt is not None and status < HTTPStatus.INTERNAL_SERVER_ERROR:
        return rebuilt
    reason = visible(response.reason_phrase, 64)
    said = f"{status} {code or reason}{': ' + detail if detail else ''}"
    if status == HTTPStatus.TOO_MANY_REQUESTS or status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        return StorageUnavailable("registry", f"{method} {path}: {said}")
    return RegistryError(f"{method} {path}: the registry answered {said}")


def _rebuild(code: str, details: dict[str, Any], detail: str) -> RegistryError | None:
    """The registry error named by a problem's `code`, from its `details` if it has fields."""
    cls = by_code(code)
    if cls is None:
        return None
    shown = {str(k): visible(v) if isinstance(v, str) else v for k, v in details.items()}
    try:
        return cls(**shown) if is_dataclass(cls) else cls(detail)
    except (TypeError, ValueError):
        return None
