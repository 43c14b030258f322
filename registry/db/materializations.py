"""Queries on materialisation targets and the state applied to them.

Every query filters by workspace (a target belongs to one scope).

These functions take an open connection and never begin or commit: the caller owns the
transaction and, for writes, the workspace lock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.revocations import revoked_head
from registry.db.skills import in_scope
from registry.db.tables import (
    Event,
    Manifest,
    ManifestEntry,
    Materialization,
    MaterializationTarget,
    Skill,
    Version,
)
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import ManifestEntry as DomainEntry
from registry.domain.model import Scope
from registry.errors import StateConflict


@dataclass(frozen=True, slots=True)
class TargetRow:
    """A registered target."""

    target_id: str
    workspace: str
    agent: str
    path: str
    host: str
    mode: str
    created_at: datetime
    updated_at: datetime
    trust_state: str | None = None  # what its host last reported (docs/trust.md)
    trust_since: datetime | None = None
    trust_detail: str | None = None
    trust_seq: int | None = None
    seen_at: datetime | None = None  # when its host last asked for its state (a granularity)


@dataclass(frozen=True, slots=True)
class AppliedRow:
    """What a target holds for one skill, as last recorded."""

    target_id: str
    slug: str
    manifest_hash: str | None
    version: int | None
    outcome: str
    error: str | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class HeadRow:
    """A live skill of a scope with its head version: the desired state's raw material."""

    skill_id: int
    slug: str
    state: str
    use_paused: bool
    version: int
    manifest_id: int
    manifest_hash: str
    revoked: bool = False  # the head has a revocation in force (docs/revocation.md)

    @property
    def in_use(self) -> bool:
        """Agents load this skill: active, its use not paused, its head not revoked."""
        return self.state == "active" and not self.use_paused and not self.revoked


_TARGET_COLUMNS = tuple(getattr(MaterializationTarget, f) for f in TargetRow.__slots__)
_APPLIED_COLUMNS = tuple(getattr(Materialization, f) for f in AppliedRow.__slots__)


def _target(row: sa.Row[Any]) -> TargetRow:
    return TargetRow(**row._asdict())


def _applied(row: sa.Row[Any]) -> AppliedRow:
    return AppliedRow(**row._asdict())


async def target(conn: AsyncConnection, workspace: str, target_id: str) -> TargetRow | None:
    row = (
        await conn.execute(
            sa.select(*_TARGET_COLUMNS).where(
                MaterializationTarget.workspace == workspace,
                MaterializationTarget.target_id == target_id,
            )
        )
    ).first()
    return None if row is None else _target(row)


async def targets(
    conn: AsyncConnection, workspace: str | None = None, agent: str | None = None
) -> list[TargetRow]:
    """Registered targets, of one workspace (and agent) or, for operators, of all."""
    query = sa.select(*_TARGET_COLUMNS).order_by(
        MaterializationTarget.workspace,
        MaterializationTarget.agent,
        MaterializationTarget.path,
        MaterializationTarget.target_id,
    )
    if workspace is not None:
        query = query.where(MaterializationTarget.workspace == workspace)
    if agent is not None:
        query = query.where(MaterializationTarget.agent == agent)
    return [_target(r) for r in await conn.execute(query)]


async def target_id_taken(conn: AsyncConnection, target_id: str) -> bool:
    """True if any workspace registered `target_id`.

    The one query here that does not filter by workspace, because the constraint it
    checks does not: target ids are unique across workspaces. Only the boolean leaves
    it, so a caller learns that an id it already knows is taken, and nothing about where.
    """
    found = await conn.scalar(
        sa.select(MaterializationTarget.id).where(MaterializationTarget.target_id == target_id)
    )
    return found is not None


async def target_count(conn: AsyncConnection, workspace: str) -> int:
    """How many targets `workspace` has registered (`ix_materialization_targets_scope`)."""
    found = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(MaterializationTarget)
        .where(MaterializationTarget.workspace == workspace)
    )
    return int(found or 0)


async def save_target(conn: AsyncConnection, row: TargetRow) -> bool:
    """Insert the target, or refresh where it was seen; False if nothing changed."""
    existing = await target(conn, row.workspace, row.target_id)
    if existing is None:
        await conn.execute(
            sa.insert(MaterializationTarget).values(
                {f: getattr(row, f) for f in TargetRow.__slots__}
            )
        )
        return True
    if (existing.path, existing.host, existing.mode) == (row.path, row.host, row.mode):
        return False
    await conn.execute(
        sa.update(MaterializationTarget)
        .where(
            MaterializationTarget.workspace == row.workspace,
            MaterializationTarget.target_id == row.target_id,
        )
        .values(path=row.path, host=row.host, mode=row.mode, updated_at=row.updated_at)
    )
    return True


async def state_seq(conn: AsyncConnection, workspace: str, ignoring: Collection[str]) -> int:
    """The id of the workspace's newest event of a kind not in `ignoring` (0 if none).

    Served by `ix_events_workspace_id` read backwards: it reads the ignored events newer
    than the answer, and stops at the first other one.
    """
    found = await conn.scalar(
        sa.select(Event.id)
        .where(Event.workspace == workspace, Event.kind.not_in(sorted(ignoring)))
        .order_by(Event.id.desc())
        .limit(1)
    )
    return int(found or 0)


async def save_trust(
    conn: AsyncConnection,
    workspace: str,
    target_id: str,
    *,
    state: str,
    since: datetime,
    detail: str | None,
    seq: int | None,
) -> bool:
    """Record what the target's host says of its desired state; False if it never registered."""
    done = await conn.execute(
        sa.update(MaterializationTarget)
        .where(
            MaterializationTarget.workspace == workspace,
            MaterializationTarget.target_id == target_id,
        )
        .values(trust_state=state, trust_since=since, trust_detail=detail, trust_seq=seq)
        .returning(MaterializationTarget.id)
    )
    return done.first() is not None


async def applied(
    conn: AsyncConnection, scope: Scope, target_ids: Iterable[str]
) -> list[AppliedRow]:
    """The recorded state of every skill on the given targets of `scope`."""
    ids = sorted(set(target_ids))
    if not ids:
        return []
    rows = await conn.execute(
        sa.select(*_APPLIED_COLUMNS)
        .where(
            Materialization.workspace == scope.workspace,
            Materialization.agent == scope.agent,
            Materialization.target_id.in_(ids),
        )
        .order_by(Materialization.target_id, Materialization.slug)
    )
    return [_applied(r) for r in rows]


async def heads(conn: AsyncConnection, scope: Scope) -> list[HeadRow]:
    """Every skill of `scope` that is not deleted, with its head version, by slug."""
    rows = await conn.execute(
        sa.select(
            Skill.id.label("skill_id"),
            Skill.slug,
            Skill.state,
            Skill.use_paused,
            Version.number.label("version"),
            Version.manifest_id,
            Version.manifest_hash,
            revoked_head().label("revoked"),
        )
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .where(in_scope(scope), Skill.state != "deleted", Version.workspace == scope.workspace)
        .order_by(Skill.slug)
    )
    return [HeadRow(**r._asdict()) for r in rows]


async def manifests(
    conn: AsyncConnection, workspace: str, manifest_ids: Iterable[int]
) -> dict[int, DomainManifest]:
    """The manifests stored under `manifest_ids` (of `workspace`), in one query."""
    ids = sorted(set(manifest_ids))
    if not ids:
        return {}
    rows = await conn.execute(
        sa.select(
            ManifestEntry.manifest_id,
            ManifestEntry.path,
            ManifestEntry.digest,
            ManifestEntry.size,
            ManifestEntry.executable,
        )
        .join(Manifest, Manifest.id == ManifestEntry.manifest_id)
        .where(Manifest.workspace == workspace, ManifestEntry.manifest_id.in_(ids))
    )
    entries: dict[int, list[DomainEntry]] = defaultdict(list)
    for r in rows:
        entries[r.manifest_id].append(DomainEntry(r.path, r.digest, r.size, r.executable))
    return {manifest_id: DomainManifest(found) for manifest_id, found in entries.items()}


async def record(
    conn: AsyncConnection,
    scope: Scope,
    target_id: str,
    slug: str,
    *,
    expected: AppliedRow | None,
    manifest_hash: str | None,
    version: int | None,
    outcome: str,
    error: str | None,
    now: datetime,
) -> bool:
    """Compare-and-swap the recorded state of `slug` on a target; False if already so.

    `expected` is the row the caller read before it acted. The swap succeeds if the row
    is still that one, and is a no-op if it already holds the new values (a retried
    transaction whose first commit happened). Anything else means another reconciler
    recorded meanwhile: `StateConflict`.
    """
    where = sa.and_(
        Materialization.target_id == target_id,
        Materialization.workspace == scope.workspace,
        Materialization.agent == scope.agent,
        Materialization.slug == slug,
    )
    current = (await conn.execute(sa.select(*_APPLIED_COLUMNS).where(where))).first()
    now_row = None if current is None else _applied(current)
    new = (manifest_hash, version, outcome, error)
    if (
        now_row is not None
        and (
            now_row.manifest_hash,
            now_row.version,
            now_row.outcome,
            now_row.error,
        )
        == new
    ):
        return False
    if _key(now_row) != _key(expected):
        raise StateConflict(f"record the materialisation of {slug!r}", "changed meanwhile")
    values = {
        "manifest_hash": manifest_hash,
        "version": version,
        "outcome": outcome,
        "error": error,
        "updated_at": now,
    }
    if now_row is None:
        await conn.execute(
            sa.insert(Materialization).values(
                target_id=target_id,
                workspace=scope.workspace,
                agent=scope.agent,
                slug=slug,
                **values,
            )
        )
    else:
        await conn.execute(sa.update(Materialization).where(where).values(**values))
    return True


def _key(row: AppliedRow | None) -> tuple[object, ...] | None:
    if row is None:
        return None
    return (row.manifest_hash, row.version, row.outcome, row.error)


async def scope_known(conn: AsyncConnection, scope: Scope) -> bool:
    """True if `scope` has a skill (live or not: history stays) or a registered target."""
    skills = sa.select(Skill.id).where(
        Skill.workspace == scope.workspace, Skill.agent == scope.agent
    )
    targets = sa.select(MaterializationTarget.id).where(
        MaterializationTarget.workspace == scope.workspace,
        MaterializationTarget.agent == scope.agent,
    )
    return bool(await conn.scalar(sa.select(sa.or_(skills.exists(), targets.exists()))))


async def forget_target(conn: AsyncConnection, workspace: str, target_id: str) -> int:
    """Delete a target's row and its records (they cascade); the records it had."""
    records = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(Materialization)
        .where(Materialization.target_id == target_id)
    )
    await conn.execute(sa.delete(Materialization).where(Materialization.target_id == target_id))
    await conn.execute(
        sa.delete(MaterializationTarget).where(
            MaterializationTarget.workspace == workspace,
            MaterializationTarget.target_id == target_id,
        )
    )
    return int(records or 0)
