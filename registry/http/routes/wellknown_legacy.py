"""The older discovery layout, for clients that read it (schema 0.1.0, no `$schema`).

    GET|HEAD /.well-known/skills/index.json                            SKILLREG_DISCOVERY_ROOT
    GET|HEAD /.well-known/skills/{slug}/{path}                         (the same scope)
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/skills/index.json
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/skills/{slug}/{path}

What the npm `skills` client requests when `agent-skills/index.json` is missing: the
index (`{"skills": [{"name", "description", "files"}]}`), then each listed file at
`<base>/.well-known/skills/<name>/<path>`, where `<base>` is the index URL without
`/.well-known/skills/index.json`: file URLs are not in the document, so the root's files
are served at the root. A file URL names no version: it serves the version the index
lists now, so its answers are revalidated (`no-cache`, the file's BLAKE3 as entity tag)
rather than immutable. Same scopes, same published state and same access rules as the
0.2.0 index (registry/http/routes/wellknown.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from registry.domain import discovery
from registry.domain.model import Scope
from registry.http.auth import bearer, registry_of
from registry.http.routes.common import Slug, Workspace, make_scope, problems
from registry.http.routes.wellknown import (
    FILE_RESPONSES,
    AgentSegment,
    FilePath,
    admitted,
    cache_control,
    head_only,
    json_document,
    not_modified,
    root_scope,
)

LEGACY: Final = "/.well-known/skills"
LEGACY_PREFIX: Final = "/discovery/{workspace}/{agent}" + LEGACY

router = APIRouter(tags=["discovery"])

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]

_INDEX_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {"content": {"application/json": {"schema": {"type": "object"}}}},
    304: {"description": "If-None-Match matched"},
    **problems(404),
}


async def _index(
    request: Request, credentials: HTTPAuthorizationCredentials | None, scope: Scope
) -> Response:
    settings = await admitted(request, credentials, scope)
    found = await registry_of(request).discovery.legacy_index(scope)
    return json_document(request, settings, discovery.legacy_document(found.items), "no-cache")


async def _file(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    scope: Scope,
    slug: str,
    path: str,
) -> Response:
    settings = await admitted(request, credentials, scope)
    registry = registry_of(request)
    body = request.method == "GET"
    artifact = await registry.discovery.legacy_file(scope, slug, path, data=body)
    etag = f'"{artifact.digest}"'
    headers = {"ETag": etag, "X-Content-Type-Options": "nosniff"}
    headers.update(cache_control(settings, "no-cache"))
    if not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    if request.method == "HEAD":
        return head_only(headers, artifact.size, artifact.media_type)
    return Response(artifact.data, headers=headers, media_type=artifact.media_type)


@router.head(
    f"{LEGACY}/index.json",
    name="head_legacy_root_index",
    summary="The root scope's older index: headers only",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{LEGACY}/index.json",
    name="get_legacy_root_index",
    summary="The host's scope in the older layout (schema 0.1.0: files listed per skill)",
    responses=_INDEX_RESPONSES,
)
async def get_legacy_root_index(request: Request, credentials: Credentials) -> Response:
    """Each listed skill of the root scope with the paths of its files."""
    return await _index(request, credentials, root_scope(request))


@router.head(
    f"{LEGACY_PREFIX}/index.json",
    name="head_legacy_index",
    summary="A scope's older index: headers only",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{LEGACY_PREFIX}/index.json",
    name="get_legacy_index",
    summary="A scope in the older layout (schema 0.1.0: files listed per skill)",
    responses=_INDEX_RESPONSES,
)
async def get_legacy_index(
    request: Request, workspace: Workspace, agent: AgentSegment, credentials: Credentials
) -> Response:
    """Each listed skill of the scope with the paths of its files."""
    return await _index(request, credentials, make_scope(workspace, agent))


@router.head(
    LEGACY + "/{slug}/{path:path}",
    name="head_legacy_root_file",
    summary="A file of a root scope's skill, older layout: headers only",
    responses=FILE_RESPONSES,
    description="`GET`'s headers, without reading the file.",
)
@router.get(
    LEGACY + "/{slug}/{path:path}",
    name="get_legacy_root_file",
    summary="A file of the listed version of a root scope's skill (older layout)",
    responses=FILE_RESPONSES,
)
async def get_legacy_root_file(
    request: Request, slug: Slug, path: FilePath, credentials: Credentials
) -> Response:
    """The file at `path` of the version of `slug` the index lists now."""
    return await _file(request, credentials, root_scope(request), slug, path)


@router.head(
    LEGACY_PREFIX + "/{slug}/{path:path}",
    name="head_legacy_file",
    summary="A file of a scope's skill, older layout: headers only",
    responses=FILE_RESPONSES,
    description="`GET`'s headers, without reading the file.",
)
@router.get(
    LEGACY_PREFIX + "/{slug}/{path:path}",
    name="get_legacy_file",
    summary="A file of the listed version of a scope's skill (older layout)",
    responses=FILE_RESPONSES,
)
async def get_legacy_file(
    request: Request,
    *,
    workspace: Workspace,
    agent: AgentSegment,
    slug: Slug,
    path: FilePath,
    credentials: Credentials,
) -> Response:
    """The file at `path` of the version of `slug` the index lists now."""
    return await _file(request, credentials, make_scope(workspace, agent), slug, path)
