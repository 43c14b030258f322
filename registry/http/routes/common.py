"""Pieces every resource module uses: typed path and query parameters, documented errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Final

from fastapi import Path, Query, Request

from registry.domain.model import DEFAULT_AGENT, Scope
from registry.http.problems import PROBLEM_JSON
from registry.http.schemas import DIGEST_PATTERN, NAME_PATTERN, SLUG_PATTERN

Workspace = Annotated[
    str, Path(pattern=NAME_PATTERN, max_length=128, description="the token's workspace")
]
Slug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=64, description="the skill's slug")]
Digest = Annotated[str, Path(pattern=DIGEST_PATTERN, description="lower-case hex BLAKE3")]
Agent = Annotated[
    str,
    Query(pattern=NAME_PATTERN, max_length=128, description="the agent inside the workspace"),
]
DEFAULT: Final = DEFAULT_AGENT

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
    429: "The workspace is busy; retry",
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
        for status in sorted({401, 503, *statuses})
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
