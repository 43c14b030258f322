"""Revocations: which versions are revoked, recorded and withdrawn (docs/revocation.md).

A revocation is in force while `unyanked_at` is null; at most one is in force per version
(the services check it under the workspace lock). The caller owns the transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import (
    Event,
    Materialization,
    MaterializationTarget,
    Revocation,
    Skill,
    Version,
)
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class RevocationRow:
    """A revocation, in force or withdrawn."""

    id: int
    workspace: str
    agent: str
    skill_id: int
    slug: str
    version: int
    manifest_hash: str
    kind: str
    reason: str
    actor: str
    principal: str
    revoked_at: datetime
    unyanked_at: datetime | None
    unyanked_by: str | None

    @property
    def in_force(self) -> bool:
        return self.unyanked_at is None


_COLUMNS = tuple(getattr(Revocation, f) for f in RevocationRow.__slots__)
_IN_FORCE = Revocation.unyanked_at.is_(None)


def _row(row: sa.Row[Any]) -> RevocationRow:
    return RevocationRow(**row._asdict())


async def add(
    conn: AsyncConnection,
    scope: Scope,
    *,
    skill_id: int,
    slug: str,
    version: int,
    manifest_hash: str,
    kind: str,
    reason: str,
    actor: str,
    principal: str,
    envelope: bytes,
    now: datetime,
) -> int:
    """Record a revocation in force; its id."""
    inserted = await conn.execute(
        sa.insert(Revocation)
        .values(
            workspace=scope.workspace,
            agent=scope.agent,
            skill_id=skill_id,
            slug=slug,
            version=version,
            manifest_hash=manifest_hash,
            kind=kind,
            reason=reason,
            actor=actor,
            principal=principal,
            revoked_at=now,
            envelope=envelope,
        )
        .returning(Revocation.id)
    )
    return int(inserted.scalar_one())


async def withdraw(
    conn: AsyncConnection,
    workspace: str,
    revocation_id: int,
    *,
    actor: str,
    envelope: bytes,
    now: datetime,
) -> None:
    """Take a revocation back (`unyank`): it stays as history."""
    await conn.execute(
        sa.update(Revocation)
        .where(Revocation.workspace == workspace, Revocation.id == revocation_id, _IN_FORCE)
        .values(unyanked_at=now, unyanked_by=actor, unyank_envelope=envelope)
    )


async def in_force(
    conn: AsyncConnection, workspace: str, skill_id: int
) -> dict[int, RevocationRow]:
    """The revocations in force of one skill, by version number."""
    rows = await conn.execute(
        sa.select(*_COLUMNS).where(
            Revocation.workspace == workspace, Revocation.skill_id == skill_id, _IN_FORCE
        )
    )
    return {r.version: r for r in map(_row, rows)}


async def of_skills(
    conn: AsyncConnection, workspace: str, skill_ids: Iterable[int]
) -> dict[tuple[int, int], RevocationRow]:
    """The revocations in force of `skill_ids`, by (skill id, version)."""
    ids = sorted(set(skill_ids))
    if not ids:
        return {}
    rows = await conn.execute(
        sa.select(*_COLUMNS).where(
            Revocation.workspace == workspace, Revocation.skill_id.in_(ids), _IN_FORCE
        )
    )
    return {(r.skill_id, r.version): r for r in map(_row, rows)}


async def of_version(
    conn: AsyncConnection, workspace: str, skill_id: int, version: int
) -> RevocationRow | None:
    """The revocation in force of one version, if any."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Revocation.workspace == workspace,
                Revocation.skill_id == skill_id,
                Revocation.version == version,
                _IN_FORCE,
            )
        )
    ).first()
    return None if row is None else _row(row)


async def by_id(conn: AsyncConnection, workspace: str, revocation_id: int) -> RevocationRow | None:
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Revocation.workspace == workspace, Revocation.id == revocation_id
            )
        )
    ).first()
    return None if row is None else _row(row)


async def of_live_scope(conn: AsyncConnection, scope: Scope) -> list[RevocationRow]:
    """The revocations in force of the scope's live skills, by slug and version."""
    rows = await conn.execute(
        sa.select(*_COLUMNS)
        .join(Skill, Skill.id == Revocation.skill_id)
        .where(
            Revocation.workspace == scope.workspace,
            Revocation.agent == scope.agent,
            Skill.state != "deleted",
            _IN_FORCE,
        )
        .order_by(Revocation.slug, Revocation.version)
    )
    return [_row(r) for r in rows]


async def listed(
    conn: AsyncConnection, workspace: str | None, *, withdrawn: bool = False
) -> list[RevocationRow]:
    """Every revocation in force (and withdrawn ones too, if asked), oldest first."""
    query = sa.select(*_COLUMNS).order_by(Revocation.revoked_at, Revocation.id)
    if workspace is not None:
        query = query.where(Revocation.workspace == workspace)
    if not withdrawn:
        query = query.where(_IN_FORCE)
    return [_row(r) for r in await conn.execute(query)]


def revoked_head() -> sa.ColumnElement[bool]:
    """True for a `skills` row whose head version has a revocation in force (a subquery)."""
    return (
        sa.select(Revocation.id)
        .where(
            Revocation.skill_id == Skill.id,
            Revocation.version == Skill.head,
            _IN_FORCE,
        )
        .exists()
    )


@dataclass(frozen=True, slots=True)
class HolderRow:
    """What one target of a revoked version's scope records for that slug."""

    target_id: str
    path: str
    host: str
    seen_at: datetime | None
    version: int | None
    outcome: str | None
    updated_at: datetime | None


async def holders(conn: AsyncConnection, revocation: RevocationRow) -> list[HolderRow]:
    """Every target of the revocation's scope, with what it records for the slug."""
    rows = await conn.execute(
        sa.select(
            MaterializationTarget.target_id,
            MaterializationTarget.path,
            MaterializationTarget.host,
            MaterializationTarget.seen_at,
            Materialization.version,
            Materialization.outcome,
            Materialization.updated_at,
        )
        .outerjoin(
            Materialization,
            sa.and_(
                Materialization.target_id == MaterializationTarget.target_id,
                Materialization.slug == revocation.slug,
            ),
        )
        .where(
            MaterializationTarget.workspace == revocation.workspace,
            MaterializationTarget.agent == revocation.agent,
        )
        .order_by(MaterializationTarget.target_id)
    )
    return [HolderRow(**r._asdict()) for r in rows]


async def manifest_hashes(conn: AsyncConnection, workspace: str, skill_id: int) -> dict[int, str]:
    """Every version's manifest hash of one skill, by number."""
    rows = await conn.execute(
        sa.select(Version.number, Version.manifest_hash).where(
            Version.workspace == workspace, Version.skill_id == skill_id
        )
    )
    return {r.number: r.manifest_hash for r in rows}


async def seen(
    conn: AsyncConnection, workspace: str, target_id: str, *, now: datetime, before: datetime
) -> None:
    """Record that the target's host asked for its state, unless it did since `before`."""
    await conn.execute(
        sa.update(MaterializationTarget)
        .where(
            MaterializationTarget.workspace == workspace,
            MaterializationTarget.target_id == target_id,
            sa.or_(MaterializationTarget.seen_at.is_(None), MaterializationTarget.seen_at < before),
        )
        .values(seen_at=now)
    )


async def converged(
    conn: AsyncConnection, revocation: RevocationRow
) -> dict[str, tuple[datetime, dict[str, Any]]]:
    """The `target.converged` events of a revocation: (time, payload) by target id."""
    rows = await conn.execute(
        sa.select(Event.created_at, Event.payload)
        .where(
            Event.workspace == revocation.workspace,
            Event.agent == revocation.agent,
            Event.slug == revocation.slug,
            Event.kind == "target.converged",
            Event.version == revocation.version,
            Event.created_at >= revocation.revoked_at,
        )
        .order_by(Event.id)
    )
    found: dict[str, tuple[datetime, dict[str, Any]]] = {}
    for r in rows:
        payload = dict(r.payload)
        if payload.get("revocation") == revocation.id:
            found.setdefault(str(payload.get("target_id")), (r.created_at, payload))
    return found
