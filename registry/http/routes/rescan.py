"""The rescan when the content rules change, and the owner's content reviews.

- `POST /v1/rescan` (admin, service-wide like `/v1/status`): queue a rescan of every
  workspace; `202` with the job (`Location`: `GET /v1/rescan/{job}`, which shows its
  `progress`). A rescan of one workspace is `skillreg rescan -w W`.
- `GET /v1/workspaces/{workspace}/reviews` (read): the open content reviews.
- `POST /v1/workspaces/{workspace}/reviews/{review}/approve` (owner): accept a review's
  findings for its package; the use the rescan stopped resumes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field

from registry.api.types import EVERY_WORKSPACE, ApproveResult, ReviewPage, ReviewRow
from registry.domain.numbers import MAX_ID
from registry.errors import JobNotFound
from registry.http.auth import Caller, authorize, registry_of
from registry.http.routes.common import (
    Workspace,
    json_body,
    json_request_body,
    location,
    problems,
    refuse_credentials,
)
from registry.http.schemas import ActorOptions, JobBody, JobQueued, _Model

router = APIRouter(tags=["rescan"])

Authorized = Annotated[Caller, Depends(authorize)]
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="the rescan job's id")]
ReviewId = Annotated[int, Path(ge=1, le=MAX_ID, description="the review's id")]


class RescanRequest(ActorOptions):
    """`POST /v1/rescan`: who starts it, if not the token itself."""


class ReviewApproval(ActorOptions):
    """`POST .../reviews/{review}/approve`: who approves, if not the token itself."""


class ReviewBody(_Model):
    """A content review: blocking findings a rescan found in a skill's head (no values)."""

    id: int
    agent: str
    slug: str
    version: int
    manifest_hash: str
    package_digest: str
    ruleset: str
    findings: list[dict[str, Any]] = Field(description="path, pattern_class, ordinal, line")
    status: str = Field(description="open, approved, superseded or withdrawn")
    paused_use: bool = Field(description="the rescan stopped the skill's use")
    opened_at: datetime
    closed_at: datetime | None
    closed_by: str | None

    @classmethod
    def of(cls, row: ReviewRow) -> ReviewBody:
        return cls(
            id=row.id,
            agent=row.agent,
            slug=row.slug,
            version=row.version,
            manifest_hash=row.manifest_hash,
            package_digest=row.package_digest,
            ruleset=row.ruleset,
            findings=row.findings,
            status=row.status,
            paused_use=row.paused_use,
            opened_at=row.opened_at,
            closed_at=row.closed_at,
            closed_by=row.closed_by,
        )


class ReviewList(_Model):
    """A page of open reviews, newest first; pass `next_before` as `before` (null: the end)."""

    items: list[ReviewBody]
    next_before: int | None

    @classmethod
    def of(cls, page: ReviewPage) -> ReviewList:
        return cls(items=[ReviewBody.of(r) for r in page.items], next_before=page.next_before)


class ReviewApproved(_Model):
    """The review as approved, and whether the skill's use resumed."""

    review: ReviewBody
    resumed: bool

    @classmethod
    def of(cls, result: ApproveResult) -> ReviewApproved:
        return cls(review=ReviewBody.of(result.review), resumed=result.resumed)


@router.post(
    "/v1/rescan",
    name="start_rescan",
    summary="Queue a rescan of every workspace with the current content rules (admin)",
    status_code=202,
    response_model=JobQueued,
    responses=problems(400, 403, 404, 422),
    openapi_extra=json_request_body(RescanRequest),
)
async def start_rescan(request: Request, caller: Authorized) -> Response:
    """Every live head and installed listing version the current rules have not checked.

    A blocking finding stops the skill's use and opens a review (docs/write-path.md).
    """
    body = await json_body(request, RescanRequest)
    refuse_credentials(request, actor=body.actor)
    enqueued = await registry_of(request).rescan.start(actor=body.actor or caller.actor)
    payload = JobQueued(created=enqueued.created, job=JobBody.of(enqueued.job))
    return JSONResponse(
        payload.model_dump(mode="json"),
        status_code=202,
        headers={"Location": location(request, "get_rescan", job=enqueued.job.id)},
    )


@router.get(
    "/v1/rescan/{job}",
    name="get_rescan",
    summary="A rescan job: its progress, then its outcome (admin)",
    response_model=JobBody,
    responses=problems(400, 403, 404, 422),
)
async def get_rescan(request: Request, job: JobId, caller: Authorized) -> JobBody:
    """`progress` counts the packages checked (`done` of `total`) while it runs."""
    del caller
    row = await registry_of(request).marketplace.job(job)
    # Only a rescan of every workspace: one workspace's is that workspace's job.
    if row.kind != "rescan" or row.workspace != EVERY_WORKSPACE:
        raise JobNotFound(job)
    return JobBody.of(row)


@router.get(
    "/v1/workspaces/{workspace}/reviews",
    name="list_reviews",
    summary="The open content reviews of the workspace, newest first",
    response_model=ReviewList,
    responses=problems(400, 403, 404, 422),
)
async def list_reviews(
    request: Request,
    *,
    workspace: Workspace,
    caller: Authorized,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID, description="`next_before`")] = None,
) -> ReviewList:
    """Reviews whose package is still their skill's head (a moved head closed the rest)."""
    del caller
    page = await registry_of(request).rescan.reviews(workspace, limit=limit, before=before)
    return ReviewList.of(page)


@router.post(
    "/v1/workspaces/{workspace}/reviews/{review}/approve",
    name="approve_review",
    summary="Accept a review's findings for its package; the stopped use resumes",
    response_model=ReviewApproved,
    responses=problems(400, 403, 404, 409, 422),
    openapi_extra=json_request_body(ReviewApproval),
)
async def approve_review(
    request: Request, workspace: Workspace, review: ReviewId, caller: Authorized
) -> ReviewApproved:
    """409 `state_conflict` if the review is closed or its package is no longer the head."""
    body = await json_body(request, ReviewApproval)
    refuse_credentials(request, actor=body.actor)
    result = await registry_of(request).rescan.approve(
        workspace, review, actor=body.actor or caller.actor
    )
    return ReviewApproved.of(result)
