"""Queries on durable jobs. The caller owns the transaction (a write transaction for changes).

Claims: on PostgreSQL the candidate row is selected `FOR UPDATE SKIP LOCKED`, so workers
claiming at the same time each take a different job without waiting for one another; on
SQLite the claim runs in a `BEGIN IMMEDIATE` transaction, which serialises claims.

Every change after the claim is fenced by the claim itself: it applies only while the
row is still `running` under the same `lease_owner` and the same attempt number, so a
worker whose lease expired (and whose job another worker took) cannot record an outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import Job

# How many exhausted jobs with an expired lease one claim closes before it gives up for now.
_CLAIM_SCAN: Final = 50


@dataclass(frozen=True, slots=True)
class JobRow:
    """A job as the services see it."""

    id: int
    kind: str
    idempotency_key: str
    workspace: str
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: dict[str, Any] | None
    result: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    progress: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        """Succeeded or failed: nothing will run it again."""
        return self.status in ("succeeded", "failed")


_COLUMNS = tuple(getattr(Job, f) for f in JobRow.__slots__)


def _row(row: sa.Row[Any]) -> JobRow:
    return JobRow(**row._asdict())


async def get(conn: AsyncConnection, job_id: int) -> JobRow | None:
    row = (await conn.execute(sa.select(*_COLUMNS).where(Job.id == job_id))).first()
    return None if row is None else _row(row)


async def insert_or_get(
    conn: AsyncConnection,
    *,
    kind: str,
    key: str,
    workspace: str,
    payload: dict[str, Any],
    max_attempts: int,
    run_after: datetime,
    now: datetime,
) -> tuple[JobRow, bool]:
    """Insert a queued job, or return the job that already has `key` (and False)."""
    insert = upsert(conn, Job).values(
        kind=kind,
        idempotency_key=key,
        workspace=workspace,
        payload=payload,
        status="queued",
        attempts=0,
        max_attempts=max_attempts,
        run_after=run_after,
        created_at=now,
        updated_at=now,
    )
    created = await conn.scalar(
        insert.on_conflict_do_nothing(index_elements=["idempotency_key"]).returning(Job.id)
    )
    row = (await conn.execute(sa.select(*_COLUMNS).where(Job.idempotency_key == key))).first()
    assert row is not None, "the key was inserted or already present"
    return _row(row), created is not None


def _due(now: datetime) -> sa.ColumnElement[bool]:
    return sa.or_(
        sa.and_(Job.status == "queued", Job.run_after <= now),
        sa.and_(Job.status == "running", Job.lease_expires_at <= now),
    )


def _postgres(conn: AsyncConnection) -> bool:
    return conn.dialect.name == "postgresql"


async def any_due(conn: AsyncConnection, *, kinds: list[str], now: datetime) -> bool:
    """Whether a job of one of `kinds` is due: a read, so an idle poll takes no write lock."""
    query = sa.select(Job.id).where(_due(now), Job.kind.in_(kinds)).limit(1)
    return (await conn.execute(query)).first() is not None


async def claim_next(
    conn: AsyncConnection, *, owner: str, kinds: list[str], now: datetime, lease_until: datetime
) -> JobRow | None:
    """Claim the next due job of one of `kinds`, or return None if there is none.

    A job whose worker died on its last attempt (lease expired, no attempts left) is closed
    as failed here instead of being run again.
    """
    for _ in range(_CLAIM_SCAN):
        query = (
            sa.select(Job.id, Job.status, Job.attempts, Job.max_attempts)
            .where(_due(now), Job.kind.in_(kinds))
            .order_by(Job.run_after, Job.id)
            .limit(1)
        )
        if _postgres(conn):
            query = query.with_for_update(skip_locked=True)
        candidate = (await conn.execute(query)).first()
        if candidate is None:
            return None
        if candidate.status == "running" and candidate.attempts >= candidate.max_attempts:
            await _expire(conn, candidate.id, now)
            continue
        return await _take(conn, candidate.id, owner=owner, now=now, lease_until=lease_until)
    return None


async def claim(
    conn: AsyncConnection, job_id: int, *, owner: str, now: datetime, lease_until: datetime
) -> JobRow | None:
    """Claim job `job_id` now, even before its `run_after`; None unless it can be taken.

    It can be taken when it is queued, or running under an expired lease with attempts
    left. A finished job, or one another worker holds, is left alone.
    """
    query = sa.select(Job.status, Job.attempts, Job.max_attempts, Job.lease_expires_at).where(
        Job.id == job_id
    )
    if _postgres(conn):
        query = query.with_for_update()
    row = (await conn.execute(query)).first()
    if row is None:
        return None
    if row.status == "queued":
        return await _take(conn, job_id, owner=owner, now=now, lease_until=lease_until)
    expired = row.lease_expires_at is not None and row.lease_expires_at <= now
    if row.status != "running" or not expired:
        return None
    if row.attempts >= row.max_attempts:
        await _expire(conn, job_id, now)
        return None
    return await _take(conn, job_id, owner=owner, now=now, lease_until=lease_until)


async def _take(
    conn: AsyncConnection, job_id: int, *, owner: str, now: datetime, lease_until: datetime
) -> JobRow:
    row = (
        await conn.execute(
            sa.update(Job)
            .where(Job.id == job_id)
            .values(
                status="running",
                attempts=Job.attempts + 1,
                lease_owner=owner,
                lease_expires_at=lease_until,
                updated_at=now,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return _row(row)


async def _expire(conn: AsyncConnection, job_id: int, now: datetime) -> None:
    await conn.execute(
        sa.update(Job)
        .where(Job.id == job_id)
        .values(
            status="failed",
            lease_owner=None,
            lease_expires_at=None,
            last_error={
                "code": "lease_expired",
                "message": "the worker stopped (its lease expired) during the last attempt",
                "details": {},
                "at": now.isoformat(),
                "permanent": True,
            },
            updated_at=now,
            finished_at=now,
        )
    )


def _fenced(job_id: int, owner: str, attempt: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        Job.id == job_id,
        Job.status == "running",
        Job.lease_owner == owner,
        Job.attempts == attempt,
    )


async def renew(
    conn: AsyncConnection,
    job_id: int,
    *,
    owner: str,
    attempt: int,
    now: datetime,
    lease_until: datetime,
) -> bool:
    """Extend the lease; False if the lease is no longer this worker's."""
    result = await conn.execute(
        sa.update(Job)
        .where(_fenced(job_id, owner, attempt))
        .values(lease_expires_at=lease_until, updated_at=now)
    )
    return bool(result.rowcount == 1)


async def report_progress(
    conn: AsyncConnection,
    job_id: int,
    *,
    owner: str,
    attempt: int,
    progress: dict[str, Any],
    now: datetime,
) -> bool:
    """Record what the job has done so far (fenced); False if the lease is no longer held."""
    result = await conn.execute(
        sa.update(Job)
        .where(_fenced(job_id, owner, attempt))
        .values(progress=progress, updated_at=now)
    )
    return bool(result.rowcount == 1)


async def finish(
    conn: AsyncConnection,
    job_id: int,
    *,
    owner: str,
    attempt: int,
    status: str,
    now: datetime,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    run_after: datetime | None = None,
) -> JobRow | None:
    """Record an attempt's outcome (fenced); None if the lease is no longer this worker's.

    `status`: `succeeded` (with `result`), `queued` (a retry at `run_after`, with `error`)
    or `failed` (with `error`).
    """
    values: dict[str, Any] = {
        "status": status,
        "lease_owner": None,
        "lease_expires_at": None,
        "updated_at": now,
    }
    if status in ("succeeded", "failed"):
        values["finished_at"] = now
    if result is not None:
        values["result"] = result
    if error is not None:
        values["last_error"] = error
    if run_after is not None:
        values["run_after"] = run_after
    row = (
        await conn.execute(
            sa.update(Job)
            .where(_fenced(job_id, owner, attempt))
            .values(**values)
            .returning(*_COLUMNS)
        )
    ).first()
    return None if row is None else _row(row)


async def page(
    conn: AsyncConnection,
    *,
    status: str | None,
    workspace: str | None,
    limit: int,
    before: int | None,
) -> list[JobRow]:
    """Jobs, newest first, optionally of one status and one workspace."""
    query = sa.select(*_COLUMNS).order_by(Job.id.desc()).limit(limit)
    if status is not None:
        query = query.where(Job.status == status)
    if workspace is not None:
        query = query.where(Job.workspace == workspace)
    if before is not None:
        query = query.where(Job.id < before)
    return [_row(r) for r in await conn.execute(query)]
