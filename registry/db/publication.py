"""The statements of a package write, built once and reused for every write.

A write runs the same dozen statements thousands of times. Building a SQLAlchemy statement
costs more client CPU than running it, so each one here is a module-level constant with
bind parameters: SQLAlchemy builds it once and takes its compiled form from its cache after
that. The statements are also shaped so the locked transaction needs as few statements as
possible (docs/write-path.md lists them one by one):

- `head_for_write`: the write's read before any claim, in one statement (the head's
  entries and the digests already scanned clean as JSON aggregates).
- `write_context`: the live skill, its head's manifest hash, whether any of the write's
  sources is excluded, whether the skill has a pending proposal and, when the write may
  need them, the capacity and quota counters, in one statement, so the compare-and-swap,
  the no-op check, the source check, the proposal bookkeeping, capacity and quota need no
  further reads in the common case.
- `ensure_manifest`: `INSERT ... ON CONFLICT DO NOTHING RETURNING id`, then the entries in
  one multi-row insert; an existing manifest costs one more select instead.
- `insert_skill`, `insert_version`: a new skill's row, a version and its sources.

The head's compare-and-swap is `heads.py`'s; the claims' release and the blob check are
`blobs.py`'s. The caller owns the transaction (and holds the workspace lock for all but
`head_for_write`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from registry.db.skills import LIVE_OF_KIND, USED_BYTES, SkillRow
from registry.db.tables import (
    PENDING_PROPOSAL_STATUSES,
    Manifest,
    ManifestEntry,
    Proposal,
    ScanResult,
    Skill,
    SourceExclusion,
    Version,
    VersionSource,
)
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import ManifestEntry as DomainEntry
from registry.domain.model import Scope

_SKILL_COLUMNS: Final = tuple(getattr(Skill, f) for f in SkillRow.__slots__)
_LOOK_ALIKE: Final = aliased(Skill, name="look_alike")
_ONE: Final = sa.select(sa.literal(1).label("one")).subquery("one")


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What the locked transaction knows after its first statement."""

    skill: SkillRow | None
    head_hash: str | None
    has_excluded_source: bool
    has_pending_proposal: bool
    # The new skill's slug skeleton, and the slug of the live skill of the scope that
    # already has it (read only when the slug has no live skill): a look-alike.
    skeleton: str = ""
    look_alike: str | None = None
    # The capacity and quota figures, read only when the write may need them: skills of
    # the new skill's kind in the scope (no live skill yet), and the workspace's bytes in
    # use (the package grows), each one row of the counters the triggers on `skills`
    # keep (`ScopeCount`, `WorkspaceUsage`). None: not read.
    live_of_kind: int | None = None
    usage: int | None = None


# One row whatever exists: the live skill of the bound slug (if any) and its head version,
# outer-joined to a constant row.
_LIVE_WITH_HEAD: Final = _ONE.outerjoin(
    Skill,
    sa.and_(
        Skill.workspace == sa.bindparam("workspace"),
        Skill.agent == sa.bindparam("agent"),
        Skill.slug == sa.bindparam("slug"),
        Skill.state != "deleted",
    ),
).outerjoin(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))


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
    sa.case((Skill.id.is_(None), LIVE_OF_KIND.scalar_subquery())).label("live_of_kind"),
    sa.case(
        (
            sa.bindparam("total_size", type_=sa.BigInteger) > sa.func.coalesce(Skill.head_size, 0),
            USED_BYTES.scalar_subquery(),
        )
    ).label("usage"),
    sa.case(
        (
            Skill.id.is_(None),
            sa.select(_LOOK_ALIKE.slug)
            .where(
                _LOOK_ALIKE.workspace == sa.bindparam("workspace"),
                _LOOK_ALIKE.agent == sa.bindparam("agent"),
                _LOOK_ALIKE.slug_skeleton == sa.bindparam("skeleton"),
                _LOOK_ALIKE.state != "deleted",
            )
            .limit(1)
            .scalar_subquery(),
        )
    ).label("look_alike"),
).select_from(_LIVE_WITH_HEAD)


async def write_context(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    sources: Sequence[str],
    *,
    kind: str,
    total_size: int,
    skeleton: str,
) -> WriteContext:
    """Read the skill a write replaces and what its checks need, in one statement.

    `kind` and `total_size` are the new package's: the capacity count is read for a new
    skill of `kind`, the workspace's usage if `total_size` exceeds the head's size, and
    the live skill whose slug has `skeleton` (the new slug's) for a new skill
    (`uq_skills_live_skeleton` finds it). The locked transaction runs it first, once the
    lock is held (`publish._publish`).
    """
    params = {
        "workspace": scope.workspace,
        "agent": scope.agent,
        "slug": slug,
        "sources": list(dict.fromkeys(sources)),
        "kind": kind,
        "total_size": total_size,
        "skeleton": skeleton,
    }
    values = (await conn.execute(_WRITE_CONTEXT, params)).one()._asdict()
    head_hash, excluded, pending = (
        values.pop("head_hash"),
        values.pop("excluded"),
        values.pop("pending"),
    )
    live_of_kind, usage = values.pop("live_of_kind"), values.pop("usage")
    look_alike = values.pop("look_alike")
    skill = None if values["id"] is None else SkillRow(**values)
    return WriteContext(
        skill,
        head_hash,
        bool(excluded),
        bool(pending),
        live_of_kind=None if live_of_kind is None else int(live_of_kind),
        usage=None if usage is None else int(usage),
        skeleton=skeleton,
        look_alike=look_alike,
    )


@dataclass(frozen=True, slots=True)
class Head:
    """The live skill and its head's package, as a write reads them before any claim."""

    skill: SkillRow
    manifest: DomainManifest


async def head_for_write(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    digests: Sequence[str] = (),
    scanner: str = "",
) -> tuple[Head | None, set[str]]:
    """The live skill of `slug` with its head's manifest (or None), and the clean digests.

    The clean digests are those of `digests` that `scanner` already found clean. One
    statement on either database (the entries and the clean digests as JSON aggregates),
    so it needs no transaction of its own (`UnitOfWork.read_one`). The JSON aggregates
    are each database's own spelling of the same statement (`json_agg`,
    `json_group_array`).
    """
    row = (
        await conn.execute(
            _HEAD_IN_ONE[conn.dialect.name],
            {
                "workspace": scope.workspace,
                "agent": scope.agent,
                "slug": slug,
                "scanner": scanner,
                "digests": sorted(set(digests)),
            },
        )
    ).one()
    values = row._asdict()
    entries, clean = values.pop("head_entries"), values.pop("clean")
    head = None
    if values["id"] is not None:
        manifest = DomainManifest(
            DomainEntry(path, digest, int(size), bool(executable))
            for path, digest, size, executable in entries or ()
        )
        head = Head(SkillRow(**values), manifest)
    return head, set(clean or ())


def _head_statement(dialect: str) -> sa.Select[Any]:
    entry_columns = (
        ManifestEntry.path,
        ManifestEntry.digest,
        ManifestEntry.size,
        ManifestEntry.executable,
    )
    if dialect == "postgresql":
        listed = sa.func.json_agg(sa.func.json_build_array(*entry_columns))
        clean_agg = sa.func.json_agg(ScanResult.digest)
        wanted = ScanResult.digest == sa.any_(
            sa.bindparam("digests", type_=postgresql.ARRAY(sa.Text))
        )
    else:
        listed = sa.func.json_group_array(sa.func.json_array(*entry_columns))
        clean_agg = sa.func.json_group_array(ScanResult.digest)
        # `json_each` rather than an expanding IN: one statement text for any count.
        wanted = ScanResult.digest.in_(
            sa.select(sa.column("value")).select_from(
                sa.func.json_each(sa.bindparam("digests", type_=sa.JSON))
            )
        )
    entries = sa.select(listed).where(ManifestEntry.manifest_id == Version.manifest_id)
    clean = sa.select(clean_agg).where(ScanResult.scanner == sa.bindparam("scanner"), wanted)
    return sa.select(
        *_SKILL_COLUMNS,
        sa.type_coerce(entries.scalar_subquery(), sa.JSON).label("head_entries"),
        sa.type_coerce(clean.scalar_subquery(), sa.JSON).label("clean"),
    ).select_from(_LIVE_WITH_HEAD)


_HEAD_IN_ONE: Final = {name: _head_statement(name) for name in ("postgresql", "sqlite")}


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
    inserted = (
        await conn.execute(
            _INSERT_MANIFEST[conn.dialect.name],
            {
                "workspace": workspace,
                "hash": manifest.hash,
                "file_count": manifest.file_count,
                "total_size": manifest.total_size,
                "created_at": now,
            },
        )
    ).scalar()
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


_INSERT_SKILL: Final = sa.insert(Skill).returning(Skill.id)


async def insert_skill(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    skeleton: str,
    kind: str,
    size: int,
    now: datetime,
    auto_improve: bool = True,
    baseline: tuple[str, int, str] | None = None,
) -> int:
    """Create a skill row at head 1 (its first version is inserted next, same transaction)."""
    listing, listing_version, listing_hash = baseline or (None, None, None)
    skill_id = (
        await conn.execute(
            _INSERT_SKILL,
            {
                "workspace": scope.workspace,
                "agent": scope.agent,
                "slug": slug,
                "slug_skeleton": skeleton,
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
    ).scalar()
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
    principal: str,
    message: str,
    restored_from: int | None,
    manifest_id: int,
    manifest: DomainManifest,
    sources: Sequence[str],
    write_id: str | None,
    now: datetime,
) -> int:
    """Append an immutable version and its sources (two statements, one without sources)."""
    version_id = (
        await conn.execute(
            _INSERT_VERSION,
            {
                "workspace": workspace,
                "skill_id": skill_id,
                "number": number,
                "parent": parent,
                "origin": origin,
                "actor": actor,
                "principal": principal,
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
    ).scalar()
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
