"""The Agent Skills discovery index and the artifacts it names, where clients look for them.

    GET|HEAD /.well-known/agent-skills/index.json                      SKILLREG_DISCOVERY_ROOT
    GET|HEAD /.well-known/agent-skills/versions.json                   (the same scope)
    GET|HEAD /.well-known/agent-skills/v{N}.0.0/index.json             (the same scope)
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/agent-skills/index.json
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/agent-skills/versions.json
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/agent-skills/v{N}.0.0/index.json
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/agent-skills/{slug}/{tag}.zip
    GET|HEAD /discovery/{workspace}/{agent}/.well-known/agent-skills/{slug}/{tag}/{path}

`{tag}` names one version of one skill: `<version>.<16 hex>`, the skill's entity tag at
that version, so a slug deleted and created again never reuses a URL. An artifact URL
answers the same bytes forever, or 404: artifacts are `immutable` for
`SKILLREG_DISCOVERY_MAX_AGE` (a day by default: what a cache may keep after an unpublish),
and carry their digest as their entity tag. The index is revalidated (`no-cache`) with its
own entity tag, the SHA-256 of its bytes, and answers `If-None-Match` with 304.

Entry URLs are relative to the index, so one document serves any host name or proxy
prefix; the host root's index points into its scope's prefix (`../../discovery/...`).

Versioned discovery (agentskills PR #380): each entry carries its `version`; every state
of the index served is a snapshot, `v{N}.0.0/index.json` (URLs relative to it: one `../`
more), listed with the newest by `versions.json` (registry/services/discovery/snapshots.py).
A snapshot's bytes never change, so it is served like an artifact (`immutable`, its
SHA-256 as entity tag); `versions.json`, like the index, is revalidated.

Access: a scope its owner made public is served to anyone, token or not. Any other
request needs a token of the workspace (any role), checked as everywhere else
(registry/http/auth.py), so without one the answer is 401 whether or not the scope
publishes anything.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from registry.api.types import Artifact, DiscoverySettings, IndexEntry, Snapshot
from registry.domain import discovery
from registry.domain.model import Scope
from registry.errors import NotFound, VersionNotFound
from registry.http.auth import authenticate, bearer, registry_of
from registry.http.preconditions import entity_tag, parse_condition
from registry.http.routes.common import DEFAULT, Slug, Workspace, attachment, make_scope, problems
from registry.http.schemas import NAME_PATTERN

WELL_KNOWN: Final = "/.well-known/agent-skills"
PREFIX: Final = "/discovery/{workspace}/{agent}" + WELL_KNOWN

router = APIRouter(tags=["discovery"])

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
AgentSegment = Annotated[
    str, Path(pattern=NAME_PATTERN, max_length=128, description="the agent inside the workspace")
]
Tag = Annotated[
    str,
    Path(
        pattern=r"^[1-9][0-9]{0,9}\.[0-9a-f]{16}$",
        description="`<version>.<16 hex>`: the version, and the skill's entity tag at it",
    ),
]
FilePath = Annotated[str, Path(min_length=1, max_length=4096, description="a path in the package")]
Label = Annotated[
    str, Path(max_length=32, description="a snapshot of the index: `N.0.0` (from versions.json)")
]

_INDEX_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {"content": {"application/json": {"schema": {"type": "object"}}}},
    304: {"description": "If-None-Match matched"},
    **problems(400, 404),
}
_VERSIONS_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {"content": {"application/json": {"schema": {"type": "object"}}}},
    304: {"description": "If-None-Match matched"},
    **problems(404),
}
_ARCHIVE_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {"content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}},
    304: {"description": "If-None-Match matched"},
    **problems(400, 404),
}
FILE_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            "text/markdown": {"schema": {"type": "string"}},
        }
    },
    304: {"description": "If-None-Match matched"},
    **problems(400, 404),
}


async def admitted(
    request: Request, credentials: HTTPAuthorizationCredentials | None, scope: Scope
) -> DiscoverySettings:
    """The scope's settings, once the caller may read it (public, or a token of it)."""
    settings = await registry_of(request).discovery.settings(scope)
    if not settings.public:
        await authenticate(request, credentials, scope.workspace)
    return settings


def root_scope(request: Request) -> Scope:
    """The scope the host serves at its root (`SKILLREG_DISCOVERY_ROOT`), or `NotFound`."""
    root = registry_of(request).settings.discovery_root
    if root is None:
        msg = "this host serves no discovery index at its root (SKILLREG_DISCOVERY_ROOT)"
        raise NotFound(msg)
    workspace, _, agent = root.partition("/")
    return make_scope(workspace, agent or DEFAULT)


def _segment(skill_id: int, version: int, manifest_hash: str) -> str:
    return entity_tag(skill_id, version, manifest_hash).strip('"')


def entry_path(entry: IndexEntry) -> str:
    """An entry's artifact, relative to its scope's `.well-known/agent-skills/`."""
    segment = _segment(entry.skill_id, entry.version, entry.manifest_hash)
    if entry.type == discovery.SKILL_MD_TYPE:
        return f"{entry.slug}/{segment}/{discovery.SKILL_MD}"
    return f"{entry.slug}/{segment}.zip"


def cache_control(settings: DiscoverySettings, rest: str) -> dict[str, str]:
    """`Cache-Control` (`public` or `private`, then `rest`), and `Vary` when private."""
    headers = {"Cache-Control": f"{'public' if settings.public else 'private'}, {rest}"}
    if not settings.public:
        headers["Vary"] = "Authorization"
    return headers


def not_modified(request: Request, tag: str) -> bool:
    """Whether the request's `If-None-Match` matches `tag`."""
    header = request.headers.get("if-none-match")
    return header is not None and parse_condition(header).matches(tag)


def head_only(headers: dict[str, str], size: int, media_type: str) -> Response:
    """A `HEAD` answer: the headers of a `GET` of `size` bytes, without them."""
    headers = {**headers, "Content-Length": str(size)}
    return Response(b"", headers=headers, media_type=media_type)


def items_of(entries: tuple[IndexEntry, ...], base: str) -> list[discovery.IndexItem]:
    """The document's entries, their URLs `base` + the artifact's path."""
    return [
        discovery.IndexItem(
            name=e.slug,
            type=e.type,
            description=e.description,
            url=base + entry_path(e),
            sha256=e.sha256,
            version=e.version,
        )
        for e in entries
    ]


def json_document(
    request: Request, settings: DiscoverySettings, body: bytes, rest: str
) -> Response:
    """A JSON document, its entity tag the SHA-256 of its bytes; 304 and HEAD answered."""
    tag = f'"{discovery.sha256_hex(body)[:32]}"'
    headers = {"ETag": tag, **cache_control(settings, rest)}
    if not_modified(request, tag):
        return Response(status_code=304, headers=headers)
    if request.method == "HEAD":
        return head_only(headers, len(body), "application/json")
    return Response(body, headers=headers, media_type="application/json")


async def _index(
    request: Request, credentials: HTTPAuthorizationCredentials | None, scope: Scope, base: str
) -> Response:
    settings = await admitted(request, credentials, scope)
    found = await registry_of(request).discovery.current(scope)
    body = discovery.index_document(items_of(found.entries, base))
    return json_document(request, settings, body, "no-cache")


async def _versions(
    request: Request, credentials: HTTPAuthorizationCredentials | None, scope: Scope
) -> Response:
    settings = await admitted(request, credentials, scope)
    found = await registry_of(request).discovery.snapshots(scope)
    body = discovery.versions_document(found.latest, found.numbers)
    return json_document(request, settings, body, "no-cache")


async def _snapshot(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    scope: Scope,
    label: str,
    base: str,
) -> Response:
    settings = await admitted(request, credentials, scope)
    number = discovery.label_number(label)
    if number is None:
        msg = f"no discovery index version {label!r}: versions are named N.0.0"
        raise NotFound(msg)
    found: Snapshot = await registry_of(request).discovery.snapshot(scope, number)
    # One level below the index: its URLs are the index's, one `../` further up.
    body = discovery.index_document(items_of(found.entries, "../" + base))
    max_age = registry_of(request).settings.discovery_max_age
    return json_document(request, settings, body, f"max-age={max_age}, immutable")


def _root_base(scope: Scope) -> str:
    # From /.well-known/agent-skills/index.json up to the host root, then into the prefix.
    return f"../../discovery/{scope.workspace}/{scope.agent}{WELL_KNOWN}/"


@router.head(
    f"{WELL_KNOWN}/index.json",
    name="head_discovery_root_index",
    summary="The root discovery index's headers",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{WELL_KNOWN}/index.json",
    name="get_discovery_root_index",
    summary="The discovery index of the host's scope (SKILLREG_DISCOVERY_ROOT)",
    responses=_INDEX_RESPONSES,
)
async def get_discovery_root_index(request: Request, credentials: Credentials) -> Response:
    """The Agent Skills index (schema 0.2.0) of the scope the host serves at its root."""
    scope = root_scope(request)
    return await _index(request, credentials, scope, _root_base(scope))


@router.head(
    f"{PREFIX}/index.json",
    name="head_discovery_index",
    summary="A discovery index's headers",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{PREFIX}/index.json",
    name="get_discovery_index",
    summary="The discovery index of a scope",
    responses=_INDEX_RESPONSES,
)
async def get_discovery_index(
    request: Request, workspace: Workspace, agent: AgentSegment, credentials: Credentials
) -> Response:
    """The Agent Skills index (schema 0.2.0): the scope's published skills in use."""
    return await _index(request, credentials, make_scope(workspace, agent), "")


@router.head(
    f"{WELL_KNOWN}/versions.json",
    name="head_discovery_root_versions",
    summary="The root scope's versions.json: headers only",
    responses=_VERSIONS_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{WELL_KNOWN}/versions.json",
    name="get_discovery_root_versions",
    summary="The snapshots of the host's scope index (versioned discovery)",
    responses=_VERSIONS_RESPONSES,
)
async def get_discovery_root_versions(request: Request, credentials: Credentials) -> Response:
    """`{"latest": "N.0.0", "versions": [...]}`: the listed snapshots, oldest first."""
    return await _versions(request, credentials, root_scope(request))


@router.head(
    f"{PREFIX}/versions.json",
    name="head_discovery_versions",
    summary="A scope's versions.json: headers only",
    responses=_VERSIONS_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    f"{PREFIX}/versions.json",
    name="get_discovery_versions",
    summary="The snapshots of a scope's index (versioned discovery)",
    responses=_VERSIONS_RESPONSES,
)
async def get_discovery_versions(
    request: Request, workspace: Workspace, agent: AgentSegment, credentials: Credentials
) -> Response:
    """`{"latest": "N.0.0", "versions": [...]}`: the listed snapshots, oldest first."""
    return await _versions(request, credentials, make_scope(workspace, agent))


@router.head(
    WELL_KNOWN + "/v{label}/index.json",
    name="head_discovery_root_snapshot",
    summary="A snapshot of the root scope's index: headers only",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    WELL_KNOWN + "/v{label}/index.json",
    name="get_discovery_root_snapshot",
    summary="A snapshot of the host's scope index, immutable",
    responses=_INDEX_RESPONSES,
)
async def get_discovery_root_snapshot(
    request: Request, label: Label, credentials: Credentials
) -> Response:
    """The index as it was at snapshot `label`, its URLs relative to this document."""
    scope = root_scope(request)
    return await _snapshot(request, credentials, scope, label, _root_base(scope))


@router.head(
    PREFIX + "/v{label}/index.json",
    name="head_discovery_snapshot",
    summary="A snapshot of a scope's index: headers only",
    responses=_INDEX_RESPONSES,
    description="`GET`'s headers, without the body.",
)
@router.get(
    PREFIX + "/v{label}/index.json",
    name="get_discovery_snapshot",
    summary="A snapshot of a scope's index, immutable",
    responses=_INDEX_RESPONSES,
)
async def get_discovery_snapshot(
    request: Request,
    workspace: Workspace,
    agent: AgentSegment,
    label: Label,
    credentials: Credentials,
) -> Response:
    """The index as it was at snapshot `label`, its URLs relative to this document."""
    return await _snapshot(request, credentials, make_scope(workspace, agent), label, "")


def _checked(artifact: Artifact, tag: str) -> Artifact:
    # The tag names one skill row: a slug deleted and created again has other tags.
    if _segment(artifact.skill_id, artifact.version, artifact.manifest_hash) != tag:
        raise VersionNotFound(artifact.slug, artifact.version)
    return artifact


def artifact_headers(request: Request, artifact: Artifact, etag: str) -> dict[str, str]:
    """The headers of an immutable artifact: entity tag, caching, `Repr-Digest`."""
    # `immutable`: the bytes at this URL never change. For `max_age` only, though: a cache
    # keeps what it holds that long, past an unpublish, so it is a setting, a day by default.
    max_age = registry_of(request).settings.discovery_max_age
    headers = {
        "ETag": etag,
        "X-Content-Type-Options": "nosniff",
        **cache_control(artifact.settings, f"max-age={max_age}, immutable"),
    }
    if artifact.sha256 is not None:
        digest = base64.b64encode(bytes.fromhex(artifact.sha256)).decode()
        headers["Repr-Digest"] = f"sha-256=:{digest}:"
    return headers


async def _archive(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    scope: Scope,
    slug: str,
    tag: str,
) -> Response:
    await admitted(request, credentials, scope)
    registry = registry_of(request)
    version = int(tag.partition(".")[0])
    body = request.method == "GET" and "if-none-match" not in request.headers
    artifact = _checked(await registry.discovery.archive(scope, slug, version, data=body), tag)
    etag = f'"sha256:{artifact.digest}"'
    headers = artifact_headers(request, artifact, etag)
    headers["Content-Disposition"] = attachment(f"{slug}-{version}.zip")
    if not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    if request.method == "HEAD":
        return head_only(headers, artifact.size, artifact.media_type)
    if artifact.data is None:
        artifact = await registry.discovery.archive(scope, slug, version)
    return Response(artifact.data, headers=headers, media_type=artifact.media_type)


@router.head(
    PREFIX + "/{slug}/{tag}.zip",
    name="head_discovery_archive",
    summary="A published version's zip: headers only",
    responses=_ARCHIVE_RESPONSES,
    description="`GET`'s headers (the digest and size), without reading a blob once cached.",
)
@router.get(
    PREFIX + "/{slug}/{tag}.zip",
    name="get_discovery_archive",
    summary="A published version as a reproducible zip (the root is the skill folder)",
    responses=_ARCHIVE_RESPONSES,
)
async def get_discovery_archive(
    request: Request,
    *,
    workspace: Workspace,
    agent: AgentSegment,
    slug: Slug,
    tag: Tag,
    credentials: Credentials,
) -> Response:
    """The archive an `archive` entry names: immutable, its SHA-256 the entry's digest."""
    return await _archive(request, credentials, make_scope(workspace, agent), slug, tag)


async def _file(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    scope: Scope,
    *,
    slug: str,
    tag: str,
    path: str,
) -> Response:
    await admitted(request, credentials, scope)
    registry = registry_of(request)
    version = int(tag.partition(".")[0])
    body = request.method == "GET"
    artifact = _checked(await registry.discovery.file(scope, slug, version, path, data=body), tag)
    etag = f'"{artifact.digest}"'
    headers = artifact_headers(request, artifact, etag)
    if not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    if request.method == "HEAD":
        return head_only(headers, artifact.size, artifact.media_type)
    return Response(artifact.data, headers=headers, media_type=artifact.media_type)


@router.head(
    PREFIX + "/{slug}/{tag}/{path:path}",
    name="head_discovery_file",
    summary="One file of a published version: headers only",
    responses=FILE_RESPONSES,
    description="`GET`'s headers, without reading the file.",
)
@router.get(
    PREFIX + "/{slug}/{tag}/{path:path}",
    name="get_discovery_file",
    summary="One file of a published version (a `skill-md` entry names its SKILL.md)",
    responses=FILE_RESPONSES,
)
async def get_discovery_file(
    request: Request,
    *,
    workspace: Workspace,
    agent: AgentSegment,
    slug: Slug,
    tag: Tag,
    path: FilePath,
    credentials: Credentials,
) -> Response:
    """A file's bytes, verified; Markdown as `text/markdown`, anything else as bytes."""
    return await _file(
        request, credentials, make_scope(workspace, agent), slug=slug, tag=tag, path=path
    )
