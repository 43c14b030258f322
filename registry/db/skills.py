"""Queries on skills, versions and manifests. Every query filters by workspace.

These functions take an open connection and never begin or commit: the caller owns the
transaction (and, for writes, the workspace lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Event, Manifest, ManifestEntry, Skill, Version, VersionSource
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import ManifestEntry as DomainEntry
from registry.domain.model import Scope
from registry.errors import HeadConflict


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


_SKILL_COLUMNS = tuple(getattr(Skill, f) for f in SkillRow.__slots__)
_VERSION_COLUMNS = tuple(getattr(Version, f) for f in VersionRow.__slots__)


def _skill(row: sa.Row[Any]) -> SkillRow:
    return SkillRow(**row._asdict())


def _version(row: sa.Row[Any]) -> VersionRow:
    return VersionRow(**row._asdict())


def in_scope(scope: Scope) -> sa.ColumnElement[bool]:
    """The filter every skill query carries."""
    return sa.and_(Skill.workspace == scope.workspace, Skill.agent == scope.agent)


async def live_skill(conn: AsyncConnection, scope: Scope, slug: str) -> SkillRow | None:
    """The skill of `scope` named `slug` that is not deleted, if any."""
    row = (
        await conn.execute(
            sa.select(*_SKILL_COLUMNS).where(
                in_scope(scope), Skill.slug == slug, Skill.state != "deleted"
            )
        )
    ).first()
    return None if row is None else _skill(row)


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
    row = (
        await conn.execute(
            sa.select(*_VERSION_COLUMNS).where(
                Version.workspace == skill.workspace,
                Version.skill_id == skill.id,
                Version.number == number,
            )
        )
    ).first()
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
    rows = await conn.execute(
        sa.select(
            ManifestEntry.path, ManifestEntry.digest, ManifestEntry.size, ManifestEntry.executable
        )
        .join(Manifest, Manifest.id == ManifestEntry.manifest_id)
        .where(Manifest.workspace == workspace, ManifestEntry.manifest_id == manifest_id)
    )
    return DomainManifest(DomainEntry(r.path, r.digest, r.size, r.executable) for r in rows)


async def count_live(conn: AsyncConnection, scope: Scope, kind: str) -> int:
    """Skills of one capacity budget in `scope` that are not deleted."""
    count = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(Skill)
        .where(in_scope(scope), Skill.kind == kind, Skill.state != "deleted")
    )
    return int(count or 0)


async def workspace_usage(conn: AsyncConnection, workspace: str) -> int:
    """Bytes of the head packages of every skill in `workspace` that is not deleted."""
    used = await conn.scalar(
        sa.select(sa.func.coalesce(sa.func.sum(Skill.head_size), 0)).where(
            Skill.workspace == workspace, Skill.state != "deleted"
        )
    )
    return int(used or 0)


async def ensure_manifest(
    conn: AsyncConnection, workspace: str, manifest: DomainManifest, now: datetime
) -> int:
    """The id of `manifest` in `workspace`, inserting it and its rows if new.

    Callers hold the workspace lock, so no other transaction inserts the same
    (workspace, hash) concurrently.
    """
    existing = await conn.scalar(
        sa.select(Manifest.id).where(
            Manifest.workspace == workspace, Manifest.hash == manifest.hash
        )
    )
    if existing is not None:
        return int(existing)
    manifest_id = await conn.scalar(
        sa.insert(Manifest)
        .values(
            workspace=workspace,
            hash=manifest.hash,
            file_count=manifest.file_count,
            total_size=manifest.total_size,
            created_at=now,
        )
        .returning(Manifest.id)
    )
    assert manifest_id is not None
    await conn.execute(
        sa.insert(ManifestEntry),
        [
            {
                "manifest_id": manifest_id,
                "path": e.path,
                "digest": e.digest,
                "size": e.size,
                "executable": e.executable,
            }
            for e in manifest.entries
        ],
    )
    return int(manifest_id)


async def insert_skill(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    kind: str,
    size: int,
    now: datetime,
    auto_improve: bool = True,
    baseline: tuple[str, int, str] | None = None,
) -> int:
    """Create a skill row at head 1 (its first version is inserted next, same transaction)."""
    listing, listing_version, listing_hash = baseline or (None, None, None)
    skill_id = await conn.scalar(
        sa.insert(Skill)
        .values(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            kind=kind,
            head=1,
            head_size=size,
            state="active",
            auto_improve=auto_improve,
            learning_paused=False,
            use_paused=False,
            baseline_listing=listing,
            baseline_version=listing_version,
            baseline_manifest_hash=listing_hash,
            created_at=now,
            updated_at=now,
        )
        .returning(Skill.id)
    )
    assert skill_id is not None
    return int(skill_id)


async def move_head(
    conn: AsyncConnection,
    skill: SkillRow,
    *,
    new_head: int,
    size: int,
    now: datetime,
    auto_improve: bool | None = None,
    baseline: tuple[str, int, str] | None = None,
) -> None:
    """Compare-and-swap the head from `skill.head` to `new_head`.

    The workspace lock already serialises writers; the `WHERE head = :expected` is the
    second line of defence and makes the swap read like one. `auto_improve` (unless None)
    and `baseline` (unless None) change with the head.
    """
    changes: dict[str, object] = {}
    if auto_improve is not None:
        changes["auto_improve"] = auto_improve
    if baseline is not None:
        listing, listing_version, listing_hash = baseline
        changes |= {
            "baseline_listing": listing,
            "baseline_version": listing_version,
            "baseline_manifest_hash": listing_hash,
        }
    result = await conn.execute(
        sa.update(Skill)
        .where(
            Skill.id == skill.id,
            Skill.workspace == skill.workspace,
            Skill.head == skill.head,
        )
        .values(head=new_head, head_size=size, updated_at=now, **changes)
    )
    if result.rowcount != 1:
        # Only a writer that skipped the workspace lock can get here: the swap still refuses.
        current = await conn.scalar(
            sa.select(Skill.head).where(Skill.id == skill.id, Skill.workspace == skill.workspace)
        )
        raise HeadConflict(skill.head, current)


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


async def insert_version(
    conn: AsyncConnection,
    skill_id: int,
    workspace: str,
    *,
    number: int,
    parent: int | None,
    origin: str,
    actor: str,
    message: str,
    restored_from: int | None,
    manifest_id: int,
    manifest: DomainManifest,
    sources: Sequence[str],
    write_id: str | None,
    now: datetime,
) -> int:
    """Append an immutable version (and its sources)."""
    version_id = await conn.scalar(
        sa.insert(Version)
        .values(
            workspace=workspace,
            skill_id=skill_id,
            number=number,
            parent=parent,
            origin=origin,
            actor=actor,
            message=message,
            restored_from=restored_from,
            manifest_id=manifest_id,
            manifest_hash=manifest.hash,
            file_count=manifest.file_count,
            total_size=manifest.total_size,
            write_id=write_id,
            created_at=now,
        )
        .returning(Version.id)
    )
    assert version_id is not None
    unique_sources = list(dict.fromkeys(sources))
    if unique_sources:
        await conn.execute(
            sa.insert(VersionSource),
            [
                {"version_id": version_id, "source": s, "workspace": workspace, "position": i}
                for i, s in enumerate(unique_sources)
            ],
        )
    return int(version_id)


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
        sa.insert(Event).values(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            skill_id=skill_id,
            kind=kind,
            version=version,
            manifest_hash=manifest_hash,
            payload=payload,
            created_at=now,
        )
    )
