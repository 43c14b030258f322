"""Queries on the snapshots of discovery indexes: the recorded states of a scope's index.

A snapshot is numbered per scope and never changes; its entries name their version by
skill and number. `withdrawn` says which snapshots name a version that is no longer
served (its skill unpublished, deleted or paused, the version pruned or unreadable), by
the same rules the artifacts are served by (registry/db/discovery.py).

Like every query module, these take an open connection and never begin or commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import exclusions, revocations
from registry.db.discovery import IN_USE, published
from registry.db.skills import in_scope
from registry.db.tables import DiscoverySnapshot, DiscoverySnapshotEntry, Skill, Version
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """A snapshot as stored (its entries aside)."""

    id: int
    number: int
    fingerprint: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SnapshotEntryRow:
    """One entry of a snapshot, as stored."""

    slug: str
    skill_id: int
    version: int
    manifest_hash: str
    type: str
    description: str
    sha256: str
    size: int


_COLUMNS = (
    DiscoverySnapshot.id,
    DiscoverySnapshot.number,
    DiscoverySnapshot.fingerprint,
    DiscoverySnapshot.created_at,
)


def _of(scope: Scope) -> sa.ColumnElement[bool]:
    return sa.and_(
        DiscoverySnapshot.workspace == scope.workspace, DiscoverySnapshot.agent == scope.agent
    )


async def latest(conn: AsyncConnection, scope: Scope) -> SnapshotRow | None:
    """The scope's newest snapshot, or None."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS)
            .where(_of(scope))
            .order_by(DiscoverySnapshot.number.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else SnapshotRow(*row)


async def numbers(conn: AsyncConnection, scope: Scope) -> list[int]:
    """The numbers of every snapshot of `scope`, ascending."""
    rows = await conn.execute(
        sa.select(DiscoverySnapshot.number).where(_of(scope)).order_by(DiscoverySnapshot.number)
    )
    return [int(r.number) for r in rows]


async def record(
    conn: AsyncConnection,
    scope: Scope,
    *,
    number: int,
    fingerprint: str,
    entries: Sequence[SnapshotEntryRow],
    now: datetime,
) -> None:
    """Store snapshot `number` of `scope` (the caller holds the workspace lock)."""
    snapshot_id = (
        await conn.execute(
            sa.insert(DiscoverySnapshot)
            .values(
                workspace=scope.workspace,
                agent=scope.agent,
                number=number,
                fingerprint=fingerprint,
                created_at=now,
            )
            .returning(DiscoverySnapshot.id)
        )
    ).scalar_one()
    rows = [
        {
            "snapshot_id": snapshot_id,
            "slug": e.slug,
            "skill_id": e.skill_id,
            "version": e.version,
            "manifest_hash": e.manifest_hash,
            "type": e.type,
            "description": e.description,
            "sha256": e.sha256,
            "size": e.size,
        }
        for e in entries
    ]
    if rows:
        await conn.execute(sa.insert(DiscoverySnapshotEntry), rows)


async def snapshot(
    conn: AsyncConnection, scope: Scope, number: int
) -> tuple[SnapshotRow, list[SnapshotEntryRow]] | None:
    """Snapshot `number` of `scope` and its entries by slug, or None."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(_of(scope), DiscoverySnapshot.number == number)
        )
    ).first()
    if row is None:
        return None
    found = SnapshotRow(*row)
    E = DiscoverySnapshotEntry  # noqa: N806 (a table alias)
    entries = await conn.execute(
        sa.select(
            E.slug,
            E.skill_id,
            E.version,
            E.manifest_hash,
            E.type,
            E.description,
            E.sha256,
            E.size,
        )
        .where(E.snapshot_id == found.id)
        .order_by(E.slug)
    )
    return found, [SnapshotEntryRow(*e) for e in entries]


async def withdrawn(conn: AsyncConnection, scope: Scope, *, everything: bool) -> set[int]:
    """The numbers of the snapshots of `scope` that name a version no longer served.

    A version is served while its skill is published by the scope and in use, the
    version exists with the manifest the snapshot recorded, no source it lists is
    excluded and it is not revoked: the rules of `published_version` and of the artifacts.
    """
    E = DiscoverySnapshotEntry  # noqa: N806 (a table alias)
    named = (
        sa.select(E.skill_id, E.version, E.manifest_hash, Version.id.label("version_id"))
        .distinct()
        .join(DiscoverySnapshot, DiscoverySnapshot.id == E.snapshot_id)
        .outerjoin(
            Skill,
            sa.and_(
                Skill.id == E.skill_id,
                in_scope(scope),
                IN_USE,
                published(scope, everything=everything),
            ),
        )
        .outerjoin(
            Version,
            sa.and_(
                Version.skill_id == Skill.id,
                Version.number == E.version,
                Version.manifest_hash == E.manifest_hash,
                Version.workspace == scope.workspace,
            ),
        )
        .where(_of(scope))
    )
    rows = list(await conn.execute(named))
    unavailable = await exclusions.unavailable(
        conn, scope.workspace, [r.version_id for r in rows if r.version_id is not None]
    )
    revoked = await revocations.of_skills(conn, scope.workspace, {r.skill_id for r in rows})
    gone = sorted(
        {
            (r.skill_id, r.version)
            for r in rows
            if r.version_id is None
            or r.version_id in unavailable
            or (r.skill_id, r.version) in revoked
        }
    )
    if not gone:
        return set()
    found = await conn.execute(
        sa.select(DiscoverySnapshot.number)
        .distinct()
        .join(E, E.snapshot_id == DiscoverySnapshot.id)
        .where(_of(scope), sa.tuple_(E.skill_id, E.version).in_(gone))
    )
    return {int(r.number) for r in found}
