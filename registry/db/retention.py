"""The queries of retention: versions of a skill, what protects them, and pruning.

What may hold on to a version or a manifest is discovered from the table metadata at run
time, so a table added later (proposals, say) protects what it names without this module
knowing it:

- a manifest is deleted only when no row of any table with a foreign key to
  `manifests.id` names it (its own `manifest_entries` rows excepted: they are its content);
- a version is kept when a row of any table with a foreign key to `versions.id` names it
  (its own `version_sources` rows excepted), or when a table that names versions by
  number declares so in its `info` (see `PINS_VERSIONS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import (
    PENDING_PROPOSAL_STATUSES,
    Base,
    Blob,
    Manifest,
    ManifestEntry,
    Proposal,
    Skill,
    Version,
)

# A table that names versions by number (not by foreign key) declares it in its `info`,
# for example `{"pins_versions": {"skill": "skill_id", "version": "base_version",
# "where": "status = 'open'"}}` in `__table_args__`; retention then keeps every version
# such a row names (`where`, optional, is SQL that selects the rows that count).
PINS_VERSIONS: Final = "pins_versions"

_OWN_MANIFEST_ROWS: Final = frozenset({"manifest_entries"})
# Rows that belong to their version and go with it (ON DELETE CASCADE).
_OWN_VERSION_ROWS: Final = frozenset({"version_sources", "content_approvals", "attestations"})


@dataclass(frozen=True, slots=True)
class SkillRef:
    id: int
    workspace: str
    agent: str
    slug: str
    head: int


@dataclass(frozen=True, slots=True)
class ProposalRef:
    id: int
    closed_at: datetime
    manifest_id: int


@dataclass(frozen=True, slots=True)
class VersionRef:
    id: int
    number: int
    created_at: datetime
    manifest_id: int
    manifest_hash: str


def holders(metadata: sa.MetaData, target: str, own: frozenset[str]) -> list[sa.Column[int]]:
    """Every column, outside the `own` tables, with a foreign key to `target` (`table.col`)."""
    return [
        fk.parent
        for table in metadata.sorted_tables
        if table.name not in own
        for fk in table.foreign_keys
        if fk.target_fullname == target
    ]


async def skills_after(conn: AsyncConnection, after_id: int, limit: int) -> list[SkillRef]:
    """The next `limit` skills (every workspace, every state) by id (keyset)."""
    rows = await conn.execute(
        sa.select(Skill.id, Skill.workspace, Skill.agent, Skill.slug, Skill.head)
        .where(Skill.id > after_id)
        .order_by(Skill.id)
        .limit(limit)
    )
    return [SkillRef(*row) for row in rows]


async def skill(conn: AsyncConnection, skill_id: int) -> SkillRef | None:
    row = (
        await conn.execute(
            sa.select(Skill.id, Skill.workspace, Skill.agent, Skill.slug, Skill.head).where(
                Skill.id == skill_id
            )
        )
    ).first()
    return None if row is None else SkillRef(*row)


async def versions_of(conn: AsyncConnection, ref: SkillRef) -> list[VersionRef]:
    rows = await conn.execute(
        sa.select(
            Version.id,
            Version.number,
            Version.created_at,
            Version.manifest_id,
            Version.manifest_hash,
        )
        .where(Version.workspace == ref.workspace, Version.skill_id == ref.id)
        .order_by(Version.number)
    )
    return [VersionRef(*row) for row in rows]


async def closed_proposals_of(conn: AsyncConnection, ref: SkillRef) -> list[ProposalRef]:
    """The decided, superseded, stale-closed and withdrawn proposals of one skill, by id."""
    rows = await conn.execute(
        sa.select(Proposal.id, Proposal.updated_at, Proposal.manifest_id)
        .where(
            Proposal.workspace == ref.workspace,
            Proposal.skill_id == ref.id,
            Proposal.status.not_in(PENDING_PROPOSAL_STATUSES),
        )
        .order_by(Proposal.id)
    )
    return [ProposalRef(*row) for row in rows]


async def delete_proposals(conn: AsyncConnection, ref: SkillRef, ids: Sequence[int]) -> int:
    """Delete closed proposals of `ref` (never a pending one)."""
    if not ids:
        return 0
    result = await conn.execute(
        sa.delete(Proposal).where(
            Proposal.workspace == ref.workspace,
            Proposal.skill_id == ref.id,
            Proposal.id.in_(list(ids)),
            Proposal.status.not_in(PENDING_PROPOSAL_STATUSES),
        )
    )
    return int(result.rowcount)


async def protected_numbers(
    conn: AsyncConnection, ref: SkillRef, metadata: sa.MetaData | None = None
) -> set[int]:
    """Versions of `ref` that retention never prunes besides the head.

    A version whose package is a marketplace baseline of any skill in the workspace (an
    installed copy compares against it), a version another table's row names by foreign
    key, and a version a `PINS_VERSIONS` table names by number.

    Installed copies live in other workspaces than the catalog listing they follow, so a
    listing's versions are also kept when they are the baseline of a copy of that listing
    in any workspace (docs/marketplace.md): the next update merges against it. So are
    the listing versions pending update proposals bring: deciding one moves the copy's
    baseline there. Only the baseline hashes are read across workspaces, to decide what
    to keep.
    """
    mine = sa.and_(Version.workspace == ref.workspace, Version.skill_id == ref.id)
    proposed = Proposal.baseline["manifest_hash"].as_string()
    baselines = sa.union(
        sa.select(Skill.baseline_manifest_hash).where(
            sa.or_(Skill.workspace == ref.workspace, Skill.baseline_listing == ref.slug),
            Skill.baseline_manifest_hash.is_not(None),
        ),
        sa.select(proposed).where(
            Proposal.status.in_(PENDING_PROPOSAL_STATUSES),
            sa.or_(
                Proposal.workspace == ref.workspace,
                Proposal.baseline["listing"].as_string() == ref.slug,
            ),
            proposed.is_not(None),
        ),
    )
    numbers = set(
        (
            await conn.execute(
                sa.select(Version.number).where(mine, Version.manifest_hash.in_(baselines))
            )
        ).scalars()
    )
    metadata = metadata or Base.metadata
    for column in holders(metadata, "versions.id", _OWN_VERSION_ROWS):
        named = sa.select(Version.number).where(mine, sa.exists().where(column == Version.id))
        numbers.update((await conn.execute(named)).scalars())
    for table in metadata.sorted_tables:
        pin = table.info.get(PINS_VERSIONS)
        if not pin:
            continue
        query = sa.select(table.c[pin["version"]]).where(table.c[pin["skill"]] == ref.id)
        if pin.get("where"):
            query = query.where(sa.text(pin["where"]))
        numbers.update(n for n in (await conn.execute(query)).scalars() if n is not None)
    return numbers


async def delete_versions(conn: AsyncConnection, ref: SkillRef, numbers: Sequence[int]) -> int:
    """Delete the versions (their sources cascade); never the head."""
    doomed = [n for n in numbers if n != ref.head]
    if not doomed:
        return 0
    result = await conn.execute(
        sa.delete(Version).where(
            Version.workspace == ref.workspace,
            Version.skill_id == ref.id,
            Version.number.in_(doomed),
        )
    )
    return int(result.rowcount)


async def unreferenced_manifests(
    conn: AsyncConnection,
    workspace: str,
    manifest_ids: Sequence[int],
    metadata: sa.MetaData | None = None,
    *,
    ignoring: Mapping[str, Sequence[int]] | None = None,
) -> list[int]:
    """Those of `manifest_ids` that no row of any table (own entries aside) names.

    Rows whose ids are in `ignoring[table name]` do not count (a dry run asks what
    pruning those versions and proposals would free).
    """
    if not manifest_ids:
        return []
    query = sa.select(Manifest.id).where(
        Manifest.workspace == workspace, Manifest.id.in_(sorted(set(manifest_ids)))
    )
    metadata = metadata or Base.metadata
    for column in holders(metadata, "manifests.id", _OWN_MANIFEST_ROWS):
        named = sa.exists().where(column == Manifest.id)
        ignored = (ignoring or {}).get(column.table.name)
        if ignored:
            named = named.where(column.table.c.id.not_in(list(ignored)))
        query = query.where(~named)
    return sorted((await conn.execute(query)).scalars())


async def digests_of(conn: AsyncConnection, manifest_ids: Sequence[int]) -> list[str]:
    if not manifest_ids:
        return []
    rows = await conn.execute(
        sa.select(ManifestEntry.digest)
        .where(ManifestEntry.manifest_id.in_(manifest_ids))
        .distinct()
        .order_by(ManifestEntry.digest)
    )
    return list(rows.scalars())


async def delete_manifests(conn: AsyncConnection, manifest_ids: Sequence[int]) -> int:
    """Delete manifests (their entries cascade)."""
    if not manifest_ids:
        return 0
    result = await conn.execute(sa.delete(Manifest).where(Manifest.id.in_(manifest_ids)))
    return int(result.rowcount)


async def touch_blobs(conn: AsyncConnection, digests: Sequence[str], now: datetime) -> None:
    """Restart the grace period of blobs a prune just unreferenced.

    A reader that looked up a pruned version a moment ago, or a writer that deduplicated
    against it, gets the grace period to finish before GC may take the bytes. On
    PostgreSQL the rows are locked in digest order first, the order every other locker
    uses, so this cannot deadlock with a publish or with GC.
    """
    ordered = sorted(set(digests))
    if not ordered:
        return
    if conn.dialect.name == "postgresql":
        await conn.execute(
            sa.select(Blob.digest)
            .where(Blob.digest.in_(ordered))
            .order_by(Blob.digest)
            .with_for_update(key_share=True)
        )
    await conn.execute(sa.update(Blob).where(Blob.digest.in_(ordered)).values(touched_at=now))
