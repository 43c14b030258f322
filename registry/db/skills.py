"""Queries on skills, versions and manifests. Every query filters by workspace.

These functions take an open connection and never begin or commit: the caller owns the
transaction (and, for writes, the workspace lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import (
    Event,
    Manifest,
    ManifestEntry,
    ScopeCount,
    Skill,
    Version,
    VersionSource,
    WorkspaceUsage,
)
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import ManifestEntry as DomainEntry
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class SkillRow:
    """A skill as the services see it."""

    id: int
    workspace: str
    agent: str
    slug: str
    kind: str
    head: int
    head_size: int
    state: str
    auto_improve: bool
    learning_paused: bool
    use_paused: bool
    pause_reason: str | None
    baseline_listing: str | None
    baseline_version: int | None
    baseline_manifest_hash: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class VersionRow:
    """A version's metadata (its files are in the manifest)."""

    id: int
    skill_id: int
    number: int
    parent: int | None
    origin: str
    actor: str
    message: str
    restored_from: int | None
    manifest_id: int
    manifest_hash: str
    file_count: int
    total_size: int
    write_id: str | None
    created_at: datetime
    principal: str | None


_SKILL_COLUMNS = tuple(getattr(Skill, f) for f in SkillRow.__slots__)
_VERSION_COLUMNS = tuple(getattr(Version, f) for f in VersionRow.__slots__)


def _skill(row: sa.Row[Any]) -> SkillRow:
    return SkillRow(**row._asdict())


def _version(row: sa.Row[Any]) -> VersionRow:
    return VersionRow(**row._asdict())


def in_scope(scope: Scope) -> sa.ColumnElement[bool]:
    """The filter every skill query carries."""
    return sa.and_(Skill.workspace == scope.workspace, Skill.agent == scope.agent)


# Statements every write and read runs, built once (registry/db/publication.py says why).
_LIVE_SKILL: Final = sa.select(*_SKILL_COLUMNS).where(
    Skill.workspace == sa.bindparam("workspace"),
    Skill.agent == sa.bindparam("agent"),
    Skill.slug == sa.bindparam("slug"),
    Skill.state != "deleted",
)
_VERSION: Final = sa.select(*_VERSION_COLUMNS).where(
    Version.workspace == sa.bindparam("workspace"),
    Version.skill_id == sa.bindparam("skill_id"),
    Version.number == sa.bindparam("number"),
)
_ENTRIES: Final = (
    sa.select(
        ManifestEntry.path, ManifestEntry.digest, ManifestEntry.size, ManifestEntry.executable
    )
    .join(Manifest, Manifest.id == ManifestEntry.manifest_id)
    .where(
        Manifest.workspace == sa.bindparam("workspace"),
        ManifestEntry.manifest_id == sa.bindparam("manifest_id"),
    )
)
_INSERT_EVENT: Final = sa.insert(Event)

# The capacity and quota figures: one counter row each, kept by the triggers on `skills`
# (migration 0010), 0 without a row. Read alone (`count_live`, `workspace_usage`) and
# inside a write's context (`publication.write_context`).
LIVE_OF_KIND: Final = sa.select(
    sa.func.coalesce(
        sa.select(ScopeCount.live_skills)
        .where(
            ScopeCount.workspace == sa.bindparam("workspace"),
            ScopeCount.agent == sa.bindparam("agent"),
            ScopeCount.kind == sa.bindparam("kind"),
        )
        .scalar_subquery(),
        0,
    )
)
USED_BYTES: Final = sa.select(
    sa.func.coalesce(
        sa.select(WorkspaceUsage.live_bytes)
        .where(WorkspaceUsage.workspace == sa.bindparam("workspace"))
        .scalar_subquery(),
        0,
    )
)


async def live_skill(conn: AsyncConnection, scope: Scope, slug: str) -> SkillRow | None:
    """The skill of `scope` named `slug` that is not deleted, if any."""
    params = {"workspace": scope.workspace, "agent": scope.agent, "slug": slug}
    row = (await conn.execute(_LIVE_SKILL, params)).first()
    return None if row is None else _skill(row)


async def deleted_skills(
    conn: AsyncConnection, scope: Scope, slug: str, *, skill_id: int | None = None
) -> list[SkillRow]:
    """The deleted skills of `scope` that had `slug` (only `skill_id`, if given), newest first."""
    query = sa.select(*_SKILL_COLUMNS).where(
        in_scope(scope), Skill.slug == slug, Skill.state == "deleted"
    )
    if skill_id is not None:
        query = query.where(Skill.id == skill_id)
    return [_skill(row) for row in await conn.execute(query.order_by(Skill.id.desc()))]


async def skill_by_id(conn: AsyncConnection, workspace: str, skill_id: int) -> SkillRow | None:
    row = (
        await conn.execute(
            sa.select(*_SKILL_COLUMNS).where(Skill.workspace == workspace, Skill.id == skill_id)
        )
    ).first()
    return None if row is None else _skill(row)


async def live_skills_page(
    conn: AsyncConnection, scope: Scope, *, limit: int, after: str | None
) -> list[dict[str, Any]]:
    """Up to `limit` live skills of `scope` after the slug `after`, by slug, with their heads."""
    query = (
        sa.select(
            Skill.slug,
            Skill.head,
            Version.manifest_hash,
            Version.file_count,
            Version.total_size,
            Skill.kind,
            Skill.state,
            Skill.auto_improve,
            Skill.learning_paused,
            Skill.use_paused,
            Skill.updated_at,
            Skill.id.label("skill_id"),
        )
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .where(in_scope(scope), Skill.state != "deleted")
        .order_by(Skill.slug)
        .limit(limit)
    )
    if after is not None:
        query = query.where(Skill.slug > after)
    return [row._asdict() for row in await conn.execute(query)]


async def agents(conn: AsyncConnection, workspace: str) -> list[str]:
    """The agents of `workspace` that have at least one live skill, by name."""
    query = (
        sa.select(Skill.agent)
        .where(Skill.workspace == workspace, Skill.state != "deleted")
        .distinct()
        .order_by(Skill.agent)
    )
    return list((await conn.scalars(query)).all())


async def version(conn: AsyncConnection, skill: SkillRow, number: int) -> VersionRow | None:
    params = {"workspace": skill.workspace, "skill_id": skill.id, "number": number}
    row = (await conn.execute(_VERSION, params)).first()
    return None if row is None else _version(row)


async def version_by_write(
    conn: AsyncConnection, workspace: str, write_id: str
) -> VersionRow | None:
    """The version a write created, if its commit happened."""
    row = (
        await conn.execute(
            sa.select(*_VERSION_COLUMNS).where(
                Version.workspace == workspace, Version.write_id == write_id
            )
        )
    ).first()
    return None if row is None else _version(row)


async def manifest_entries(
    conn: AsyncConnection, workspace: str, manifest_id: int
) -> DomainManifest:
    """The manifest stored under `manifest_id`, as a domain value."""
    rows = await conn.execute(_ENTRIES, {"workspace": workspace, "manifest_id": manifest_id})
    return DomainManifest(DomainEntry(r.path, r.digest, r.size, r.executable) for r in rows)


async def count_live(conn: AsyncConnection, scope: Scope, kind: str) -> int:
    """Skills of one capacity budget in `scope` that are not deleted (one counter row)."""
    params = {"workspace": scope.workspace, "agent": scope.agent, "kind": kind}
    return int(await conn.scalar(LIVE_OF_KIND, params) or 0)


async def workspace_usage(conn: AsyncConnection, workspace: str) -> int:
    """Bytes of the head packages of every skill in `workspace` that is not deleted.

    One counter row, kept by the triggers on `skills` (migration 0010).
    """
    return int(await conn.scalar(USED_BYTES, {"workspace": workspace}) or 0)


CONTROL_COLUMNS: Final = frozenset(
    {"auto_improve", "learning_paused", "use_paused", "pause_reason", "state", "deleted_at"}
)


async def set_controls(
    conn: AsyncConnection, skill: SkillRow, changes: Mapping[str, object], *, now: datetime
) -> None:
    """Change the skill's controls (and state); the head and its versions stay as they are."""
    unknown = set(changes) - CONTROL_COLUMNS
    if unknown:
        msg = f"not a control column: {sorted(unknown)}"
        raise ValueError(msg)
    await conn.execute(
        sa.update(Skill)
        .where(Skill.id == skill.id, Skill.workspace == skill.workspace)
        .values(updated_at=now, **changes)
    )


async def version_sources(
    conn: AsyncConnection, version_ids: Iterable[int]
) -> dict[int, list[str]]:
    """The sources of each version, in the order they were given."""
    ids = list(version_ids)
    out: dict[int, list[str]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = await conn.execute(
        sa.select(VersionSource.version_id, VersionSource.source)
        .where(VersionSource.version_id.in_(ids))
        .order_by(VersionSource.version_id, VersionSource.position)
    )
    for row in rows:
        out[row.version_id].append(row.source)
    return out


async def insert_event(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    skill_id: int | None,
    kind: str,
    version: int | None,
    manifest_hash: str | None,
    payload: dict[str, Any],
    now: datetime,
) -> None:
    """Write one outbox event in the caller's transaction."""
    await conn.execute(
        _INSERT_EVENT,
        {
            "workspace": scope.workspace,
            "agent": scope.agent,
            "slug": slug,
            "skill_id": skill_id,
            "kind": kind,
            "version": version,
            "manifest_hash": manifest_hash,
            "payload": payload,
            "created_at": now,
        },
    )
