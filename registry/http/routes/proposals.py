"""Proposals: candidate packages waiting for the owner's decision, and the decision.

A decision is conditional on the skill's `ETag` (`If-Match`), like every change; on a
deleted skill, which has none, applying is a create (`If-None-Match: *`) and keeping the
proposal out needs no precondition. Applying
a proposal is also a compare-and-swap on the version it was made on: if the head moved
away from it, the proposal is stale (409 `proposal_stale`), whatever the request's tag.
An `alternative` names its files like a manifest of uploaded blobs (two-phase upload).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field, TypeAdapter

from registry.api.types import DecisionResult, ManifestFile, ProposalDetail, ProposalPage
from registry.domain.numbers import MAX_ID
from registry.errors import HeadConflict, ProposalStale
from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import Metrics
from registry.http.preconditions import (
    current_head,
    deleted_skill_precondition,
    expected_head,
    precondition_failed,
)
from registry.http.problems import HttpProblem
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Workspace,
    json_body,
    json_request_body,
    make_scope,
    problems,
    refuse_credentials,
)
from registry.http.schemas import ActorOptions, FileEntry

router = APIRouter(prefix="/v1/workspaces/{workspace}/proposals", tags=["proposals"])

Authorized = Annotated[Caller, Depends(authorize)]
ProposalId = Annotated[int, Path(ge=1, le=MAX_ID)]
_DECISION: TypeAdapter[DecisionResult] = TypeAdapter(DecisionResult)


@router.get(
    "",
    name="list_proposals",
    summary="The proposals of a scope, newest first, with their changes",
    response_model=ProposalPage,
    responses=problems(400, 403, 404),
)
async def list_proposals(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    *,
    agent: Agent = DEFAULT,
    pending_only: bool = True,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
) -> ProposalPage:
    """Pending (open or stale) proposals unless `pending_only=false`.

    Each with its changes against its base and the current head, as lists of paths.
    """
    del caller
    return await registry_of(request).list_proposals(
        make_scope(workspace, agent), pending_only=pending_only, limit=limit, before=before
    )


@router.get(
    "/{proposal}",
    name="get_proposal",
    summary="One proposal with its file diffs against its base and the head",
    response_model=ProposalDetail,
    responses=problems(400, 403, 404),
)
async def get_proposal(
    request: Request,
    *,
    workspace: Workspace,
    proposal: ProposalId,
    caller: Authorized,
    agent: Agent = DEFAULT,
    full: bool = False,
) -> ProposalDetail:
    """Its files are blobs of the workspace: `GET .../blobs/{digest}` reads them."""
    del caller
    return await registry_of(request).proposal(make_scope(workspace, agent), proposal, full=full)


class DecisionBody(ActorOptions):
    """`POST .../proposals/{id}/decision`."""

    decision: Literal["apply", "alternative", "keep_current"]
    files: list[FileEntry] | None = Field(
        default=None,
        max_length=10_000,
        description="the edited package of an `alternative` (blobs uploaded first)",
    )
    keep_auto_improve: bool = False


@router.post(
    "/{proposal}/decision",
    name="decide_proposal",
    summary="Apply, apply an edited alternative, or keep the current head (If-Match)",
    response_model=DecisionResult,
    responses=problems(400, 403, 404, 409, 412, 413, 422, 428, 429),
    openapi_extra=json_request_body(DecisionBody),
)
async def decide_proposal(
    request: Request,
    *,
    workspace: Workspace,
    proposal: ProposalId,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """Record the owner's decision; `If-Match` names the skill's head.

    A proposal whose skill was deleted has no head to name: `apply` creates the skill
    and takes `If-None-Match: *`; `keep_current` needs no precondition.
    """
    body = await json_body(request, DecisionBody)
    refuse_credentials(request, actor=body.actor)
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    if (body.files is not None) != (body.decision == "alternative"):
        raise HttpProblem(
            "request_invalid", "`files` come with the `alternative` decision, and only with it"
        )
    summary = (await registry.proposal(scope, proposal)).summary
    slug = summary.slug
    if summary.against_head is None:
        # Its skill was deleted: there is no tag to name (docs/http.md, preconditions).
        writes = body.decision != "keep_current"
        await deleted_skill_precondition(request, registry, scope, slug, writes=writes)
    else:
        await expected_head(request, registry, scope, slug, allow_create=False)
    files = None
    if body.files is not None:
        declared = [ManifestFile(f.path, f.digest, f.size, f.executable) for f in body.files]
        files = await registry.uploads.files(workspace, declared)
    metrics: Metrics = request.app.state.metrics
    try:
        with metrics.write(f"decide_{body.decision}"):
            result = await registry.decide(
                scope,
                proposal,
                body.decision,
                actor=body.actor or caller.actor,
                files=files,
                keep_auto_improve=body.keep_auto_improve,
            )
    except ProposalStale:
        raise
    except HeadConflict as conflict:
        raise precondition_failed(conflict, await current_head(registry, scope, slug)) from None
    head = await current_head(registry, scope, slug)
    headers = {} if head is None else {"ETag": head.etag}
    return JSONResponse(_DECISION.dump_python(result, mode="json"), headers=headers)
