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

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobStoreError
from registry.db.tables import Blob, BlobClaim, Event, Job
from registry.errors import RegistryError
from registry.services.context import Context
from registry.services.gc.figures import GcFigures, gc_figures
from registry.services.ops.status import materialization_status


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

    async def ping(conn: AsyncConnection) -> None:
        await conn.execute(sa.text("SELECT 1"))

    try:
        await ctx.read(ping)
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
class EventFigures:
    """The outbox: how far it has got, and how recently something happened."""

    latest_id: int | None
    latest_at: datetime | None
    age_seconds: float | None


@dataclass(frozen=True)
class UploadFigures:
    """Writes and blob uploads in flight: unexpired claims and blobs not yet confirmed."""

    active_claims: int
    oldest_claim_at: datetime | None
    pending_blobs: int
    pending_bytes: int


@dataclass(frozen=True)
class JobFigures:
    """The durable job queue (marketplace installs and updates).

    `backlog` counts jobs not finished (`queued` or `running`); `due` the queued ones whose
    time has come; `expired_leases` running jobs whose worker's lease has lapsed (a worker
    died: the next claim takes them over); `oldest_at` when the oldest unfinished job was
    enqueued; `failed` jobs that ran out of attempts.
    """

    backlog: int
    due: int
    running: int
    expired_leases: int
    oldest_at: datetime | None
    oldest_age_seconds: float | None
    failed: int


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


async def service_status(ctx: Context) -> ServiceStatus:
    """Service-wide figures for operators (aggregates across workspaces, no names)."""
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> tuple[EventFigures, UploadFigures, JobFigures]:
        return await _events(conn, now), await _uploads(conn, now), await _jobs(conn, now)

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
    )


async def _events(conn: AsyncConnection, now: datetime) -> EventFigures:
    row = (
        await conn.execute(sa.select(Event.id, Event.created_at).order_by(Event.id.desc()).limit(1))
    ).first()
    if row is None:
        return EventFigures(None, None, None)
    return EventFigures(row.id, row.created_at, max(0.0, (now - row.created_at).total_seconds()))


async def _uploads(conn: AsyncConnection, now: datetime) -> UploadFigures:
    claims = (
        await conn.execute(
            sa.select(sa.func.count(), sa.func.min(BlobClaim.created_at)).where(
                BlobClaim.expires_at > now
            )
        )
    ).one()
    pending = (
        await conn.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(Blob.size), 0)).where(
                Blob.status == "pending"
            )
        )
    ).one()
    return UploadFigures(
        active_claims=int(claims[0]),
        oldest_claim_at=claims[1],
        pending_blobs=int(pending[0]),
        pending_bytes=int(pending[1]),
    )


async def _jobs(conn: AsyncConnection, now: datetime) -> JobFigures:
    unfinished = Job.status.in_(("queued", "running"))
    row = (
        await conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.min(Job.created_at),
                sa.func.coalesce(
                    sa.func.sum(
                        sa.case((sa.and_(Job.status == "queued", Job.run_after <= now), 1), else_=0)
                    ),
                    0,
                ),
                sa.func.coalesce(sa.func.sum(sa.case((Job.status == "running", 1), else_=0)), 0),
                sa.func.coalesce(
                    sa.func.sum(
                        sa.case(
                            (sa.and_(Job.status == "running", Job.lease_expires_at < now), 1),
                            else_=0,
                        )
                    ),
                    0,
                ),
            ).where(unfinished)
        )
    ).one()
    failed = await conn.scalar(
        sa.select(sa.func.count()).select_from(Job).where(Job.status == "failed")
    )
    oldest = row[1]
    return JobFigures(
        backlog=int(row[0]),
        due=int(row[2]),
        running=int(row[3]),
        expired_leases=int(row[4]),
        oldest_at=oldest,
        oldest_age_seconds=None if oldest is None else max(0.0, (now - oldest).total_seconds()),
        failed=int(failed or 0),
    )
