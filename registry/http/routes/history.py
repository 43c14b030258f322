"""A skill's history, diffs between versions (or proposals), restore, state and delete.

Every change here is conditional on the skill's `ETag` (`If-Match`), like a publish:
restore is a compare-and-swap on the head inside the write path, state changes and
delete one inside the controls' locked transaction.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field, TypeAdapter

from registry.api import Registry
from registry.api.types import DiffTarget, HistoryPage, PackageDiff, ProposalRef, SkillStatus
from registry.domain.arguments import TEXT_PATTERN
from registry.domain.model import ArchivedVersion, Scope
from registry.domain.numbers import MAX_ID, MAX_VERSION
from registry.domain.states import Action
from registry.errors import HeadConflict
from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import Metrics
from registry.http.preconditions import (
    current_head,
    expected_head,
    lost_precondition,
    precondition_failed,
    revival_precondition,
)
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
from registry.http.routes.skills import published
from registry.http.schemas import ActorOptions, PublishResult

router = APIRouter(prefix="/v1/workspaces/{workspace}/skills/{slug}", tags=["history"])

Authorized = Annotated[Caller, Depends(authorize)]
SkillId = Annotated[
    int | None, Query(ge=1, le=MAX_ID, description="a skill's id, as history lists it")
]
# Bounded so a number always fits its column (versions: 32 bits; proposal ids: 64 bits).
# `~ID@N`: version N of the deleted skill ID (docs/history.md, "Deleted skills").
_TARGET = r"^([1-9][0-9]{0,8}|p[1-9][0-9]{0,17}|~[1-9][0-9]{0,17}@[1-9][0-9]{0,8})$"
_TARGET_HELP = "`N`, `p<proposal>` or `~<skill_id>@N` (a deleted skill's version)"


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


@router.get(
    "/history",
    name="get_history",
    summary="The versions of a skill, newest first, paged",
    response_model=HistoryPage,
    responses=problems(400, 403, 404, 422),
)
async def get_history(
    request: Request,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    *,
    agent: Agent = DEFAULT,
    limit: Annotated[int, Query(ge=1, le=500)] = 20,
    before: Annotated[
        str | None, Query(pattern=r"^[0-9]{1,18}\.[0-9]{1,9}$", description="`next_before`")
    ] = None,
    include_archived: bool = False,
    skill_id: SkillId = None,
) -> HistoryPage:
    """Number, origin, actor, time, message, sources, parent, `restored_from`, sizes, hash.

    `include_archived`: the versions of earlier, deleted skills of the same slug follow,
    each with its `skill_id`. `skill_id`: only that skill's versions (a deleted one's, by
    the id history lists).
    """
    del caller
    return await registry_of(request).history(
        make_scope(workspace, agent),
        slug,
        limit=limit,
        before=before,
        include_archived=include_archived,
        skill_id=skill_id,
    )


def _target(value: str) -> DiffTarget:
    if value.startswith("~"):
        skill_id, _, number = value[1:].partition("@")
        return ArchivedVersion(int(number), int(skill_id))
    return ProposalRef(int(value[1:])) if value.startswith("p") else int(value)


@router.get(
    "/diff",
    name="get_diff",
    summary="What changed between two versions (or a version and a proposal)",
    response_model=PackageDiff,
    responses=problems(400, 403, 404, 422),
)
async def get_diff(
    request: Request,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    *,
    a: Annotated[str, Query(alias="from", pattern=_TARGET, description=_TARGET_HELP)],
    b: Annotated[str, Query(alias="to", pattern=_TARGET, description=_TARGET_HELP)],
    agent: Agent = DEFAULT,
    full: bool = False,
) -> PackageDiff:
    """Added, changed and removed files with sizes and digests.

    Text files get a bounded unified-diff preview (`full=true`: the whole diff); binary
    files are marked binary.
    """
    del caller
    return await registry_of(request).diff(
        make_scope(workspace, agent), slug, _target(a), _target(b), full=full
    )


class RestoreBody(ActorOptions):
    """`POST .../restore`: the version to make the head again.

    With `skill_id` (a deleted skill of the slug), its `version` brings that skill back.
    """

    version: int = Field(strict=True, ge=1, le=MAX_VERSION)
    message: str = Field(default="", max_length=10_000, pattern=TEXT_PATTERN)
    skill_id: int | None = Field(default=None, strict=True, ge=1, le=MAX_ID)


@router.post(
    "/restore",
    name="restore_skill",
    summary="Make a version the head again, as a new version (If-Match)",
    response_model=PublishResult,
    responses=problems(400, 403, 404, 409, 412, 422, 428, 429),
    openapi_extra=json_request_body(RestoreBody),
)
async def restore_skill(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """A new version with origin `restore`; uploads nothing; automatic improvements off.

    With `skill_id`, the deleted skill comes back (same id, its history continued):
    `If-Match` its last version's ETag, or `If-None-Match: *`; 409 `slug_taken` if another
    live skill has the slug now.
    """
    body = await json_body(request, RestoreBody)
    refuse_credentials(request, actor=body.actor)
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    if body.skill_id is not None:
        return await _revive(request, registry, scope, slug, body, caller)
    expected = await expected_head(
        request, registry, scope, slug, allow_create=False, already_applied_ok=True
    )
    try:
        with _metrics(request).write("restore"):
            pub = await registry.restore(
                scope,
                slug,
                body.version,
                expected_head=expected,
                actor=body.actor or caller.actor,
                message=body.message,
            )
    except HeadConflict as conflict:
        raise await lost_precondition(
            request, registry, scope, slug, conflict=conflict, expected=expected
        ) from None
    return await published(request, registry, scope, slug, pub)


async def _revive(  # noqa: PLR0917 - the route's state, passed on as it is
    request: Request,
    registry: Registry,
    scope: Scope,
    slug: str,
    body: RestoreBody,
    caller: Caller,
) -> Response:
    assert body.skill_id is not None
    expected = await revival_precondition(request, registry, scope, slug, body.skill_id)
    try:
        with _metrics(request).write("restore"):
            pub = await registry.restore(
                scope,
                slug,
                ArchivedVersion(body.version, body.skill_id),
                expected_head=expected,
                actor=body.actor or caller.actor,
                message=body.message,
            )
    except HeadConflict as conflict:
        raise precondition_failed(conflict, await current_head(registry, scope, slug)) from None
    return await published(request, registry, scope, slug, pub)


_STATUS: TypeAdapter[SkillStatus] = TypeAdapter(SkillStatus)


async def _status_response(request: Request, status: SkillStatus, slug: str) -> Response:
    """The status, tagged with the head's ETag (absent once the skill is deleted)."""
    head = await current_head(registry_of(request), status.scope, slug)
    headers = {} if head is None else {"ETag": head.etag}
    return JSONResponse(_STATUS.dump_python(status, mode="json"), headers=headers)


@router.get(
    "/state",
    name="get_state",
    summary="The skill's state and controls, with its ETag",
    response_model=SkillStatus,
    responses=problems(400, 403, 404),
)
async def get_state(
    request: Request, workspace: Workspace, slug: Slug, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """ready, needs_decision, blocked, paused_learning or paused_use, and every flag."""
    del caller
    status = await registry_of(request).skill_status(make_scope(workspace, agent), slug)
    return await _status_response(request, status, slug)


ControlAction = Literal[
    "pause", "resume", "stop_using", "resume_use", "auto_improve_on", "auto_improve_off"
]


class StateChange(ActorOptions):
    """`POST .../state`: one owner control."""

    action: ControlAction
    reason: str = Field(default="", max_length=2000, pattern=TEXT_PATTERN)


@router.post(
    "/state",
    name="change_state",
    summary="Pause or resume learning or use, or switch automatic improvements (If-Match)",
    response_model=SkillStatus,
    responses=problems(400, 403, 404, 409, 412, 422, 428, 429),
    openapi_extra=json_request_body(StateChange),
)
async def change_state(
    request: Request,
    *,
    workspace: Workspace,
    slug: Slug,
    caller: Authorized,
    agent: Agent = DEFAULT,
) -> Response:
    """One control, as a compare-and-swap on the head; 409 if the state does not allow it."""
    body = await json_body(request, StateChange)
    refuse_credentials(request, actor=body.actor, reason=body.reason)
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    expected = await expected_head(request, registry, scope, slug, allow_create=False)
    assert expected is not None
    try:
        with _metrics(request).write(body.action):
            status = await registry.control(
                scope,
                slug,
                Action(body.action),
                actor=body.actor or caller.actor,
                reason=body.reason,
                expected_head=expected,
            )
    except HeadConflict as conflict:
        raise precondition_failed(conflict, await current_head(registry, scope, slug)) from None
    return await _status_response(request, status, slug)


@router.delete(
    "",
    name="delete_skill",
    summary="Delete the skill (If-Match): versions kept as archived, the slug freed",
    response_model=SkillStatus,
    responses=problems(400, 403, 404, 409, 412, 428, 429),
)
async def delete_skill(
    request: Request, workspace: Workspace, slug: Slug, caller: Authorized, agent: Agent = DEFAULT
) -> Response:
    """The skill's state becomes `deleted`; pending proposals are withdrawn."""
    registry = registry_of(request)
    scope = make_scope(workspace, agent)
    expected = await expected_head(request, registry, scope, slug, allow_create=False)
    assert expected is not None
    try:
        with _metrics(request).write("delete"):
            status = await registry.delete(scope, slug, actor=caller.actor, expected_head=expected)
    except HeadConflict as conflict:
        raise precondition_failed(conflict, await current_head(registry, scope, slug)) from None
    return await _status_response(request, status, slug)
