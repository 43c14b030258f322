"""Blobs of a workspace, by digest: the first phase of an upload, and files by digest.

A workspace sees a digest only if it uploaded the bytes itself (while the upload's claim
lasts) or one of its versions or proposals names it (`registry/db/uploads.py`): content
addressing is global, and a HEAD that answered for other tenants' blobs would tell
whether some content exists anywhere. Every other digest answers 404.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import Metrics
from registry.http.routes.common import Digest, Workspace, location, problems, read_body
from registry.http.schemas import BlobFinding, BlobStored

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["blobs"])

Authorized = Annotated[Caller, Depends(authorize)]

# Blobs never change: a client may cache one for as long as it likes (it is private to
# the workspace, so shared caches must not keep it).
_IMMUTABLE = "private, max-age=31536000, immutable"


@router.head(
    "/blobs/{digest}",
    name="head_blob",
    summary="Does the workspace have this blob? (skip its upload if so)",
    responses={
        200: {"description": "The workspace has it; Content-Length is its size"},
        **problems(403, 404),
    },
)
async def head_blob(
    request: Request, workspace: Workspace, digest: Digest, caller: Authorized
) -> Response:
    """200 with the size if the workspace uploaded or references the blob, else 404."""
    del caller
    size = await registry_of(request).uploads.size(workspace, digest)
    headers = {"Content-Length": str(size), "ETag": f'"{digest}"', "Cache-Control": _IMMUTABLE}
    return Response(status_code=200, headers=headers, media_type="application/octet-stream")


@router.get(
    "/blobs/{digest}",
    name="get_blob",
    summary="A file's bytes, by digest",
    response_class=Response,
    responses={
        200: {
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            }
        },
        **problems(403, 404),
    },
)
async def get_blob(
    request: Request, workspace: Workspace, digest: Digest, caller: Authorized
) -> Response:
    """The verified bytes of a blob the workspace uploaded or references."""
    del caller
    tag = f'"{digest}"'
    headers = {"ETag": tag, "Cache-Control": _IMMUTABLE}
    if request.headers.get("if-none-match", "").strip() in (tag, "*"):
        await registry_of(request).uploads.size(workspace, digest)
        return Response(status_code=304, headers=headers)
    data = await registry_of(request).uploads.read(workspace, digest)
    return Response(data, headers=headers, media_type="application/octet-stream")


@router.put(
    "/blobs/{digest}",
    name="put_blob",
    summary="Upload one file's bytes under their digest",
    status_code=201,
    response_model=BlobStored,
    responses=problems(400, 403, 404, 413, 422, 429),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def put_blob(
    request: Request,
    workspace: Workspace,
    digest: Digest,
    caller: Authorized,
    findings: Annotated[
        Literal["refuse", "hold"],
        Query(description="bytes with content-check findings: refuse them, or hold them"),
    ] = "refuse",
) -> Response:
    """Store the body under `digest` if it hashes to it (422 `digest_mismatch` otherwise).

    The body is read under the per-file limit (413 as soon as it passes it) and
    content-checked before anything is stored: bytes with a finding are refused (422
    `content_blocked`), or with `findings=hold` stored unreadable (`held`), until a
    manifest that names the blob approves its findings and commits. The blob is kept for
    the workspace until a manifest names it or the upload's claim expires.
    """
    del caller
    data = await read_body(request)
    metrics: Metrics = request.app.state.metrics
    with metrics.write("upload_blob"):
        stored = await registry_of(request).uploads.put(
            workspace, digest, data, hold=findings == "hold"
        )
    metrics.upload_bytes.labels("blob").inc(len(data))
    where = location(request, "get_blob", workspace=workspace, digest=digest)
    body = BlobStored(
        digest=stored.digest,
        size=stored.size,
        held=stored.held,
        findings=[
            BlobFinding(pattern_class=f.pattern_class, ordinal=f.ordinal, line=f.line)
            for f in stored.findings
        ],
    ).model_dump(mode="json")
    return JSONResponse(body, status_code=201, headers={"Location": where})
