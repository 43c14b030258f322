"""Queries on discovery: a scope's settings, the skills it publishes, cached artifact digests.

Like every query module, these take an open connection and never begin or commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.skills import in_scope
from registry.db.tables import DiscoveryArtifact, DiscoveryScope, DiscoverySkill, Skill, Version
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class SettingsRow:
    """A scope's discovery settings as stored."""

    everything: bool
    public: bool
    revision: int
    updated_at: datetime
    updated_by: str


@dataclass(frozen=True, slots=True)
class HeadRow:
    """The head version of a skill the index may list."""

    skill_id: int
    slug: str
    version: int
    version_id: int
    manifest_id: int
    manifest_hash: str
    file_count: int
    total_size: int


@dataclass(frozen=True, slots=True)
class ArtifactRow:
    """What the index says about one package state's artifact."""

    manifest_hash: str
    format: str
    sha256: str
    size: int
    description: str


def _scope_of(table: type[DiscoveryScope | DiscoverySkill], scope: Scope) -> sa.ColumnElement[bool]:
    return sa.and_(table.workspace == scope.workspace, table.agent == scope.agent)


async def settings(conn: AsyncConnection, scope: Scope) -> SettingsRow | None:
    """The scope's settings, or None if its owner never configured discovery."""
    row = (
        await conn.execute(
            sa.select(
                DiscoveryScope.everything,
                DiscoveryScope.public,
                DiscoveryScope.revision,
                DiscoveryScope.updated_at,
                DiscoveryScope.updated_by,
            ).where(_scope_of(DiscoveryScope, scope))
        )
    ).first()
    return None if row is None else SettingsRow(**row._asdict())


async def save_settings(
    conn: AsyncConnection,
    scope: Scope,
    *,
    everything: bool,
    public: bool,
    revision: int,
    actor: str,
    now: datetime,
) -> None:
    """Store the scope's settings at `revision` (the caller checked the one it replaces)."""
    values: dict[str, object] = {
        "everything": everything,
        "public": public,
        "revision": revision,
        "updated_at": now,
        "updated_by": actor,
    }
    if revision == 1:
        await conn.execute(
            sa.insert(DiscoveryScope).values(workspace=scope.workspace, agent=scope.agent, **values)
        )
    else:
        await conn.execute(
            sa.update(DiscoveryScope).where(_scope_of(DiscoveryScope, scope)).values(**values)
        )


async def published_one_by_one(conn: AsyncConnection, scope: Scope) -> dict[int, str]:
    """The live skills published on their own: skill id -> slug."""
    rows = await conn.execute(
        sa.select(Skill.id, Skill.slug)
        .join(DiscoverySkill, DiscoverySkill.skill_id == Skill.id)
        .where(
            _scope_of(DiscoverySkill, scope),
            in_scope(scope),
            Skill.state != "deleted",
        )
        .order_by(Skill.slug)
    )
    return {r.id: r.slug for r in rows}


async def set_published(
    conn: AsyncConnection,
    scope: Scope,
    *,
    add: Iterable[int],
    remove: Iterable[int],
    now: datetime,
) -> None:
    """Publish the skills `add` one by one and stop publishing `remove` (ids in `scope`)."""
    gone = sorted(set(remove))
    if gone:
        await conn.execute(
            sa.delete(DiscoverySkill).where(
                _scope_of(DiscoverySkill, scope), DiscoverySkill.skill_id.in_(gone)
            )
        )
    rows = [
        {"skill_id": i, "workspace": scope.workspace, "agent": scope.agent, "created_at": now}
        for i in sorted(set(add))
    ]
    if rows:
        insert = upsert(conn, DiscoverySkill).values(rows)
        await conn.execute(insert.on_conflict_do_nothing(index_elements=["skill_id"]))


def published(scope: Scope, *, everything: bool) -> sa.ColumnElement[bool]:
    """True for a skill row `scope` publishes (every skill, or those published one by one)."""
    if everything:
        return sa.true()
    one_by_one = sa.select(DiscoverySkill.skill_id).where(_scope_of(DiscoverySkill, scope))
    return Skill.id.in_(one_by_one)


# A skill the index may list: active, its use not paused.
IN_USE: Final = sa.and_(Skill.state == "active", Skill.use_paused.is_(False))
_HEAD_COLUMNS = (
    Skill.id.label("skill_id"),
    Skill.slug,
    Version.number.label("version"),
    Version.id.label("version_id"),
    Version.manifest_id,
    Version.manifest_hash,
    Version.file_count,
    Version.total_size,
)


async def published_heads(
    conn: AsyncConnection, scope: Scope, *, everything: bool
) -> list[HeadRow]:
    """The head of every published skill of `scope` that is in use, by slug."""
    rows = await conn.execute(
        sa.select(*_HEAD_COLUMNS)
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .where(in_scope(scope), IN_USE, published(scope, everything=everything))
        .order_by(Skill.slug)
    )
    return [HeadRow(**r._asdict()) for r in rows]


async def published_version(
    conn: AsyncConnection, scope: Scope, slug: str, number: int, *, everything: bool
) -> HeadRow | None:
    """Version `number` of the published, in-use skill `slug`, or None."""
    row = (
        await conn.execute(
            sa.select(*_HEAD_COLUMNS)
            .join(Version, Version.skill_id == Skill.id)
            .where(
                in_scope(scope),
                Skill.slug == slug,
                IN_USE,
                published(scope, everything=everything),
                Version.number == number,
                Version.workspace == scope.workspace,
            )
        )
    ).first()
    return None if row is None else HeadRow(**row._asdict())


async def artifacts(
    conn: AsyncConnection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], ArtifactRow]:
    """The cached artifacts among `keys` ((manifest hash, format) pairs)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = await conn.execute(
        sa.select(
            DiscoveryArtifact.manifest_hash,
            DiscoveryArtifact.format,
            DiscoveryArtifact.sha256,
            DiscoveryArtifact.size,
            DiscoveryArtifact.description,
        ).where(sa.tuple_(DiscoveryArtifact.manifest_hash, DiscoveryArtifact.format).in_(wanted))
    )
    found = [ArtifactRow(**r._asdict()) for r in rows]
    return {(a.manifest_hash, a.format): a for a in found}


async def remember_artifacts(
    conn: AsyncConnection, found: Iterable[ArtifactRow], now: datetime
) -> None:
    """Cache artifacts (idempotent: a row, once written, never changes)."""
    rows = [
        {
            "manifest_hash": a.manifest_hash,
            "format": a.format,
            "sha256": a.sha256,
            "size": a.size,
            "description": a.description,
            "created_at": now,
        }
        for a in found
    ]
    if rows:
        insert = upsert(conn, DiscoveryArtifact).values(rows)
        key = ["manifest_hash", "format"]
        await conn.execute(insert.on_conflict_do_nothing(index_elements=key))
