"""Errors as `application/problem+json` (RFC 9457), from ONE table of status codes.

Every registry exception becomes a problem whose `code` is the exception's stable
`RegistryError.code` and whose `details` are its `details()`; the status comes from
`STATUS_BY_ERROR` (first matching class wins, so subclasses come before their bases).
Problems that only HTTP knows about (no token, a missing precondition, a body too large,
an unsupported media type, a malformed request) are `HttpProblem`s with codes of their own,
listed in `HTTP_CODES`. docs/http.md documents both tables; a test checks it is complete.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from blobstore import BlobStoreError
from registry import errors
from registry.http.metrics import Metrics

PROBLEM_JSON: Final = "application/problem+json"
PROBLEM_TYPE_PREFIX: Final = "urn:skillreg:problem:"

# Seconds a client should wait before retrying a request refused for load or outage.
RETRY_AFTER: Final = "1"

# The one mapping from registry exceptions to HTTP status codes. Checked in order.
STATUS_BY_ERROR: Final[tuple[tuple[type[BaseException], int], ...]] = (
    (errors.Unauthenticated, 401),
    (errors.Forbidden, 403),
    (errors.AccessDenied, 403),
    # A stale proposal conflicts with the skill's state; the request's own precondition
    # may well have held, so this is not a 412.
    (errors.ProposalStale, 409),
    (errors.HeadConflict, 412),  # compare-and-swap lost: every write here is conditional
    (errors.Conflict, 409),
    (errors.LimitExceeded, 413),
    (errors.InvalidName, 400),
    (errors.RefusedInput, 422),
    (errors.VersionRevoked, 410),  # gone for good, with its reason (docs/revocation.md)
    (errors.NotFound, 404),
    (errors.WorkspaceBusy, 429),
    (errors.StorageUnavailable, 503),
    (errors.RegistryError, 500),
    (BlobStoreError, 503),
)

# Problems raised by the HTTP layer itself: code -> (status, what it means).
HTTP_CODES: Final[dict[str, tuple[int, str]]] = {
    "bad_request": (400, "the request is malformed (a header, a body that does not parse)"),
    "precondition_invalid": (400, "If-Match / If-None-Match has a form this endpoint refuses"),
    "unauthenticated": (401, "no bearer token, or one that is malformed, unknown or revoked"),
    "not_found": (404, "no such resource in the token's workspace, or another workspace"),
    "route_not_found": (404, "no endpoint at this path"),
    "method_not_allowed": (405, "the endpoint does not take this method"),
    "not_acceptable": (406, "the endpoint cannot produce the media type asked for"),
    "precondition_failed": (412, "If-Match / If-None-Match does not hold; the body has the head"),
    "body_too_large": (413, "the body passed the endpoint's limit (read no further)"),
    "unsupported_media_type": (415, "the endpoint does not take this Content-Type"),
    "request_invalid": (422, "parameters or JSON body fail the schema; `errors` says where"),
    "precondition_required": (428, "a write needs If-Match (update) or If-None-Match: * (create)"),
    "too_many_failures": (429, "this address presented wrong tokens too often; see Retry-After"),
    "internal_error": (500, "an unexpected error; the server log has the details"),
}

_GENERIC_CODES: Final = {
    400: "bad_request",
    401: "unauthenticated",
    404: "route_not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "request_invalid",
}

_log = logging.getLogger("registry.http")


class HttpProblem(HTTPException):
    """A problem raised by the HTTP layer.

    One of `HTTP_CODES`, or a registry code with extra members (a 412 carries the current
    ETag). Subclasses `HTTPException` so that FastAPI lets it through while it reads a body.
    """

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int | None = None,
        extra: Mapping[str, object] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status or HTTP_CODES[code][0], detail, headers=dict(headers or {}))
        self.code = code
        self.extra = dict(extra or {})


def status_for(exc: BaseException) -> int:
    """The HTTP status of a registry (or blob store) exception."""
    for cls, status in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status
    return 500


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    extra: Mapping[str, object] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A problem response."""
    body: dict[str, Any] = {
        "type": f"{PROBLEM_TYPE_PREFIX}{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    body.update(extra or {})
    all_headers = dict(headers or {})
    if status == HTTPStatus.UNAUTHORIZED:
        all_headers.setdefault("WWW-Authenticate", 'Bearer realm="skillreg"')
    if status in (HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE):
        all_headers.setdefault("Retry-After", RETRY_AFTER)
    return JSONResponse(body, status_code=status, headers=all_headers, media_type=PROBLEM_JSON)


def _client_codes() -> frozenset[str]:
    # Each class's status, decided by the table on a bare instance (no fields needed).
    return frozenset(
        cls.code
        for cls in errors.all_errors()
        if status_for(cls.__new__(cls)) < HTTPStatus.INTERNAL_SERVER_ERROR
    )


def public_error(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A recorded error (a job's `last_error`) as a client may see it.

    An error a client caused or can act on (a 4xx code) is shown whole. A server-side one
    (a store unavailable, an integrity error, an unexpected exception) keeps its code,
    attempt, time, permanence and the kind of store, not its message or details: those
    name paths, buckets, endpoints and URLs, which `skillreg jobs show` shows operators.
    """
    if record is None or record.get("code") in _client_codes():
        return None if record is None else dict(record)
    what = (record.get("details") or {}).get("what")
    kept = {k: record[k] for k in ("code", "attempt", "at", "permanent") if k in record}
    return {
        **kept,
        "message": "the attempt failed on the server side; `skillreg jobs show` has the cause",
        "details": {} if what is None else {"what": what},
    }


def correlation_id() -> str:
    """A fresh id that ties a server error's answer to its log line."""
    return secrets.token_hex(8)


def registry_problem(exc: BaseException) -> JSONResponse:
    """The problem response for a registry (or blob store) exception.

    A server error (5xx) says what kind of store failed and a correlation id, nothing else:
    the cause (a local path and an errno, a bucket and its endpoint, a database URL) is for
    the log, where the same id finds it.
    """
    status = status_for(exc)
    code = exc.code if isinstance(exc, errors.RegistryError) else "storage_unavailable"
    if status < HTTPStatus.INTERNAL_SERVER_ERROR:
        data = exc.details() if isinstance(exc, errors.RegistryError) else {}
        return problem(status, code, str(exc), extra={"details": data})
    reference = correlation_id()
    _log.warning("request failed with %s [%s]: %s", code, reference, exc, exc_info=exc)
    if isinstance(exc, errors.StorageUnavailable | BlobStoreError):
        what = exc.what if isinstance(exc, errors.StorageUnavailable) else "blob store"
        detail = f"the {what} is unavailable; retry later (correlation id {reference})"
        details: dict[str, object] = {"what": what, "correlation_id": reference}
    else:
        detail = f"the registry failed (correlation id {reference})"
        details = {"correlation_id": reference}
    return problem(status, code, detail, extra={"details": details})


def _metrics(request: Request) -> Metrics | None:
    return getattr(request.app.state, "metrics", None)


async def _on_registry_error(request: Request, exc: Exception) -> Response:
    response = registry_problem(exc)
    metrics = _metrics(request)
    if metrics is not None:
        metrics.count_problem(response.status_code, getattr(exc, "code", "storage_unavailable"))
    return response


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if isinstance(exc, HttpProblem):
        code, extra = exc.code, exc.extra
    else:
        code, extra = _GENERIC_CODES.get(exc.status_code, "bad_request"), {}
    metrics = _metrics(request)
    if metrics is not None:
        metrics.count_problem(exc.status_code, code)
    return problem(exc.status_code, code, str(exc.detail), extra=extra, headers=exc.headers)


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    where = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type")}
        for e in exc.errors()
    ]
    metrics = _metrics(request)
    if metrics is not None:
        metrics.count_problem(422, "request_invalid")
    return problem(
        422, "request_invalid", "the request does not match the schema", extra={"errors": where}
    )


# Not an HTTP status: nginx's "client closed request", for the metrics and the access log.
CLIENT_CLOSED: Final = 499


async def _on_client_disconnect(request: Request, exc: Exception) -> Response:
    """The client went away before its body was read: its doing, not an error of ours.

    Nobody reads the answer; it only gives the metrics and the access log a status.
    """
    del exc
    _log.info("client disconnected during %s %s", request.method, request.url.path)
    return Response(status_code=CLIENT_CLOSED)


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    reference = correlation_id()
    _log.error(
        "unexpected error on %s %s [%s]",
        request.method,
        request.url.path,
        reference,
        exc_info=exc,
    )
    return problem(
        500,
        "internal_error",
        f"an unexpected error occurred (correlation id {reference})",
        extra={"details": {"correlation_id": reference}},
    )


def install(app: FastAPI) -> None:
    """Register the problem handlers on `app`."""
    app.add_exception_handler(errors.RegistryError, _on_registry_error)
    app.add_exception_handler(BlobStoreError, _on_registry_error)
    app.add_exception_handler(HTTPException, _on_http_exception)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(ClientDisconnect, _on_client_disconnect)
    app.add_exception_handler(Exception, _on_unexpected)
