"""Sync over HTTP: a scope's desired state, and the targets that remote reconcilers keep.

`skillreg sync` keeps a directory equal to a scope's desired state with nothing but these
endpoints and the blobs by digest (`routes/blobs.py`):

- `GET .../desired?agent=&target=`: each live skill's head, the manifest of each one in
  use, and (with `target`) that target's registration and records, under one strong
  `ETag`. `If-None-Match` with it answers 304 without reading a manifest, so a reconciler
  whose registry has not changed spends one small request. With `signed=true`, the answer
  carries the signed state too (`signed`: a DSSE envelope; its tag covers the signing
  period, docs/trust.md). `Skillreg-Features: record-trust, record-tag` says that a
  record may carry the host's trust report and the tag of the state it holds (below).
- `PUT .../targets/{id}`: bind a target to the scope, or record where it is now.
- `PUT .../targets/{id}/skills/{slug}`: record what the target holds for a skill, a
  compare-and-swap on the record the reconciler read (`expected`): 409 `state_conflict` if
  it moved. Recording what is recorded already changes nothing (a retry is safe).
- `PUT .../targets/{id}/trust`: what the host says of the state it was served (verified,
  stale, refused), shown by `skillreg status`; a record's `trust` field says the same in
  the record's transaction.

All four need the `read` role: recording what a target holds changes no skill, version or
decision, and a host that only loads skills should not hold a token that may publish them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from registry.http.auth import Caller, authorize, registry_of
from registry.http.preconditions import parse_condition
from registry.http.routes.common import (
    DEFAULT,
    Agent,
    Slug,
    Workspace,
    json_body,
    json_request_body,
    make_scope,
    problems,
)
from registry.wire import (
    FEATURES,
    RECORD_TAG,
    RECORD_TRUST,
    TARGET_ID_PATTERN,
    DesiredState,
    RecordRequest,
    RecordResult,
    TargetRegistered,
    TargetRegistration,
    TrustReport,
)

router = APIRouter(prefix="/v1/workspaces/{workspace}", tags=["sync"])

Authorized = Annotated[Caller, Depends(authorize)]
TargetId = Annotated[
    str, Path(pattern=TARGET_ID_PATTERN, description="the target's id (`.skillreg/target.json`)")
]


@router.get(
    "/desired",
    name="get_desired",
    summary="A scope's desired state (and a target's records), with an ETag",
    response_model=DesiredState,
    responses={304: {"description": "If-None-Match matched"}, **problems(400, 403, 404, 422)},
)
async def get_desired(
    request: Request,
    workspace: Workspace,
    caller: Authorized,
    *,
    agent: Agent = DEFAULT,
    target: Annotated[
        str | None,
        Query(pattern=TARGET_ID_PATTERN, description="a target whose records to include"),
    ] = None,
    signed: Annotated[
        bool, Query(description="include the signed state (`signed`, docs/trust.md)")
    ] = False,
) -> Response:
    """Every live skill with its head; the files of those in use (state active, not paused).

    The `ETag` covers the heads, the target's registration and its records; send it back
    as `If-None-Match` to get 304 while nothing changed.
    """
    del caller
    header = request.headers.get("if-none-match")
    condition = None if header is None else parse_condition(header)

    def matches(tag: str) -> bool:
        return condition is not None and condition.matches(tag)

    served = await registry_of(request).targets.desired(
        make_scope(workspace, agent), target_id=target, matches=matches, signed=signed
    )
    features = f"{RECORD_TRUST}, {RECORD_TAG}"
    headers = {"ETag": served.tag, "Cache-Control": "no-cache", FEATURES: features}
    if served.state is None:
        return Response(status_code=304, headers=headers)
    unasked = None if signed else {"signed"}
    return JSONResponse(served.state.model_dump(mode="json", exclude=unasked), headers=headers)


@router.put(
    "/targets/{target_id}",
    name="register_target",
    summary="Bind a target to the scope, or record where it is now",
    response_model=TargetRegistered,
    responses=problems(400, 403, 404, 409, 422),
    openapi_extra=json_request_body(TargetRegistration),
)
async def register_target(
    request: Request,
    workspace: Workspace,
    target_id: TargetId,
    caller: Authorized,
) -> TargetRegistered:
    """Idempotent: the same registration again changes nothing (`changed: false`).

    409 `target_mismatch` if the target is bound to another agent of the workspace, 409
    `state_conflict` if its id is taken elsewhere.
    """
    del caller
    body = await json_body(request, TargetRegistration)
    return await registry_of(request).targets.register(workspace, target_id, body)


@router.put(
    "/targets/{target_id}/skills/{slug}",
    name="record_applied",
    summary="Record what a target holds for one skill (compare-and-swap)",
    response_model=RecordResult,
    responses=problems(400, 403, 404, 409, 422),
    openapi_extra=json_request_body(RecordRequest),
)
async def record_applied(
    request: Request,
    workspace: Workspace,
    target_id: TargetId,
    slug: Slug,
    *,
    caller: Authorized,
) -> RecordResult:
    """Set the record to `record` if it still is `expected`, with one outbox event.

    With `trust`, the host's trust report is kept in the same transaction (as `PUT
    .../trust` keeps it), unless the compare-and-swap fails. With `state_tag` (the
    desired state's tag the host holds), the answer's `state_tag` is that state's tag
    with this record, if nothing else changed since: the host's next poll is a 304.

    404 `target_not_found` if the target never registered; 409 `state_conflict` if the
    record is neither `expected` nor already `record`.
    """
    del caller
    body = await json_body(request, RecordRequest)
    return await registry_of(request).targets.record(workspace, target_id, slug, body)


@router.put(
    "/targets/{target_id}/trust",
    name="report_trust",
    summary="Record what a target's host says of the desired state it was served",
    response_model=TrustReport,
    responses=problems(400, 403, 404, 422),
    openapi_extra=json_request_body(TrustReport),
)
async def report_trust(
    request: Request,
    workspace: Workspace,
    target_id: TargetId,
    *,
    caller: Authorized,
) -> TrustReport:
    """Verified, stale since when, or refused and why: `skillreg status` shows it.

    404 `target_not_found` if the target never registered.
    """
    del caller
    body = await json_body(request, TrustReport)
    await registry_of(request).targets.report_trust(workspace, target_id, body)
    return body
