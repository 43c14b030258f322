"""What an operator asks of a running registry: is it ready, and how is it doing.

`readiness` checks that the database answers a `SELECT 1` and that the blob store is
reachable. `service_status` gathers the service-wide figures of `/v1/status`: aggregates
only (counts, bytes, ages), never a workspace's names or contents: the outbox, uploads in
flight, storage (orphan bytes, what GC would reclaim, the last GC run) and pending
materialisations (counts, and how long the oldest has waited), and the job queue (backlog,
due, expired leases, the oldest unfinished job, failures). A section whose source
does not exist in this registry is reported as absent (`None`), never made up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobStoreError
from registry.db import figures
from registry.db.figures import EventFigures, JobFigures, UploadFigures
from registry.errors import RegistryError
from registry.services.context import Context
from registry.services.gc.figures import GcFigures, gc_figures
from registry.services.learning.status import LearningStatus, learning_status
from registry.services.ops.status import materialization_status

__all__ = [
    "Check",
    "EventFigures",
    "JobFigures",
    "LearningStatus",
    "MaterializationFigures",
    "Readiness",
    "ServiceStatus",
    "UploadFigures",
    "readiness",
    "service_status",
]


@dataclass(frozen=True)
class Check:
    """One dependency's readiness."""

    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Readiness:
    """Whether the registry can serve requests."""

    database: Check
    blob_store: Check

    @property
    def ready(self) -> bool:
        return self.database.ok and self.blob_store.ok


async def readiness(ctx: Context) -> Readiness:
    """Check the database and the blob store; never raises for their failures."""
    try:
        await ctx.read(figures.ping)
        database = Check(ok=True)
    except RegistryError as exc:
        database = Check(ok=False, detail=str(exc))
    try:
        await ctx.blobs.check()
        blob_store = Check(ok=True)
    except BlobStoreError as exc:
        blob_store = Check(ok=False, detail=str(exc))
    return Readiness(database, blob_store)


@dataclass(frozen=True)
class MaterializationFigures:
    """Materialisation targets across workspaces: how many, and what they still lack.

    `pending` counts skills whose desired state a target does not hold yet (to write or to
    remove); `failed` those whose last attempt failed; `oldest_pending_since` is when the
    longest-waiting of them became pending (None if unknown or nothing is pending).
    """

    targets: int
    pending: int
    failed: int
    oldest_pending_since: datetime | None


@dataclass(frozen=True)
class ServiceStatus:
    """The figures of `/v1/status`. `None` marks a section this registry has no source for."""

    generated_at: datetime
    events: EventFigures
    uploads: UploadFigures
    storage: GcFigures
    materialization: MaterializationFigures
    jobs: JobFigures
    learning: LearningStatus | None = None


async def service_status(ctx: Context, workspace: str | None = None) -> ServiceStatus:
    """Service-wide figures for operators (aggregates across workspaces, no names).

    With `workspace` (the caller's own), its learning section too: that one names the
    workspace's paused skills and its last learned change, which the caller may see.
    """
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> tuple[EventFigures, UploadFigures, JobFigures]:
        return (
            await figures.event_figures(conn, now),
            await figures.upload_figures(conn, now),
            await figures.job_figures(conn, now),
        )

    events, uploads, jobs = await ctx.read(work)
    storage = await gc_figures(ctx)
    targets = await materialization_status(ctx)
    since = [p.since for p in targets.pending if p.since is not None]
    materialization = MaterializationFigures(
        targets=len(targets.targets),
        pending=len(targets.pending),
        failed=sum(t.failed for t in targets.targets),
        oldest_pending_since=min(since, default=None),
    )
    return ServiceStatus(
        generated_at=now,
        events=events,
        uploads=uploads,
        storage=storage,
        materialization=materialization,
        jobs=jobs,
        learning=None if workspace is None else (await learning_status(ctx, workspace))[0],
    )
