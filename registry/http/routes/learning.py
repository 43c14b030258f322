"""The owner's side of automated learning (docs/history.md, "Learning writes").

One list of open decisions across the workspace's agents and batch decisions; pending
writes (learning writes waiting for a saved slot); suppressions; the workspace's learning
status; and loads (which version a runtime loaded for a conversation). Each batch decision
is its own compare-and-swap: one that fails is reported in its place, the others apply.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import Field, TypeAdapter

from registry.api.types import (
    DecisionOutcome,
    DecisionRequest,
    LearningStatus,
    LoadRecord,
    ManifestFile,
    PendingWriteInfo,
    ProposalPage,
    SuppressionInfo,
)
from registry.domain.arguments import LINE_PATTERN
from registry.http.auth import Caller, authorize, registry_of
from registry.http.problems import HttpProblem
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
from registry.http.schemas import NAME_PATTERN, ActorOptions, FileEntry, _Model

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["learning"])

Authorized = Annotated[Caller, Depends(authorize)]
Id = Annotated[int, Path(ge=1, le=2**63 - 1)]
Kind = Literal["learning", "suppressed", "update", "draft"]
_OUTCOMES: TypeAdapter[list[DecisionOutcome]] = TypeAdapter(list[DecisionOutcome])
Conversation = Annotated[str, Field(min_length=1, max_length=200, pattern=LINE_PATTERN)]


@router.get(
    "/decisions",
    name="list_decisions",
    summary="Open decisions of every agent of the workspace, newest first",
    response_model=ProposalPage,
    responses=problems(400, 403, 404, 422),
)
async def list_decisions(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    *,
    agent: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=128)] = None,
    origin: Annotated[str | None, Query(pattern=r"^[a-z_]{1,32}$")] = None,
    kind: Kind | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
) -> ProposalPage:
    """Pending proposals, each with its agent, kind and changes against base and head."""
    del caller
    return await registry_of(request).learning.decisions(
        workspace, agent=agent, origin=origin, kind=kind, limit=limit, before=before
    )


class DecisionItem(_Model):
    """One decision of a batch."""

    proposal: int = Field(strict=True, ge=1, le=2**63 - 1)
    decision: Literal["apply", "alternative", "keep_current"]
    files: list[FileEntry] | None = Field(
        default=None,
        max_length=10_000,
        description="the edited package of an `alternative` (blobs uploaded first)",
    )
    keep_auto_improve: bool = False


class DecisionBatch(ActorOptions):
    """`POST .../decisions`: several decisions, taken in order, each on its own."""

    decisions: list[DecisionItem] = Field(min_length=1, max_length=100)


class DecisionOutcomes(_Model):
    """What each decision of a batch did; `ok` false: its `error` (code, message, details)."""

    outcomes: list[DecisionOutcome]


@router.post(
    "/decisions",
    name="decide_many",
    summary="Apply, apply an alternative or keep the current head, for several proposals",
    response_model=DecisionOutcomes,
    responses=problems(400, 403, 404, 413, 422, 429),
    openapi_extra=json_request_body(DecisionBatch),
)
async def decide_many(
    request: Request, workspace: Workspace, caller: Authorized
) -> DecisionOutcomes:
    """Each decision is a compare-and-swap on its proposal's skill; a stale one fails alone."""
    body = await json_body(request, DecisionBatch)
    refuse_credentials(request, actor=body.actor)
    registry = registry_of(request)
    if any((i.files is not None) != (i.decision == "alternative") for i in body.decisions):
        raise HttpProblem(
            "request_invalid", "`files` come with the `alternative` decision, and only with it"
        )
    items = []
    for item in body.decisions:
        files = None
        if item.files is not None:
            declared = [ManifestFile(f.path, f.digest, f.size, f.executable) for f in item.files]
            files = await registry.uploads.files(workspace, declared)
        items.append(DecisionRequest(item.proposal, item.decision, files, item.keep_auto_improve))
    outcomes = await registry.learning.decide_many(
        workspace, items, actor=body.actor or caller.actor
    )
    return DecisionOutcomes(outcomes=_OUTCOMES.validate_python(outcomes))


class PendingWrites(_Model):
    items: list[PendingWriteInfo]


@router.get(
    "/pending-writes",
    name="list_pending_writes",
    summary="Learning writes waiting for a saved slot, oldest first",
    response_model=PendingWrites,
    responses=problems(400, 403, 404, 422),
)
async def list_pending_writes(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    *,
    agent: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=128)] = None,
    waiting_only: bool = True,
) -> PendingWrites:
    """Waiting ones unless `waiting_only=false` (then applied, dropped and failed too)."""
    del caller
    items = await registry_of(request).learning.pending_writes(
        workspace, agent=agent, waiting_only=waiting_only
    )
    return PendingWrites(items=items)


@router.post(
    "/pending-writes/apply",
    name="apply_pending_writes",
    summary="Apply waiting writes in order while there is room",
    response_model=PendingWrites,
    responses=problems(400, 403, 404, 429),
)
async def apply_pending_writes(
    request: Request, workspace: Workspace, caller: Authorized
) -> PendingWrites:
    """Returns the writes that changed (applied, proposed, failed)."""
    del caller
    return PendingWrites(items=await registry_of(request).learning.apply_pending_writes(workspace))


@router.delete(
    "/pending-writes/{pending}",
    name="drop_pending_write",
    summary="Drop a waiting write: it is never applied",
    response_model=PendingWriteInfo,
    responses=problems(400, 403, 404, 409, 429),
)
async def drop_pending_write(
    request: Request, workspace: Workspace, pending: Id, caller: Authorized
) -> PendingWriteInfo:
    """409 `state_conflict` if it is no longer waiting."""
    return await registry_of(request).learning.drop_pending_write(
        workspace, pending, actor=caller.actor
    )


class Suppressions(_Model):
    items: list[SuppressionInfo]


@router.get(
    "/suppressions",
    name="list_suppressions",
    summary="Behaviours the owner undid (restores) or removed (deletes)",
    response_model=Suppressions,
    responses=problems(400, 403, 404, 422),
)
async def list_suppressions(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    *,
    agent: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=128)] = None,
    active_only: bool = True,
) -> Suppressions:
    """Newest first; active ones unless `active_only=false`."""
    del caller
    items = await registry_of(request).learning.suppressions(
        workspace, agent=agent, active_only=active_only
    )
    return Suppressions(items=items)


@router.delete(
    "/suppressions/{suppression}",
    name="lift_suppression",
    summary="Lift a suppression: learning may bring that behaviour back directly",
    response_model=SuppressionInfo,
    responses=problems(400, 403, 404, 409, 429),
)
async def lift_suppression(
    request: Request, workspace: Workspace, suppression: Id, caller: Authorized
) -> SuppressionInfo:
    """409 `state_conflict` if it was lifted already."""
    return await registry_of(request).learning.lift_suppression(
        workspace, suppression, actor=caller.actor
    )


@router.get(
    "/learning",
    name="learning_status",
    summary="The workspace's learning: pending writes, decisions, suppressions, pauses",
    response_model=LearningStatus,
    responses=problems(400, 403, 404, 422),
)
async def learning_status(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    agent: Annotated[str | None, Query(pattern=NAME_PATTERN, max_length=128)] = None,
) -> LearningStatus:
    """Open decisions by kind, the last learned change, skills with learning paused."""
    del caller
    return await registry_of(request).learning.status(workspace, agent)


class LoadBody(_Model):
    """`POST .../skills/{slug}/loads`: the exact version a runtime loaded."""

    version: int = Field(strict=True, ge=1, le=2**31 - 1)
    conversation: Conversation


@router.post(
    "/skills/{slug}/loads",
    name="record_load",
    summary="Record the exact version a runtime loaded for a conversation (a load)",
    response_model=LoadRecord,
    responses=problems(400, 403, 404, 422, 429),
    openapi_extra=json_request_body(LoadBody),
)
async def record_load(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> LoadRecord:
    """Idempotent; never a success signal. The version stays readable (retention keeps it)."""
    del caller
    body = await json_body(request, LoadBody)
    return await registry_of(request).record_load(
        make_scope(workspace, agent), slug, body.version, body.conversation
    )


class Loads(_Model):
    items: list[LoadRecord]


@router.get(
    "/loads",
    name="list_loads",
    summary="The versions loaded for a conversation, in order",
    response_model=Loads,
    responses=problems(400, 403, 404, 422),
)
async def list_loads(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    conversation: Annotated[str, Query(min_length=1, max_length=200, pattern=LINE_PATTERN)],
) -> Loads:
    """Read each with `GET .../skills/{slug}/versions/{version}`."""
    del caller
    return Loads(items=await registry_of(request).loads(workspace, conversation))
