"""Revocations: yank and unyank a version, and which targets still hold revoked versions.

A yank is not conditional on the skill's `ETag`: the yank makes its own compare-and-swap
on the head it replaces (docs/revocation.md), and the version it names is immutable. A
catalog listing's version is yanked through the catalog workspace's own path (its owner
token); its installed copies are moved off it by update jobs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Request
from pydantic import Field

from registry.api.types import Revocation, RevokedVersion, YankReport
from registry.domain.arguments import TEXT_PATTERN
from registry.domain.numbers import MAX_VERSION
from registry.domain.revocation import MAX_REASON
from registry.http.auth import Caller, authorize, registry_of
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Slug,
    Workspace,
    json_body,
    json_request_body,
    make_scope,
    problems,
    refuse_credentials,
)
from registry.http.schemas import ActorOptions

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["revocations"])

Authorized = Annotated[Caller, Depends(authorize)]
Version = Annotated[int, Path(ge=1, le=MAX_VERSION, description="the version's number")]


class YankBody(ActorOptions):
    """`POST .../versions/{version}/yank`: why the version is revoked."""

    kind: Literal["security", "broken", "policy"]
    reason: str = Field(min_length=1, max_length=MAX_REASON, pattern=TEXT_PATTERN)


@router.post(
    "/skills/{slug}/versions/{version}/yank",
    name="yank_version",
    summary="Revoke a version: never served for use again; a revoked head moves back",
    response_model=YankReport,
    responses=problems(400, 403, 404, 409, 422, 429),
    openapi_extra=json_request_body(YankBody),
)
async def yank_version(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    version: Version,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> YankReport:
    """Signed, recorded in history, one `version.revoked` event; idempotent (`already`)."""
    body = await json_body(request, YankBody)
    refuse_credentials(request, actor=body.actor, reason=body.reason)
    return await registry_of(request).yank(
        make_scope(workspace, agent),
        slug,
        version,
        kind=body.kind,
        reason=body.reason,
        actor=body.actor or caller.actor,
    )


@router.post(
    "/skills/{slug}/versions/{version}/unyank",
    name="unyank_version",
    summary="Take a revocation back (the head does not move back by itself)",
    response_model=Revocation,
    responses=problems(400, 403, 404, 422, 429),
    openapi_extra=json_request_body(ActorOptions),
)
async def unyank_version(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    version: Version,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Revocation:
    """Signed, one `version.unrevoked` event; 404 if the version has no revocation in force."""
    body = await json_body(request, ActorOptions)
    refuse_credentials(request, actor=body.actor)
    return await registry_of(request).unyank(
        make_scope(workspace, agent), slug, version, actor=body.actor or caller.actor
    )


@router.get(
    "/revocations",
    name="list_revocations",
    summary="Revoked versions, and the targets that still hold each",
    response_model=list[RevokedVersion],
    responses=problems(403),
)
async def list_revocations(
    request: Request, workspace: Workspace, caller: Authorized
) -> tuple[RevokedVersion, ...]:
    """For each revocation in force: every target, holding / converged / clear, last seen.

    A target silent past a signed state's validity is `stale`.
    """
    del caller
    return await registry_of(request).revoked_status(workspace)
