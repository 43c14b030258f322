"""Pieces every resource module uses: typed path and query parameters, documented errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import quote

from fastapi import Path, Query, Request
from pydantic import BaseModel, ValidationError

from registry.domain.model import DEFAULT_AGENT, Scope
from registry.http.problems import PROBLEM_JSON, HttpProblem
from registry.http.schemas import DIGEST_PATTERN, NAME_PATTERN, SLUG_PATTERN

Workspace = Annotated[
    str, Path(pattern=SLUG_PATTERN, max_length=64, description="the token's workspace")
]
Slug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=64, description="the skill's slug")]
Digest = Annotated[str, Path(pattern=DIGEST_PATTERN, description="lower-case hex BLAKE3")]
Agent = Annotated[
    str,
    Query(pattern=NAME_PATTERN, max_length=128, description="the agent inside the workspace"),
]
DEFAULT: Final = DEFAULT_AGENT

M = TypeVar("M", bound=BaseModel)

_DESCRIPTIONS: Final = {
    400: "Malformed request or name",
    401: "No valid bearer token",
    403: "The token's role is too low",
    404: "Not found (or another workspace's)",
    409: "Conflicts with the current state",
    412: "Precondition failed; the body carries the current ETag",
    413: "Body or package too large",
    415: "Unsupported Content-Type",
    422: "Refused input (validation, content check, missing blobs)",
    428: "If-Match (or If-None-Match: *) required",
    429: "The workspace is busy, or this address sent wrong tokens too often; retry",
    503: "Storage unavailable; retry",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for the problems an endpoint can answer."""
    schema = {"$ref": "#/components/schemas/Problem"}
    return {
        status: {
            "description": _DESCRIPTIONS[status],
            "content": {PROBLEM_JSON: {"schema": schema}},
        }
        # Every endpoint that takes a token: 401, and 429 once an address failed too often.
        for status in sorted({401, 429, 503, *statuses})
    }


def precondition_headers(*, update: str, create: str) -> list[dict[str, Any]]:
    """OpenAPI `parameters` for a conditional write's If-Match and If-None-Match."""
    return [
        {
            "name": "If-Match",
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": update,
        },
        {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "enum": ["*"]},
            "description": create,
        },
    ]


def make_scope(workspace: str, agent: str) -> Scope:
    """The scope of a request (`InvalidName`, 400, for a bad agent)."""
    return Scope(workspace, agent)


async def body_chunks(request: Request) -> AsyncIterator[bytes]:
    """The request body as it arrives (the body limit counts it on the way)."""
    async for chunk in request.stream():
        if chunk:
            yield chunk


async def read_body(request: Request) -> bytes:
    """The whole body; only for routes whose limit keeps it small."""
    data = bytearray()
    async for chunk in body_chunks(request):
        data += chunk
    return bytes(data)


def media_type(request: Request) -> str:
    """The request's media type, lower case, without parameters."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def json_request_body(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI `requestBody` of an endpoint that parses its JSON body with `json_body`.

    The model must be one of the schemas the app documents by hand (`_EXTRA_SCHEMAS`).
    """
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


async def json_body(request: Request, model: type[M]) -> M:
    """The request's JSON body as `model`: 400 if it does not parse, 422 if it does not fit.

    An endpoint calls it itself, after its `authorize` dependency ran, rather than declaring
    the body as a parameter: FastAPI reads and parses a declared body before it runs any
    dependency, so a request without a token and with a malformed body would be told about
    its body (422) instead of its missing token (401).
    """
    raw = await read_body(request)
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise invalid_body(exc) from None


def invalid_body(exc: ValidationError) -> HttpProblem:
    """The problem for a body that does not parse (400) or does not match its schema (422)."""
    if any(e["type"] == "json_invalid" for e in exc.errors()):
        return HttpProblem("bad_request", "the body is not valid JSON")
    errors = [
        {"loc": ["body", *map(str, e["loc"])], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors()
    ]
    return HttpProblem(
        "request_invalid", "the body does not match the schema", extra={"errors": errors}
    )


def attachment(filename: str) -> str:
    """A `Content-Disposition` for a download named `filename`, whatever its letters.

    RFC 6266: `filename*` carries the UTF-8 name percent-encoded; `filename` an ASCII
    fallback (each other character `_`) for clients that read only it. A header value is
    Latin-1 on the wire, so a Unicode slug written there raw cannot be sent at all.
    """
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in filename
    )
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


def path_for(request: Request, route: str, /, **params: object) -> str:
    """The path `route` serves at `params`, each percent-encoded (UTF-8).

    A header is Latin-1 on the wire: a Unicode slug written there raw cannot be sent (a
    500, after a write that already committed) and a Latin-1 one goes out as raw bytes.
    Encoded, every path that names a slug is ASCII, whatever its letters.
    """
    encoded = {k: quote(str(v), safe="") for k, v in params.items()}
    return str(request.app.url_path_for(route, **encoded))


def location(request: Request, route: str, /, **params: object) -> str:
    """A `Location` for the resource `route` serves at `params` (`path_for`).

    Absolute under the configured `public_base_url`, else a relative reference (RFC 9110,
    10.2.2): never built from the request's `Host` header, which the client chooses.
    """
    path = path_for(request, route, **params)
    base: str | None = request.app.state.registry.settings.public_base_url
    return f"{base.rstrip('/')}{path}" if base else path


def refuse_credentials(request: Request, **fields: str | None) -> None:
    """Refuse a client's actor, reason or key if it holds a credential-like value.

    The write path checks a version's message and sources itself; these fields are stored
    too (with the version, the skill's state or the job) and handed back, so a value a
    client names is checked the same way, before anything runs (`content_blocked`, 422,
    at `meta:<field>`; the value is never echoed).
    """
    request.app.state.registry.check_metadata(fields)
