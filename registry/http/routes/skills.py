"""Skills: the listing, a package at the head or a pinned version, its archive, and writes.

`PUT .../skills/{slug}` publishes a new head, conditionally (registry/http/preconditions.py):
- `application/json`: a manifest (`ManifestBody`) whose blobs were uploaded first with
  `PUT .../blobs/{digest}`;
- `multipart/form-data`: the whole package in one request (registry/http/multipart.py).
Either way the package goes through the registry's one write path.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from registry.api import Registry
from registry.api.types import PackageInfo
from registry.domain.access import Role
from registry.domain.approvals import FindingRef
from registry.domain.arguments import RULE_MALFORMED
from registry.domain.model import ArchivedVersion, ExpectedHead, Origin, Publication, Scope
from registry.domain.numbers import MAX_ID, MAX_VERSION
from registry.errors import ArgumentInvalid, AttestationMissing, Forbidden, HeadConflict
from registry.http.archive import tar_gz
from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import Metrics
from registry.http.multipart import read_upload
from registry.http.preconditions import (
    entity_tag,
    expected_head,
    lost_precondition,
    parse_condition,
)
from registry.http.problems import HttpProblem
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Slug,
    Workspace,
    attachment,
    body_chunks,
    invalid_body,
    location,
    make_scope,
    media_type,
    path_for,
    precondition_headers,
    problems,
    read_body,
    refuse_credentials,
)
from registry.http.schemas import (
    SLUG_PATTERN,
    ManifestBody,
    PackageMeta,
    PublishResult,
    SkillList,
    SkillVersion,
    WriteOptions,
)

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["skills"])

Authorized = Annotated[Caller, Depends(authorize)]
Version = Annotated[
    int | None, Query(ge=1, le=MAX_VERSION, description="a pinned version (default: the head)")
]


SkillId = Annotated[
    int | None,
    Query(ge=1, le=MAX_ID, description="a deleted skill's id (history lists it): its version"),
]
Archived = Annotated[
    bool, Query(description="the version of the slug's only deleted skill (several: 409)")
]


def _pinned(
    version: int | None, skill_id: int | None, *, archived: bool
) -> int | ArchivedVersion | None:
    """The version a read names: the live skill's, or a deleted skill's (docs/history.md)."""
    if skill_id is None and not archived:
        return version
    if version is None:
        raise ArgumentInvalid("version", RULE_MALFORMED, "a deleted skill's version is named")
    return ArchivedVersion(version, skill_id)


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def _tag(info: PackageInfo) -> str:
    return entity_tag(info.skill_id, info.version, info.manifest_hash)


def _not_modified(request: Request, tag: str) -> bool:
    header = request.headers.get("if-none-match")
    return header is not None and parse_condition(header).matches(tag)


@router.get(
    "/skills",
    name="list_skills",
    summary="List the skills of a scope",
    response_model=SkillList,
    responses=problems(400, 403, 404),
)
async def list_skills(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    agent: Agent = DEFAULT,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    after: Annotated[
        str | None,
        Query(pattern=SLUG_PATTERN, description="`next_after` of the previous page"),
    ] = None,
) -> SkillList:
    """The live skills of the scope, by slug, a page at a time."""
    del caller
    page = await registry_of(request).list_skills(
        make_scope(workspace, agent), limit=limit, after=after
    )
    return SkillList.of(page)


async def _version_response(request: Request, info: PackageInfo) -> Response:
    tag = _tag(info)
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if _not_modified(request, tag):
        return Response(status_code=304, headers=headers)
    body = SkillVersion.of(info, tag).model_dump(mode="json")
    return JSONResponse(body, headers=headers)


@router.get(
    "/skills/{slug}",
    name="get_skill",
    summary="A skill's head: manifest and metadata, with its ETag",
    response_model=SkillVersion,
    responses={304: {"description": "If-None-Match matched"}, **problems(400, 403, 404)},
)
async def get_skill(
    request: Request, workspace: Workspace, slug: Slug, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """The head version's manifest. Its `ETag` is what `If-Match` takes on a write."""
    del caller
    info = await registry_of(request).package_info(make_scope(workspace, agent), slug)
    return await _version_response(request, info)


@router.head(
    "/skills/{slug}",
    name="head_skill",
    summary="A skill's head ETag, without the manifest",
    responses={304: {"description": "If-None-Match matched"}, **problems(400, 403, 404)},
)
async def head_skill(
    request: Request, workspace: Workspace, slug: Slug, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """The `ETag` a write's `If-Match` takes, as cheaply as asking for it."""
    del caller
    info = await registry_of(request).package_info(make_scope(workspace, agent), slug)
    return await _version_response(request, info)


@router.get(
    "/skills/{slug}/versions/{version}",
    name="get_version",
    summary="A pinned version: manifest and metadata",
    response_model=SkillVersion,
    responses={304: {"description": "If-None-Match matched"}, **problems(400, 403, 404, 409, 422)},
)
async def get_version(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    version: Annotated[int, Path(ge=1, le=MAX_VERSION)],
    caller: Authorized,
    agent: Agent = DEFAULT,
    skill_id: SkillId = None,
    archived: Archived = False,
) -> Response:
    """A version's manifest; its ETag equals the skill's while it is the head.

    `skill_id` (or `archived=true`): a version of a deleted skill of the slug (`archived`
    true in the body); its last version's ETag is what bringing it back takes (If-Match).
    """
    del caller
    pinned = _pinned(version, skill_id, archived=archived)
    info = await registry_of(request).package_info(make_scope(workspace, agent), slug, pinned)
    return await _version_response(request, info)


@router.get(
    "/skills/{slug}/archive",
    name="get_archive",
    summary="The package as a .tar.gz",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}},
        **problems(400, 403, 404, 409, 422),
    },
)
async def get_archive(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    agent: Agent = DEFAULT,
    version: Version = None,
    skill_id: SkillId = None,
    archived: Archived = False,
) -> Response:
    """Every file of the head (or `version`) under `<slug>/`, verified, reproducible.

    `Skillreg-Attestation` names the version's signed attestation by its SHA-256, and a
    `Link` (rel `attestation`) says where to fetch it (docs/trust.md). With `skill_id`
    (or `archived=true`) and `version`: a version of a deleted skill, without those headers.
    """
    del caller
    registry, scope = registry_of(request), make_scope(workspace, agent)
    package = await registry.read_package(
        scope, slug, _pinned(version, skill_id, archived=archived)
    )
    tag = _tag(package)
    headers = {
        "ETag": f'"{tag.strip(chr(34))}.tgz"',
        "Content-Disposition": attachment(f"{slug}-{package.version}.tar.gz"),
    }
    # The attestation route addresses the live skill's versions: an archived one's
    # archive names none.
    if not package.archived:
        await _name_attestation(request, registry, scope, package, headers)
    chunks = tar_gz(slug, package.files, int(package.created_at.timestamp()))
    return StreamingResponse(chunks, media_type="application/gzip", headers=headers)


async def _name_attestation(
    request: Request,
    registry: Registry,
    scope: Scope,
    package: PackageInfo,
    headers: dict[str, str],
) -> None:
    """Add the headers that name the version's attestation, if it has one."""
    try:
        sealed = await registry.trust.attestation(scope, package.slug, package.version)
    except AttestationMissing:
        return  # published before versions were signed: no header names what does not exist
    where = path_for(
        request,
        "get_attestation",
        workspace=scope.workspace,
        slug=package.slug,
        version=package.version,
    )
    headers["Skillreg-Attestation"] = sealed.digest
    headers["Link"] = f'<{where}>; rel="attestation"'


_PUT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ManifestBody"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "description": (
                        "One part per file, named by its path in the package; an optional "
                        "part `meta` holds a JSON PackageMeta."
                    ),
                    "properties": {"meta": {"$ref": "#/components/schemas/PackageMeta"}},
                    "additionalProperties": {"type": "string", "format": "binary"},
                }
            },
        },
    },
    "parameters": precondition_headers(
        update="update: the ETag of the head this write replaces",
        create="create: the skill must not exist",
    ),
}


@router.put(
    "/skills/{slug}",
    name="put_skill",
    summary="Publish a new head (a manifest of uploaded blobs, or a multipart package)",
    status_code=200,
    response_model=PublishResult,
    responses={
        201: {"model": PublishResult, "description": "The skill was created"},
        202: {
            "model": PublishResult,
            "description": "A learning write recorded as a proposal or a pending write",
        },
        **problems(400, 403, 404, 409, 412, 413, 415, 422, 428, 429),
    },
    openapi_extra=_PUT_BODY,
)
async def put_skill(
    request: Request, workspace: Workspace, slug: Slug, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """Publish a package as the new head in one atomic change, if the precondition holds."""
    kind = media_type(request)
    if kind not in ("application/json", "multipart/form-data"):
        raise HttpProblem(
            "unsupported_media_type",
            "send application/json (a manifest) or multipart/form-data (the files)",
        )
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    expected = await expected_head(
        request, registry, scope, slug, allow_create=True, already_applied_ok=True
    )
    publish = _publish_manifest if kind == "application/json" else _publish_multipart
    metrics = _metrics(request)
    try:
        with metrics.write("publish"):
            pub, received = await publish(
                request, registry, scope=scope, slug=slug, expected=expected, caller=caller
            )
    except HeadConflict as conflict:
        raise await lost_precondition(
            request, registry, scope, slug, conflict=conflict, expected=expected
        ) from None
    metrics.upload_bytes.labels("package").inc(received)
    return await published(request, registry, scope, slug, pub)


async def _publish_manifest(
    request: Request,
    registry: Registry,
    *,
    scope: Scope,
    slug: str,
    expected: ExpectedHead,
    caller: Caller,
) -> tuple[Publication, int]:
    raw = await read_body(request)
    try:
        body = ManifestBody.model_validate_json(raw)
    except ValidationError as exc:
        raise invalid_body(exc) from None
    pub = await registry.uploads.publish(
        scope,
        slug,
        body.manifest_files(),
        expected_head=expected,
        **_options(request, body, caller),
    )
    return pub, len(raw)


async def _publish_multipart(
    request: Request,
    registry: Registry,
    *,
    scope: Scope,
    slug: str,
    expected: ExpectedHead,
    caller: Caller,
) -> tuple[Publication, int]:
    upload = await read_upload(
        body_chunks(request), request.headers["content-type"], registry.settings
    )
    meta: PackageMeta = upload.meta
    pub = await registry.write_package(
        scope, slug, upload.files, expected_head=expected, **_options(request, meta, caller)
    )
    return pub, sum(len(f.data) for f in upload.files.values())


def _options(request: Request, body: WriteOptions, caller: Caller) -> dict[str, Any]:
    if body.approve and not caller.token.role.allows(Role.OWNER):
        # An exception to the content check is the owner's to grant.
        raise Forbidden(Role.OWNER.value, caller.token.role.value)
    refuse_credentials(request, actor=body.actor)
    return {
        "origin": Origin(body.origin),
        "actor": body.actor or caller.actor,
        "sources": body.sources,
        "message": body.message,
        "approve": [FindingRef(a.path, a.ordinal) for a in body.approve],
        "keep_auto_improve": body.keep_auto_improve,
    }


async def published(
    request: Request, registry: Registry, scope: Scope, slug: str, pub: Publication
) -> Response:
    """The response to a write that made (or found) version `pub.version`.

    A write that made no version (a proposal or a pending write) is 202 Accepted: the
    owner decides, or the write waits for room.
    """
    if pub.proposal is not None or pub.pending is not None:
        head = None if pub.version == 0 else await registry.package_info(scope, slug, pub.version)
        result = PublishResult.of(scope, slug, pub, None if head is None else _tag(head))
        headers = {} if head is None else {"ETag": _tag(head)}
        return JSONResponse(result.model_dump(mode="json"), status_code=202, headers=headers)
    # The tag of exactly the version this write made (or found): a pinned read, so a
    # later writer's head is never handed out as this write's.
    info = await registry.package_info(scope, slug, pub.version)
    tag = _tag(info)
    result = PublishResult.of(scope, slug, pub, tag)
    status = 201 if pub.created and pub.retired is None else 200
    where = location(request, "get_skill", workspace=scope.workspace, slug=slug)
    if scope.agent != DEFAULT:
        where += f"?agent={scope.agent}"
    headers = {"ETag": tag, "Location": where}
    return JSONResponse(result.model_dump(mode="json"), status_code=status, headers=headers)
