"""The queries of garbage collection: candidates, the locked re-check, untracked objects, runs.

The protocol they serve is in `registry/services/gc/collect.py` and docs/gc.md. Two rules shape
every query here:

- On PostgreSQL a row lock is taken by one statement and the row is re-checked by the
  next. Under READ COMMITTED a statement sees the commits that finished before it
  started, so a re-check that runs after the lock was granted sees everything the
  transactions it waited for wrote; an `EXISTS` evaluated in the locking statement
  itself could be stale.
- A blob is *referenced* when any `manifest_entries` row names it (a version's, a
  proposal's, any manifest's) and *claimed* while a claim on it is unexpired. GC treats a
  claim as live until `gc_clock_skew` after its expiry (`Cutoffs.claims_after`).
- A `deleting` row is *fenced* while its `purge_expires_at` is in the future: a GC run is
  deleting its object outside any transaction, and only that run removes the row, by
  naming the fence it set (`finish_purge`). A fence that has expired is abandoned (its run
  died or stalled) and the row is treated as merely marked again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import Blob, BlobClaim, GcRun, ManifestEntry


@dataclass(frozen=True, slots=True)
class Cutoffs:
    """The instants a run compares against, fixed when the run starts.

    Fixing them at the start is conservative: a row touched or claimed while the run goes
    on is younger than `touched_before`, and a claim that expires meanwhile still counts.
    """

    touched_before: datetime  # orphans touched before this are past their grace
    claims_after: datetime  # claims expiring after this still protect their blob
    now: datetime  # fences expiring after this are still in force


@dataclass(frozen=True, slots=True)
class Candidate:
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class Recheck:
    """A blob row as tx2 sees it once it holds the row lock."""

    digest: str
    size: int
    status: str
    referenced: bool
    claimed: bool
    fenced: bool  # another run's fence is still in force

    @property
    def deletable(self) -> bool:
        return (
            self.status == "deleting"
            and not self.fenced
            and not self.referenced
            and not self.claimed
        )


def referenced() -> sa.Exists:
    """True for a blob row that some manifest entry names (correlated to `blobs`)."""
    return sa.exists().where(ManifestEntry.digest == Blob.digest)


def claimed(after: datetime) -> sa.Exists:
    """True for a blob row with a claim that expires after `after` (correlated)."""
    return sa.exists().where(BlobClaim.digest == Blob.digest, BlobClaim.expires_at > after)


def fenced(now: datetime) -> sa.ColumnElement[bool]:
    """True for a row whose object a GC run may be deleting at `now`."""
    return sa.and_(Blob.purge_expires_at.is_not(None), Blob.purge_expires_at > now)


def eligible(cutoffs: Cutoffs) -> sa.ColumnElement[bool]:
    """Rows GC may mark: orphans past their grace, and rows a run already marked.

    A `deleting` row left by a killed run is selected whatever its age: the mark was
    decided under these same conditions, and tx2 re-checks it under the row lock. A row
    another run has fenced is that run's until its fence expires.
    """
    return sa.and_(
        ~fenced(cutoffs.now),
        sa.or_(
            Blob.status == "deleting",
            sa.and_(
                Blob.touched_at < cutoffs.touched_before,
                ~referenced(),
                ~claimed(cutoffs.claims_after),
            ),
        ),
    )


def _is_postgres(conn: AsyncConnection) -> bool:
    return conn.dialect.name == "postgresql"


# ---------------------------------------------------------------- claims


async def expire_claims(conn: AsyncConnection, cutoffs: Cutoffs, limit: int) -> int:
    """Delete up to `limit` claims that expired before `cutoffs.claims_after`."""
    batch = (
        sa.select(BlobClaim.id)
        .where(BlobClaim.expires_at <= cutoffs.claims_after)
        .order_by(BlobClaim.id)
        .limit(limit)
    )
    result = await conn.execute(
        sa.delete(BlobClaim).where(BlobClaim.id.in_(batch.scalar_subquery()))
    )
    return int(result.rowcount)


async def count_expired_claims(conn: AsyncConnection, cutoffs: Cutoffs) -> int:
    count = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(BlobClaim)
        .where(BlobClaim.expires_at <= cutoffs.claims_after)
    )
    return int(count or 0)


# ---------------------------------------------------------------- tx1: mark


async def candidates(
    conn: AsyncConnection, *, after: str, cutoffs: Cutoffs, limit: int, lock: bool
) -> list[Candidate]:
    """The next `limit` eligible rows after digest `after`, in digest order (keyset).

    With `lock` on PostgreSQL the rows are locked `FOR UPDATE SKIP LOCKED`: a row a
    writer holds (claiming or publishing it) is skipped by this run, not waited for.
    """
    query = (
        sa.select(Blob.digest, Blob.size)
        .where(Blob.digest > after, eligible(cutoffs))
        .order_by(Blob.digest)
        .limit(limit)
    )
    if lock and _is_postgres(conn):
        query = query.with_for_update(skip_locked=True)
    return [Candidate(r.digest, r.size) for r in await conn.execute(query)]


async def mark_deleting(
    conn: AsyncConnection, digests: Sequence[str], cutoffs: Cutoffs
) -> list[Candidate]:
    """Mark the locked `digests` that still qualify `deleting`; return every unfenced one.

    A row another run has fenced is that run's until the fence expires. This is the
    second statement of tx1: it runs after `candidates` locked the rows, so its `NOT
    EXISTS` checks see every publish that committed while the lock was awaited.
    """
    if not digests:
        return []
    await conn.execute(
        sa.update(Blob)
        .where(
            Blob.digest.in_(digests),
            Blob.status != "deleting",
            Blob.touched_at < cutoffs.touched_before,
            ~referenced(),
            ~claimed(cutoffs.claims_after),
        )
        .values(status="deleting")
    )
    rows = await conn.execute(
        sa.select(Blob.digest, Blob.size)
        .where(Blob.digest.in_(digests), Blob.status == "deleting", ~fenced(cutoffs.now))
        .order_by(Blob.digest)
    )
    return [Candidate(r.digest, r.size) for r in rows]


# ---------------------------------------------------------------- tx2: fence, tx3: finish


async def lock_and_recheck(
    conn: AsyncConnection, digests: Sequence[str], cutoffs: Cutoffs
) -> list[Recheck]:
    """Lock the rows `FOR UPDATE` (in digest order), then read them afresh.

    While the lock is held a writer's `claim()` on one of these digests waits (its
    upsert needs the row), and so does a publish's `confirm()` (it share-locks every
    digest it references): neither can add a claim or a reference underneath GC.
    """
    ordered = sorted(set(digests))
    if not ordered:
        return []
    await _lock(conn, ordered)
    rows = await conn.execute(
        sa.select(
            Blob.digest,
            Blob.size,
            Blob.status,
            referenced().label("referenced"),
            claimed(cutoffs.claims_after).label("claimed"),
            fenced(cutoffs.now).label("fenced"),
        )
        .where(Blob.digest.in_(ordered))
        .order_by(Blob.digest)
    )
    return [
        Recheck(r.digest, r.size, r.status, bool(r.referenced), bool(r.claimed), bool(r.fenced))
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class Fenced:
    """What tx2 decided for a chunk: the rows it fenced, and the odd ones."""

    digests: list[str]  # fenced by this run: their objects may be deleted now
    suspicious: list[str]  # `deleting` yet referenced (never by the protocol; see collect)
    skipped: int  # taken back by a writer, or another run's


async def fence(conn: AsyncConnection, rows: Sequence[Recheck], *, until: datetime) -> Fenced:
    """tx2, after `lock_and_recheck`: fence the deletable `rows` until `until`.

    The fence is what lets GC delete the objects after this transaction commits: a claim
    does not resurrect a fenced row nor add a claim to it, `confirm` refuses it (it is
    `deleting`), and no other run selects it, until `until` has passed. `until` also
    names this run's fence in `finish_purge`.
    """
    doomed = [r.digest for r in rows if r.deletable]
    if doomed:
        await conn.execute(
            sa.update(Blob)
            .where(Blob.digest.in_(doomed), Blob.status == "deleting")
            .values(purge_expires_at=until)
        )
    return Fenced(
        digests=doomed,
        suspicious=[r.digest for r in rows if r.status == "deleting" and r.referenced],
        skipped=len(rows) - len(doomed),
    )


async def finish_purge(
    conn: AsyncConnection, digests: Sequence[str], cutoffs: Cutoffs, *, until: datetime
) -> int:
    """tx3: delete the rows (and their expired claims) still under this run's fence.

    `until` is the fence `fence()` set. A row whose fence expired and was lifted since (a
    writer resurrected it, or another run fenced it again) no longer carries it and is
    left alone. A fenced row holds no unexpired claim (`claim` adds none to it, and
    `fence` needed it unclaimed), so the claims' foreign key makes a mistake here fail
    loudly instead of orphaning a claim.
    """
    ordered = sorted(set(digests))
    if not ordered:
        return 0
    await _lock(conn, ordered)
    ours = list(
        (
            await conn.execute(
                sa.select(Blob.digest).where(
                    Blob.digest.in_(ordered),
                    Blob.status == "deleting",
                    Blob.purge_expires_at == until,
                )
            )
        ).scalars()
    )
    if not ours:
        return 0
    await conn.execute(
        sa.delete(BlobClaim).where(
            BlobClaim.digest.in_(ours), BlobClaim.expires_at <= cutoffs.claims_after
        )
    )
    result = await conn.execute(sa.delete(Blob).where(Blob.digest.in_(ours)))
    return int(result.rowcount)


async def mark_live(conn: AsyncConnection, digests: Sequence[str]) -> None:
    """Return unfenced `deleting` rows that turned out to be referenced (and stored) to `live`."""
    if digests:
        await conn.execute(
            sa.update(Blob)
            .where(
                Blob.digest.in_(digests),
                Blob.status == "deleting",
                Blob.purge_expires_at.is_(None),
                referenced(),
            )
            .values(status="live")
        )


async def _lock(conn: AsyncConnection, ordered: Sequence[str]) -> None:
    """PostgreSQL: lock the rows `FOR UPDATE`, in digest order (SQLite holds its write lock)."""
    if _is_postgres(conn):
        await conn.execute(
            sa.select(Blob.digest)
            .where(Blob.digest.in_(ordered))
            .order_by(Blob.digest)
            .with_for_update()
        )


# ---------------------------------------------------------------- untracked objects


async def tracked(conn: AsyncConnection, digests: Sequence[str]) -> set[str]:
    """The digests among `digests` that have a blob row."""
    if not digests:
        return set()
    rows = await conn.execute(sa.select(Blob.digest).where(Blob.digest.in_(digests)))
    return set(rows.scalars())


async def adopt_untracked(
    conn: AsyncConnection, objects: Sequence[Candidate], now: datetime
) -> list[str]:
    """Insert `deleting` rows for objects that have none; return the digests inserted.

    A conflict means a writer claimed the digest since the store was listed: the row is
    the writer's and is left alone.
    """
    if not objects:
        return []
    insert = upsert(conn, Blob).values(
        [
            {
                "digest": o.digest,
                "size": o.size,
                "status": "deleting",
                "created_at": now,
                "touched_at": now,
            }
            for o in sorted(objects, key=lambda o: o.digest)
        ]
    )
    result = await conn.execute(
        insert.on_conflict_do_nothing(index_elements=[Blob.digest]).returning(Blob.digest)
    )
    return sorted(result.scalars())


# ---------------------------------------------------------------- runs and figures


@dataclass(frozen=True, slots=True)
class RunRow:
    id: int
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    grace_seconds: float
    claims_expired: int
    versions_pruned: int
    blobs_reclaimed: int
    bytes_reclaimed: int
    untracked_reclaimed: int
    store_objects: int | None
    store_bytes: int | None
    error: str | None


_RUN_COLUMNS = tuple(getattr(GcRun, f) for f in RunRow.__slots__)


async def start_run(conn: AsyncConnection, *, now: datetime, grace: float) -> int:
    run_id = await conn.scalar(
        sa.insert(GcRun)
        .values(
            started_at=now,
            outcome="running",
            grace_seconds=grace,
            claims_expired=0,
            versions_pruned=0,
            blobs_reclaimed=0,
            bytes_reclaimed=0,
            untracked_reclaimed=0,
        )
        .returning(GcRun.id)
    )
    assert run_id is not None
    return int(run_id)


async def end_run(conn: AsyncConnection, run_id: int, **values: Any) -> None:
    """Record a run's outcome and counters (`outcome`, `finished_at`, the tallies)."""
    await conn.execute(sa.update(GcRun).where(GcRun.id == run_id).values(**values))


async def last_run(conn: AsyncConnection) -> RunRow | None:
    """The most recent run that finished."""
    row = (
        await conn.execute(
            sa.select(*_RUN_COLUMNS)
            .where(GcRun.outcome == "finished")
            .order_by(GcRun.finished_at.desc(), GcRun.id.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else RunRow(**row._asdict())


async def run_totals(conn: AsyncConnection) -> tuple[int, int, int]:
    """Runs finished, and the blobs and bytes every run ever reclaimed."""
    row = (
        await conn.execute(
            sa.select(
                sa.func.count().filter(GcRun.outcome == "finished"),
                sa.func.coalesce(sa.func.sum(GcRun.blobs_reclaimed), 0),
                sa.func.coalesce(sa.func.sum(GcRun.bytes_reclaimed), 0),
            )
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2])


@dataclass(frozen=True, slots=True)
class BlobTotals:
    blobs: int
    bytes: int
    referenced_blobs: int
    referenced_bytes: int
    reclaimable_blobs: int
    reclaimable_bytes: int
    claims: int


async def blob_totals(conn: AsyncConnection, cutoffs: Cutoffs) -> BlobTotals:
    """Rows and bytes the registry tracks, referenced, and reclaimable now."""
    is_referenced = referenced()
    is_eligible = eligible(cutoffs)
    row = (
        await conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.coalesce(sa.func.sum(Blob.size), 0),
                sa.func.coalesce(sa.func.sum(sa.case((is_referenced, 1), else_=0)), 0),
                sa.func.coalesce(sa.func.sum(sa.case((is_referenced, Blob.size), else_=0)), 0),
                sa.func.coalesce(sa.func.sum(sa.case((is_eligible, 1), else_=0)), 0),
                sa.func.coalesce(sa.func.sum(sa.case((is_eligible, Blob.size), else_=0)), 0),
            )
        )
    ).one()
    claims = await conn.scalar(sa.select(sa.func.count()).select_from(BlobClaim))
    blobs, size, ref_blobs, ref_bytes, gone_blobs, gone_bytes = (int(v) for v in row)
    return BlobTotals(
        blobs=blobs,
        bytes=size,
        referenced_blobs=ref_blobs,
        referenced_bytes=ref_bytes,
        reclaimable_blobs=gone_blobs,
        reclaimable_bytes=gone_bytes,
        claims=int(claims or 0),
    )
