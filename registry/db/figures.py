"""Service-wide figures for operators: the outbox, uploads in flight, the job queue.

Aggregates only (counts, bytes, ages), never a workspace's names or contents; each is one
or two indexed queries (docs/http.md, `/v1/status`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Blob, BlobClaim, Event, Job


async def ping(conn: AsyncConnection) -> None:
    """The database answers a statement."""
    await conn.execute(sa.text("SELECT 1"))


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


async def event_figures(conn: AsyncConnection, now: datetime) -> EventFigures:
    row = (
        await conn.execute(sa.select(Event.id, Event.created_at).order_by(Event.id.desc()).limit(1))
    ).first()
    if row is None:
        return EventFigures(None, None, None)
    return EventFigures(row.id, row.created_at, max(0.0, (now - row.created_at).total_seconds()))


async def upload_figures(conn: AsyncConnection, now: datetime) -> UploadFigures:
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


async def job_figures(conn: AsyncConnection, now: datetime) -> JobFigures:
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
