"""The statements of a package write, built once and reused for every write.

A write runs the same dozen statements thousands of times. Building a SQLAlchemy statement
costs more client CPU than running it, so each one here is a module-level constant with
bind parameters: SQLAlchemy compiles it once and then only binds values. The statements
are also shaped so the locked transaction needs as few round trips as possible
(docs/write-path.md lists them one by one):

- `write_context`: the live skill, its head's manifest hash, whether any of the write's
  sources is excluded and whether the skill has a pending proposal, in one statement, so
  the compare-and-swap, the no-op check, the source check and the proposal bookkeeping need
  no further reads in the common case.
- `take_claims`: drops the write's claims and returns the unexpired ones (`DELETE ...
  RETURNING`), which is both the release and the claim check of `blobs.confirm`.
- `ensure_manifest`: `INSERT ... ON CONFLICT DO NOTHING RETURNING id`, then the entries in one
  multi-row insert; an existing manifest costs one more select instead.

The caller owns the transaction (and holds the workspace lock for all but `head_for_write`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import SkillRow
from registry.db.tables import (
    PENDING_PROPOSAL_STATUSES,
    BlobClaim,
    Event,
    Manifest,
    ManifestEntry,
    Proposal,
    ScanResult,
    Skill,
    SourceExclusion,
    UtcDateTime,
    Version,
    VersionSource,
)
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import ManifestEntry as DomainEntry
from registry.domain.model import Scope
from registry.errors import HeadConflict

_SKILL_COLUMNS: Final = tuple(getattr(Skill, f) for f in SkillRow.__slots__)
_ONE: Final = sa.select(sa.literal(1).label("one")).subquery("one")


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What the locked transaction knows after its first statement."""

    skill: SkillRow | None
    head_hash: str | None
    has_excluded_source: bool
    has_pending_proposal: bool


# One row whatever exists: the live skill (if any) outer-joined to a constant row.
_WRITE_CONTEXT: Final = sa.select(
    *_SKILL_COLUMNS,
    Version.manifest_hash.label("head_hash"),
    sa.select(sa.func.count())
    .where(
        SourceExclusion.workspace == sa.bindparam("workspace"),
        SourceExclusion.source.in_(sa.bindparam("sources", expanding=True)),
    )
    .scalar_subquery()
    .label("excluded"),
    sa.exists()
    .where(
        Proposal.workspace == Skill.workspace,
        Proposal.skill_id == Skill.id,
        Proposal.status.in_(PENDING_PROPOSAL_STATUSES),
    )
    .label("pending"),
).select_from(
    _ONE.outerjoin(
        Skill,
        sa.and_(
            Skill.workspace == sa.bindparam("workspace"),
            Skill.agent == sa.bindparam("agent"),
            Skill.slug == sa.bindparam("slug"),
            Skill.state != "deleted",
        ),
    ).outerjoin(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
)


async def write_context(
    conn: AsyncConnection, scope: Scope, slug: str, sources: Sequence[str]
) -> WriteContext:
    """The skill a write replaces and what its checks need, in one statement."""
    row = (
        await conn.execute(
            _WRITE_CONTEXT,
            {
                "workspace": scope.workspace,
                "agent": scope.agent,
                "slug": slug,
                "sources": list(dict.fromkeys(sources)),
            },
        )
    ).one()
    values = row._asdict()
    head_hash, excluded, pending = (
        values.pop("head_hash"),
        values.pop("excluded"),
        values.pop("pending"),
    )
    skill = None if values["id"] is None else SkillRow(**values)
    return WriteContext(skill, head_hash, bool(excluded), bool(pending))


_HEAD: Final = (
    sa.select(*_SKILL_COLUMNS, Version.manifest_id.label("head_manifest_id"))
    .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
    .where(
        Skill.workspace == sa.bindparam("workspace"),
        Skill.agent == sa.bindparam("agent"),
        Skill.slug == sa.bindparam("slug"),
        Skill.state != "deleted",
    )
)
_ENTRIES: Final = sa.select(
    ManifestEntry.path, ManifestEntry.digest, ManifestEntry.size, ManifestEntry.executable
).where(ManifestEntry.manifest_id == sa.bindparam("manifest_id"))
_CLEAN: Final = sa.select(ScanResult.digest).where(
    ScanResult.scanner == sa.bindparam("scanner"),
    ScanResult.digest.in_(sa.bindparam("digests", expanding=True)),
)


@dataclass(frozen=True, slots=True)
class Head:
    """The live skill and its head's package, as a write reads them before any claim."""

    skill: SkillRow
    manifest: DomainManifest


async def head_for_write(conn: AsyncConnection, scope: Scope, slug: str) -> Head | None:
    """The live skill of `slug` and its head's manifest (two statements), or None."""
    row = (
        await conn.execute(
            _HEAD, {"workspace": scope.workspace, "agent": scope.agent, "slug": slug}
        )
    ).first()
    if row is None:
        return None
    values = row._asdict()
    manifest_id = values.pop("head_manifest_id")
    rows = await conn.execute(_ENTRIES, {"manifest_id": manifest_id})
    manifest = DomainManifest(DomainEntry(r.path, r.digest, r.size, r.executable) for r in rows)
    return Head(SkillRow(**values), manifest)


async def clean_digests(conn: AsyncConnection, digests: Sequence[str], scanner: str) -> set[str]:
    """Those of `digests` that `scanner` already found clean."""
    if not digests:
        return set()
    rows = await conn.execute(_CLEAN, {"scanner": scanner, "digests": sorted(set(digests))})
    return {r.digest for r in rows}


_TAKE_CLAIMS: Final = (
    sa.delete(BlobClaim)
    .where(BlobClaim.write_id == sa.bindparam("write_id"))
    .returning(BlobClaim.digest, BlobClaim.expires_at)
)


async def take_claims(conn: AsyncConnection, write_id: str, now: datetime) -> frozenset[str]:
    """Drop the write's claims; return the digests whose claim had not expired."""
    rows = await conn.execute(_TAKE_CLAIMS, {"write_id": write_id})
    return frozenset(r.digest for r in rows if r.expires_at > now)


_FIND_MANIFEST: Final = sa.select(Manifest.id).where(
    Manifest.workspace == sa.bindparam("workspace"), Manifest.hash == sa.bindparam("hash")
)
_INSERT_ENTRIES: Final = sa.insert(ManifestEntry)
_INSERT_MANIFEST: Final = {
    name: insert(Manifest)
    .on_conflict_do_nothing(index_elements=["workspace", "hash"])
    .returning(Manifest.id)
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}


async def ensure_manifest(
    conn: AsyncConnection, workspace: str, manifest: DomainManifest, now: datetime
) -> int:
    """The id of `manifest` in `workspace`, inserting it and its rows if new."""
    inserted = await conn.scalar(
        _INSERT_MANIFEST[conn.dialect.name],
        {
            "workspace": workspace,
            "hash": manifest.hash,
            "file_count": manifest.file_count,
            "total_size": manifest.total_size,
            "created_at": now,
        },
    )
    if inserted is None:
        existing = await conn.scalar(
            _FIND_MANIFEST, {"workspace": workspace, "hash": manifest.hash}
        )
        assert existing is not None, "a conflicting manifest row exists"
        return int(existing)
    await conn.execute(
        _INSERT_ENTRIES,
        [
            {
                "manifest_id": inserted,
                "path": e.path,
                "digest": e.digest,
                "size": e.size,
                "executable": e.executable,
            }
            for e in manifest.entries
        ],
    )
    return int(inserted)


_INSERT_VERSION: Final = sa.insert(Version).returning(Version.id)
_INSERT_SOURCES: Final = sa.insert(VersionSource)
_MOVE_HEAD: Final = sa.update(Skill).where(
    Skill.id == sa.bindparam("skill_id"),
    Skill.workspace == sa.bindparam("skill_workspace"),
    Skill.head == sa.bindparam("expected_head"),
)
_CURRENT_HEAD: Final = sa.select(Skill.head).where(
    Skill.id == sa.bindparam("skill_id"), Skill.workspace == sa.bindparam("workspace")
)


_INSERT_SKILL: Final = sa.insert(Skill).returning(Skill.id)


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
        _INSERT_SKILL,
        {
            "workspace": scope.workspace,
            "agent": scope.agent,
            "slug": slug,
            "kind": kind,
            "head": 1,
            "head_size": size,
            "state": "active",
            "auto_improve": auto_improve,
            "learning_paused": False,
            "use_paused": False,
            "baseline_listing": listing,
            "baseline_version": listing_version,
            "baseline_manifest_hash": listing_hash,
            "created_at": now,
            "updated_at": now,
        },
    )
    assert skill_id is not None
    return int(skill_id)


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
    """Append an immutable version and its sources (two statements, one without sources)."""
    version_id = await conn.scalar(
        _INSERT_VERSION,
        {
            "workspace": workspace,
            "skill_id": skill_id,
            "number": number,
            "parent": parent,
            "origin": origin,
            "actor": actor,
            "message": message,
            "restored_from": restored_from,
            "manifest_id": manifest_id,
            "manifest_hash": manifest.hash,
            "file_count": manifest.file_count,
            "total_size": manifest.total_size,
            "write_id": write_id,
            "created_at": now,
        },
    )
    assert version_id is not None
    unique_sources = list(dict.fromkeys(sources))
    if unique_sources:
        await conn.execute(
            _INSERT_SOURCES,
            [
                {"version_id": version_id, "source": s, "workspace": workspace, "position": i}
                for i, s in enumerate(unique_sources)
            ],
        )
    return int(version_id)


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
    values: dict[str, Any] = {
        "skill_id": skill.id,
        "skill_workspace": skill.workspace,
        "expected_head": skill.head,
        "head": new_head,
        "head_size": size,
        "updated_at": now,
    }
    if auto_improve is not None:
        values["auto_improve"] = auto_improve
    if baseline is not None:
        values["baseline_listing"], values["baseline_version"] = baseline[0], baseline[1]
        values["baseline_manifest_hash"] = baseline[2]
    result = await conn.execute(_MOVE_HEAD, values)
    if result.rowcount != 1:
        # Only a writer that skipped the workspace lock can get here: the swap still refuses.
        current = await conn.scalar(
            _CURRENT_HEAD, {"skill_id": skill.id, "workspace": skill.workspace}
        )
        raise HeadConflict(skill.head, current)


def _append_statement() -> sa.Select[Any]:
    """PostgreSQL: the version, its sources, the head's move and the event, in one statement.

    Its parameters are named `p_*`: a parameter named like a column of a table that a nested
    INSERT or UPDATE writes would become one more value of that statement.

    Data-modifying CTEs run once each, whether or not the final SELECT reads them, and see
    one snapshot; the head's compare-and-swap reports through the `moved` count. SQLite has
    no data-modifying CTEs and runs the four statements one by one (`insert_version`,
    `move_head`, `skills.insert_event`).
    """
    # The version is inserted only if the head is still the expected one, so a lost
    # compare-and-swap inserts nothing (and meets no unique-number violation).
    expected = sa.exists().where(
        Skill.id == sa.bindparam("p_skill_id"),
        Skill.workspace == sa.bindparam("p_workspace"),
        Skill.head == sa.bindparam("p_expected_head"),
    )
    version_values: dict[str, sa.BindParameter[Any]] = {
        "workspace": sa.bindparam("p_workspace", type_=sa.String),
        "skill_id": sa.bindparam("p_skill_id", type_=sa.BigInteger),
        "number": sa.bindparam("p_number", type_=sa.Integer),
        "parent": sa.bindparam("p_parent", type_=sa.Integer),
        "origin": sa.bindparam("p_origin", type_=sa.String),
        "actor": sa.bindparam("p_actor", type_=sa.String),
        "message": sa.bindparam("p_message", type_=sa.Text),
        "restored_from": sa.bindparam("p_restored_from", type_=sa.Integer),
        "manifest_id": sa.bindparam("p_manifest_id", type_=sa.BigInteger),
        "manifest_hash": sa.bindparam("p_manifest_hash", type_=sa.String),
        "file_count": sa.bindparam("p_file_count", type_=sa.Integer),
        "total_size": sa.bindparam("p_total_size", type_=sa.BigInteger),
        "write_id": sa.bindparam("p_write_id", type_=sa.String),
        "created_at": sa.bindparam("p_now", type_=UtcDateTime()),
    }
    version = (
        postgresql.insert(Version)
        .from_select(list(version_values), sa.select(*version_values.values()).where(expected))
        .returning(Version.id)
        .cte("new_version")
    )
    listed = (
        sa.func.unnest(sa.bindparam("p_sources", type_=postgresql.ARRAY(sa.Text)))
        .table_valued("source", with_ordinality="position")
        .render_derived(name="listed")
    )
    sources = (
        postgresql.insert(VersionSource)
        .from_select(
            ["version_id", "source", "workspace", "position"],
            sa.select(
                version.c.id,
                listed.c.source,
                sa.bindparam("p_workspace", type_=sa.String),
                listed.c.position - 1,
            ).select_from(version.join(listed, sa.true())),
        )
        .cte("new_sources")
    )
    head = (
        sa.update(Skill)
        .where(
            Skill.id == sa.bindparam("p_skill_id"),
            Skill.workspace == sa.bindparam("p_workspace"),
            Skill.head == sa.bindparam("p_expected_head"),
        )
        .values(
            head=sa.bindparam("p_number"),
            head_size=sa.bindparam("p_total_size"),
            updated_at=sa.bindparam("p_now"),
            auto_improve=sa.func.coalesce(
                sa.bindparam("p_auto_improve", type_=sa.Boolean), Skill.auto_improve
            ),
            baseline_listing=sa.case(
                (
                    sa.bindparam("p_set_baseline", type_=sa.Boolean),
                    sa.bindparam("p_baseline_listing"),
                ),
                else_=Skill.baseline_listing,
            ),
            baseline_version=sa.case(
                (
                    sa.bindparam("p_set_baseline", type_=sa.Boolean),
                    sa.bindparam("p_baseline_version"),
                ),
                else_=Skill.baseline_version,
            ),
            baseline_manifest_hash=sa.case(
                (sa.bindparam("p_set_baseline", type_=sa.Boolean), sa.bindparam("p_baseline_hash")),
                else_=Skill.baseline_manifest_hash,
            ),
        )
        .returning(Skill.id)
        .cte("moved_head")
    )
    event_values: dict[str, sa.BindParameter[Any]] = {
        "workspace": sa.bindparam("p_workspace", type_=sa.String),
        "agent": sa.bindparam("p_agent", type_=sa.String),
        "slug": sa.bindparam("p_slug", type_=sa.String),
        "skill_id": sa.bindparam("p_skill_id", type_=sa.BigInteger),
        "kind": sa.bindparam("p_kind", type_=sa.String),
        "version": sa.bindparam("p_number", type_=sa.Integer),
        "manifest_hash": sa.bindparam("p_manifest_hash", type_=sa.String),
        "payload": sa.bindparam("p_payload", type_=sa.JSON),
        "created_at": sa.bindparam("p_now", type_=UtcDateTime()),
    }
    # One event per new version: none if the compare-and-swap was lost.
    event = (
        postgresql.insert(Event)
        .from_select(list(event_values), sa.select(*event_values.values()).select_from(version))
        .cte("new_event")
    )
    moved = sa.select(sa.func.count()).select_from(head).scalar_subquery()
    return (
        sa.select(sa.select(version.c.id).scalar_subquery().label("id"), moved.label("moved"))
        .add_cte(sources, nest_here=False)
        .add_cte(event, nest_here=False)
    )


_APPEND: Final = _append_statement()


async def append_version(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    skill: SkillRow,
    *,
    origin: str,
    actor: str,
    message: str,
    restored_from: int | None,
    manifest_id: int,
    manifest: DomainManifest,
    sources: Sequence[str],
    write_id: str,
    now: datetime,
    auto_improve: bool | None,
    baseline: tuple[str, int, str] | None,
    event_kind: str,
    payload: dict[str, Any],
) -> int:
    """PostgreSQL, an existing skill: append version `head + 1` in one round trip.

    Returns the new version's id; a head that moved under the lock is a `HeadConflict`.
    """
    listing, listing_version, listing_hash = baseline or (None, None, None)
    row = (
        await conn.execute(
            _APPEND,
            {
                "p_workspace": scope.workspace,
                "p_agent": scope.agent,
                "p_slug": slug,
                "p_skill_id": skill.id,
                "p_expected_head": skill.head,
                "p_number": skill.head + 1,
                "p_parent": skill.head,
                "p_origin": origin,
                "p_actor": actor,
                "p_message": message,
                "p_restored_from": restored_from,
                "p_manifest_id": manifest_id,
                "p_manifest_hash": manifest.hash,
                "p_file_count": manifest.file_count,
                "p_total_size": manifest.total_size,
                "p_write_id": write_id,
                "p_now": now,
                "p_sources": list(dict.fromkeys(sources)),
                "p_auto_improve": auto_improve,
                "p_set_baseline": baseline is not None,
                "p_baseline_listing": listing,
                "p_baseline_version": listing_version,
                "p_baseline_hash": listing_hash,
                "p_kind": event_kind,
                "p_payload": payload,
            },
        )
    ).one()
    if row.moved != 1:
        current = await conn.scalar(
            _CURRENT_HEAD, {"skill_id": skill.id, "workspace": skill.workspace}
        )
        raise HeadConflict(skill.head, current)
    return int(row.id)
