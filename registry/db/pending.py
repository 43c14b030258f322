"""Queries on pending writes (docs/history.md, "Learning writes").

Every query filters by workspace; the caller owns the transaction (and, for writes, the
workspace lock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import PendingWrite
from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A pending write as the services see it."""

    id: int
    workspace: str
    agent: str
    slug: str
    skill_id: int | None
    expected: str
    manifest_id: int | None
    manifest_hash: str
    file_count: int
    total_size: int
    origin: str
    actor: str
    message: str
    sources: list[str]
    approvals: list[dict[str, Any]]
    status: str
    outcome: dict[str, Any] | None
    write_id: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def scope(self) -> Scope:
        return Scope(self.workspace, self.agent)

    def approval_values(self) -> tuple[Approval, ...]:
        return tuple(Approval.from_json(a) for a in self.approvals)


_COLUMNS = tuple(getattr(PendingWrite, f) for f in PendingRow.__slots__)


def _row(row: sa.Row[Any]) -> PendingRow:
    return PendingRow(**row._asdict())


async def record(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    skill_id: int | None,
    expected: str,
    manifest_id: int,
    manifest: Manifest,
    origin: str,
    actor: str,
    message: str,
    sources: Sequence[str],
    approvals: Sequence[Approval],
    write_id: str,
    now: datetime,
) -> int:
    """Record a waiting pending write; returns its id."""
    pending_id = await conn.scalar(
        sa.insert(PendingWrite)
        .values(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            skill_id=skill_id,
            expected=expected,
            manifest_id=manifest_id,
            manifest_hash=manifest.hash,
            file_count=manifest.file_count,
            total_size=manifest.total_size,
            origin=origin,
            actor=actor,
            message=message,
            sources=list(dict.fromkeys(sources)),
            approvals=[a.as_json() for a in approvals],
            status="waiting",
            write_id=write_id,
            created_at=now,
            updated_at=now,
        )
        .returning(PendingWrite.id)
    )
    assert pending_id is not None
    return int(pending_id)


async def get(conn: AsyncConnection, workspace: str, pending_id: int) -> PendingRow | None:
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                PendingWrite.workspace == workspace, PendingWrite.id == pending_id
            )
        )
    ).first()
    return None if row is None else _row(row)


async def by_write(conn: AsyncConnection, workspace: str, write_id: str) -> PendingRow | None:
    """The pending write a write recorded, if its commit happened."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                PendingWrite.workspace == workspace, PendingWrite.write_id == write_id
            )
        )
    ).first()
    return None if row is None else _row(row)


async def waiting_same(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    skill_id: int | None,
    expected: str,
    manifest_hash: str,
) -> int | None:
    """The waiting write of `slug` that this one repeats (same skill, head and package)."""
    same_skill = (
        PendingWrite.skill_id.is_(None) if skill_id is None else PendingWrite.skill_id == skill_id
    )
    return await conn.scalar(
        sa.select(PendingWrite.id)
        .where(
            PendingWrite.workspace == scope.workspace,
            PendingWrite.agent == scope.agent,
            PendingWrite.slug == slug,
            PendingWrite.status == "waiting",
            same_skill,
            PendingWrite.expected == expected,
            PendingWrite.manifest_hash == manifest_hash,
        )
        .order_by(PendingWrite.id)
        .limit(1)
    )


async def waiting_before(conn: AsyncConnection, scope: Scope, before: int | None) -> bool:
    """True if a write waits in `scope` (older than pending write `before`, if given)."""
    query = sa.select(PendingWrite.id).where(
        PendingWrite.workspace == scope.workspace,
        PendingWrite.agent == scope.agent,
        PendingWrite.status == "waiting",
    )
    if before is not None:
        query = query.where(PendingWrite.id < before)
    return await conn.scalar(query.limit(1)) is not None


async def listed(
    conn: AsyncConnection,
    workspace: str | None,
    *,
    agent: str | None = None,
    statuses: Sequence[str] | None = ("waiting",),
    limit: int = 500,
) -> list[PendingRow]:
    """Pending writes, oldest first: of a workspace (and agent), or of every workspace."""
    query = sa.select(*_COLUMNS)
    if workspace is not None:
        query = query.where(PendingWrite.workspace == workspace)
    if agent is not None:
        query = query.where(PendingWrite.agent == agent)
    if statuses is not None:
        query = query.where(PendingWrite.status.in_(statuses))
    rows = await conn.execute(query.order_by(PendingWrite.id).limit(limit))
    return [_row(r) for r in rows]


async def close(
    conn: AsyncConnection,
    pending: PendingRow,
    *,
    status: str,
    outcome: dict[str, Any],
    now: datetime,
) -> None:
    """A waiting write was applied, proposed, dropped or failed; its manifest is let go."""
    result = await conn.execute(
        sa.update(PendingWrite)
        .where(
            PendingWrite.workspace == pending.workspace,
            PendingWrite.id == pending.id,
            PendingWrite.status == "waiting",
        )
        .values(status=status, outcome=outcome, manifest_id=None, updated_at=now)
    )
    if result.rowcount != 1:
        msg = f"pending write {pending.id} changed under the workspace lock"
        raise RuntimeError(msg)
