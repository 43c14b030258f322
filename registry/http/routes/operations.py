"""Operators: liveness, readiness, Prometheus metrics and the service-wide status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from registry.http.auth import Caller, authorize, registry_of
from registry.http.metrics import CONTENT_TYPE, Metrics
from registry.http.routes.common import problems
from registry.http.schemas import (
    EventStatus,
    Health,
    Ready,
    ServiceStatusBody,
    UploadStatus,
)

router = APIRouter(tags=["operations"])


@router.get("/healthz", name="healthz", summary="The process is up", response_model=Health)
async def healthz() -> Health:
    """Always 200 while the process serves requests; checks nothing else."""
    return Health()


@router.get(
    "/readyz",
    name="readyz",
    summary="The database and the blob store answer",
    response_model=Ready,
    responses={503: {"model": Ready, "description": "Not ready"}},
)
async def readyz(request: Request) -> Response:
    """200 if a `SELECT 1` and the blob store's check pass, 503 otherwise.

    Only booleans: the reasons go to the log, not to unauthenticated callers.
    """
    state = await registry_of(request).ops.readiness()
    body = Ready(ready=state.ready, database=state.database.ok, blob_store=state.blob_store.ok)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if state.ready else 503)


@router.get(
    "/metrics",
    name="metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Request and write latencies, conflicts, refusals, bytes uploaded (text format)."""
    registry: Metrics = request.app.state.metrics
    return Response(registry.render(), media_type=CONTENT_TYPE)


@router.get(
    "/v1/status",
    name="service_status",
    summary="Service-wide status for operators (admin)",
    response_model=ServiceStatusBody,
    responses=problems(403),
)
async def service_status(
    request: Request, caller: Annotated[Caller, Depends(authorize)]
) -> ServiceStatusBody:
    """Aggregates across workspaces (no names): outbox, uploads in flight, storage and GC.

    `learning` is the token's own workspace's learning section.
    """
    status = await registry_of(request).ops.service_status(caller.token.workspace)
    return ServiceStatusBody(
        generated_at=status.generated_at,
        events=EventStatus(**vars(status.events)),
        uploads=UploadStatus(**vars(status.uploads)),
        storage=status.storage,
        materialization=status.materialization,
        jobs=status.jobs,
        learning=status.learning,
    )
