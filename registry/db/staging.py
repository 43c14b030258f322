"""PostgreSQL: the locked transaction's writes folded into one round trip.

After the write context (`publication.write_context`), a package write's locked transaction
has the same writes to make every time: drop its blob claims and check every referenced
blob (`blobs.confirm`), make sure its manifest exists (`publication.ensure_manifest`), and
for a publish append the version: its row and sources, the head's compare-and-swap and the
event (or, for a new skill, the skill row first). On PostgreSQL each of these is one
data-modifying CTE of a single statement, so the lock is held for three round trips in all
(the context, this statement, the commit) instead of one per step. SQLite, which has no
data-modifying CTEs and no network between client and database, runs the steps one by one
(`stage` below; `publication.insert_skill`, `insert_version`, `move_head`).

What the statement does, in order of the rows it touches (docs/write-path.md):

- `taken`: `DELETE FROM blob_claims WHERE write_id = ... RETURNING digest, expires_at`,
  the release of the write's claims and the "claim still held" input of the blob check.
- `found`: every referenced blob row, locked in digest order (`FOR NO KEY UPDATE` if the
  write uploaded something, else `FOR SHARE`), so that GC's delete, which locks the row
  `FOR UPDATE`, waits for this commit and two publishes sharing digests cannot deadlock.
- `made_live`: the uploads found `pending` become `live`, through a join on `found`, so
  every row it updates is one `found` has locked already.
- `new_manifest`, `new_entries`: `INSERT ... ON CONFLICT DO NOTHING RETURNING id`, and the
  entries from arrays (`unnest`) only if the manifest is new, joined to `found` so that a
  blob row GC has removed fails the blob check (and rolls back), not the foreign key.
- with an append: `moved_head` (the compare-and-swap: `UPDATE skills ... WHERE head =
  :expected RETURNING id`), then `new_version` selected from its returned row, so a lost
  compare-and-swap inserts no version, `new_sources` and `new_event` likewise from the
  version; a new skill has `new_skill` in place of `moved_head`.

Data-modifying CTEs run exactly once each, whether or not the final SELECT reads them, and
see one snapshot; foreign keys are checked at the end of the statement, so a version may
name the manifest inserted beside it. The blob check itself is made on the returned
statuses (`blobs.unusable`): if it fails, the caller rolls the whole transaction back, as it
does for any other refusal, so no write of a refused statement survives.

Every parameter is named `p_*`: a parameter named like a column of a table that a nested
INSERT or UPDATE writes would become one more value of that statement.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import blobs as db_blobs
from registry.db import direct
from registry.db import publication as db_publication
from registry.db.skills import SkillRow
from registry.db.tables import (
    Blob,
    BlobClaim,
    Event,
    Manifest,
    ManifestEntry,
    Skill,
    UtcDateTime,
    Version,
    VersionSource,
)
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.model import Scope
from registry.errors import HeadConflict

_TEXTS: Final = postgresql.ARRAY(sa.Text)


def _p(name: str, type_: Any) -> sa.BindParameter[Any]:
    return sa.bindparam(f"p_{name}", type_=type_)


@dataclass(frozen=True, slots=True)
class Staged:
    """What the staging statement found and made: the blob check's verdict, the manifest.

    `version_id` and `skill_id` are the appended version's and its skill's ids (None
    without an append, or with a failed blob check).
    """

    problem: db_blobs.Unavailable | None
    manifest_id: int
    version_id: int | None = None
    skill_id: int | None = None


@dataclass(frozen=True, slots=True)
class Append:
    """The version a publish appends, and the skill it moves (None: a new skill)."""

    scope: Scope
    slug: str
    skill: SkillRow | None
    origin: str
    actor: str
    message: str
    restored_from: int | None
    sources: Sequence[str]
    event_kind: str
    payload: dict[str, Any]
    auto_improve: bool | None = None
    baseline: tuple[str, int, str] | None = None
    kind: str = "saved"


# ------------------------------------------------------------------ the statement's parts


def _stage_ctes(*, uploaded: bool) -> tuple[list[Any], dict[str, Any], Any]:
    """The claim, blob and manifest CTEs: (CTEs to add, result columns, manifest id)."""
    taken = (
        sa.delete(BlobClaim)
        .where(BlobClaim.write_id == _p("write_id", sa.String))
        .returning(BlobClaim.digest, BlobClaim.expires_at)
        .cte("taken")
    )
    found_rows = (
        sa.select(Blob.digest, Blob.status)
        .where(Blob.digest == sa.any_(_p("referenced", _TEXTS)))
        .order_by(Blob.digest)
    )
    locked = (
        found_rows.with_for_update(key_share=True)
        if uploaded
        else found_rows.with_for_update(read=True)
    )
    found = locked.cte("found")
    made_live = (
        sa.update(Blob)
        .where(
            Blob.digest == found.c.digest,
            found.c.status == "pending",
            Blob.digest == sa.any_(_p("uploaded", _TEXTS)),
        )
        .values(status=sa.literal_column("'live'"))
        .returning(Blob.digest)
        .cte("made_live")
    )
    workspace, manifest_hash = _p("workspace", sa.String), _p("manifest_hash", sa.String)
    new_manifest = (
        postgresql.insert(Manifest)
        .values(
            workspace=workspace,
            hash=manifest_hash,
            file_count=_p("file_count", sa.Integer),
            total_size=_p("total_size", sa.BigInteger),
            created_at=_p("now", UtcDateTime()),
        )
        .on_conflict_do_nothing(index_elements=["workspace", "hash"])
        .returning(Manifest.id)
        .cte("new_manifest")
    )
    rows = (
        sa.func.unnest(
            _p("paths", _TEXTS),
            _p("digests", _TEXTS),
            _p("sizes", postgresql.ARRAY(sa.BigInteger)),
            _p("executables", postgresql.ARRAY(sa.Boolean)),
        )
        .table_valued("path", "digest", "size", "executable")
        .render_derived(name="listed_entries")
    )
    new_entries = (
        postgresql.insert(ManifestEntry)
        .from_select(
            ["manifest_id", "path", "digest", "size", "executable"],
            # Only entries whose blob row exists: a missing one (GC won a race) is reported
            # by the blob check, which rolls the write back, not by the foreign key.
            sa.select(
                new_manifest.c.id, rows.c.path, rows.c.digest, rows.c.size, rows.c.executable
            ).select_from(
                new_manifest.join(rows, sa.true()).join(found, found.c.digest == rows.c.digest)
            ),
        )
        .cte("new_entries")
    )
    manifest = sa.select(
        sa.func.coalesce(
            sa.select(new_manifest.c.id).scalar_subquery(),
            sa.select(Manifest.id)
            .where(Manifest.workspace == workspace, Manifest.hash == manifest_hash)
            .scalar_subquery(),
        ).label("id")
    ).cte("manifest")
    manifest_id = sa.select(manifest.c.id).scalar_subquery()
    columns = {
        "held": sa.select(sa.func.array_agg(taken.c.digest))
        .where(taken.c.expires_at > _p("now", UtcDateTime()))
        .scalar_subquery(),
        "found_digests": sa.select(sa.func.array_agg(found.c.digest)).scalar_subquery(),
        "found_statuses": sa.select(sa.func.array_agg(found.c.status)).scalar_subquery(),
        "manifest_id": manifest_id,
    }
    return [taken, made_live, new_entries], columns, manifest_id


def _version_ctes(skill: Any, manifest_id: Any) -> tuple[Any, Any]:
    """The version row, one per row of `skill` (the moved or new skill), and its sources."""
    version_values: dict[str, Any] = {
        "workspace": _p("workspace", sa.String),
        "skill_id": skill.c.id,
        "number": _p("number", sa.Integer),
        "parent": _p("parent", sa.Integer),
        "origin": _p("origin", sa.String),
        "actor": _p("actor", sa.String),
        "message": _p("message", sa.Text),
        "restored_from": _p("restored_from", sa.Integer),
        "manifest_id": manifest_id,
        "manifest_hash": _p("manifest_hash", sa.String),
        "file_count": _p("file_count", sa.Integer),
        "total_size": _p("total_size", sa.BigInteger),
        "write_id": _p("write_id", sa.String),
        "created_at": _p("now", UtcDateTime()),
    }
    version = (
        postgresql.insert(Version)
        .from_select(list(version_values), sa.select(*version_values.values()).select_from(skill))
        .returning(
            Version.id,
            Version.skill_id,
            Version.workspace,
            Version.number,
            Version.manifest_hash,
            Version.created_at,
        )
        .cte("new_version")
    )
    listed = (
        sa.func.unnest(_p("sources", _TEXTS))
        .table_valued("source", with_ordinality="position")
        .render_derived(name="listed")
    )
    sources = (
        postgresql.insert(VersionSource)
        .from_select(
            ["version_id", "source", "workspace", "position"],
            sa.select(
                version.c.id, listed.c.source, version.c.workspace, listed.c.position - 1
            ).select_from(version.join(listed, sa.true())),
        )
        .cte("new_sources")
    )
    return version, sources


def _event_cte(version: Any) -> Any:
    """One event per new version: none if the compare-and-swap was lost."""
    values: dict[str, Any] = {
        "workspace": version.c.workspace,
        "agent": _p("agent", sa.String),
        "slug": _p("slug", sa.String),
        "skill_id": version.c.skill_id,
        "kind": _p("kind", sa.String),
        "version": version.c.number,
        "manifest_hash": version.c.manifest_hash,
        "payload": _p("payload", sa.JSON),
        "created_at": version.c.created_at,
    }
    return (
        postgresql.insert(Event)
        .from_select(list(values), sa.select(*values.values()).select_from(version))
        .cte("new_event")
    )


def _move_head_cte() -> Any:
    """The head's compare-and-swap, with the columns that change with it."""

    def baseline(param: str, column: Any) -> Any:
        # A baseline is given whole (three values) or not at all (three NULLs).
        return sa.func.coalesce(_p(param, column.type), column)

    return (
        sa.update(Skill)
        .where(
            Skill.id == _p("skill_id", sa.BigInteger),
            Skill.workspace == _p("workspace", sa.String),
            Skill.head == _p("expected_head", sa.Integer),
        )
        .values(
            head=_p("number", sa.Integer),
            head_size=_p("total_size", sa.BigInteger),
            updated_at=_p("now", UtcDateTime()),
            auto_improve=sa.func.coalesce(_p("auto_improve", sa.Boolean), Skill.auto_improve),
            baseline_listing=baseline("baseline_listing", Skill.baseline_listing),
            baseline_version=baseline("baseline_version", Skill.baseline_version),
            baseline_manifest_hash=baseline("baseline_hash", Skill.baseline_manifest_hash),
        )
        .returning(Skill.id)
        .cte("moved_head")
    )


def _new_skill_cte() -> Any:
    values: dict[str, Any] = {
        "workspace": _p("workspace", sa.String),
        "agent": _p("agent", sa.String),
        "slug": _p("slug", sa.String),
        "kind": _p("skill_kind", sa.String),
        "head": sa.literal(1, sa.Integer),
        "head_size": _p("total_size", sa.BigInteger),
        "state": sa.literal_column("'active'"),
        "auto_improve": _p("new_auto_improve", sa.Boolean),
        "learning_paused": sa.false(),
        "use_paused": sa.false(),
        "baseline_listing": _p("baseline_listing", sa.String),
        "baseline_version": _p("baseline_version", sa.Integer),
        "baseline_manifest_hash": _p("baseline_hash", sa.String),
        "created_at": _p("now", UtcDateTime()),
        "updated_at": _p("now", UtcDateTime()),
    }
    return (
        postgresql.insert(Skill)
        .from_select(list(values), sa.select(*values.values()))
        .returning(Skill.id)
        .cte("new_skill")
    )


def _statement(*, uploaded: bool, append: str | None) -> sa.Select[Any]:
    """The staging statement; `append`: None, "update" (an existing skill) or "create"."""
    ctes, columns, manifest_id = _stage_ctes(uploaded=uploaded)
    if append is not None:
        # An update's version follows the head's compare-and-swap: none if it was lost.
        skill = _move_head_cte() if append == "update" else _new_skill_cte()
        version, sources = _version_ctes(skill, manifest_id)
        ctes += [sources, _event_cte(version)]
        columns["version_id"] = sa.select(version.c.id).scalar_subquery()
        columns["skill_id"] = sa.select(version.c.skill_id).scalar_subquery()
    query = sa.select(*(c.label(name) for name, c in columns.items()))
    for cte in ctes:
        query = query.add_cte(cte, nest_here=False)
    return query


_STATEMENTS: Final = {
    (uploaded, append): _statement(uploaded=uploaded, append=append)
    for uploaded in (False, True)
    for append in (None, "update", "create")
}


# ------------------------------------------------------------------ running it


def _stage_params(
    *,
    write_id: str,
    workspace: str,
    manifest: DomainManifest,
    uploaded: Collection[str],
    now: datetime,
) -> dict[str, Any]:
    entries = manifest.entries
    return {
        "p_write_id": write_id,
        "p_workspace": workspace,
        "p_referenced": sorted({e.digest for e in entries}),
        "p_uploaded": sorted(uploaded),
        "p_manifest_hash": manifest.hash,
        "p_file_count": manifest.file_count,
        "p_total_size": manifest.total_size,
        "p_now": now,
        "p_paths": [e.path for e in entries],
        "p_digests": [e.digest for e in entries],
        "p_sizes": [e.size for e in entries],
        "p_executables": [e.executable for e in entries],
    }


def _append_params(append: Append, *, new_auto_improve: bool) -> dict[str, Any]:
    skill = append.skill
    listing, listing_version, listing_hash = append.baseline or (None, None, None)
    head = 0 if skill is None else skill.head
    return {
        "p_agent": append.scope.agent,
        "p_slug": append.slug,
        "p_skill_id": None if skill is None else skill.id,
        "p_expected_head": head,
        "p_number": head + 1,
        "p_parent": None if skill is None else head,
        "p_origin": append.origin,
        "p_actor": append.actor,
        "p_message": append.message,
        "p_restored_from": append.restored_from,
        "p_sources": list(dict.fromkeys(append.sources)),
        "p_auto_improve": append.auto_improve,
        "p_new_auto_improve": new_auto_improve,
        "p_baseline_listing": listing,
        "p_baseline_version": listing_version,
        "p_baseline_hash": listing_hash,
        "p_skill_kind": append.kind,
        "p_kind": append.event_kind,
        "p_payload": append.payload,
    }


async def stage(
    conn: AsyncConnection,
    *,
    write_id: str,
    workspace: str,
    manifest: DomainManifest,
    uploaded: Collection[str],
    now: datetime,
    claimed: bool = True,
    append: Append | None = None,
    new_auto_improve: bool = True,
) -> Staged:
    """Drop the write's claims, check its blobs, store its manifest; on PostgreSQL, append.

    `append` (PostgreSQL only) also appends the version in the same statement. A failed
    blob check is returned (`Staged.problem`), never raised: the caller rolls back.
    """
    if conn.dialect.name != "postgresql":
        assert append is None, "SQLite appends statement by statement"
        return await _stage_in_steps(
            conn,
            write_id=write_id,
            workspace=workspace,
            manifest=manifest,
            uploaded=uploaded,
            now=now,
            claimed=claimed,
        )
    kind = None if append is None else ("create" if append.skill is None else "update")
    params = _stage_params(
        write_id=write_id, workspace=workspace, manifest=manifest, uploaded=uploaded, now=now
    )
    if append is not None:
        params |= _append_params(append, new_auto_improve=new_auto_improve)
    row = (await direct.run(conn, _STATEMENTS[bool(uploaded), kind], params)).one()
    found = dict(zip(row.found_digests or (), row.found_statuses or (), strict=True))
    problem = db_blobs.unusable(
        found, referenced=params["p_referenced"], uploaded=uploaded, held=row.held or ()
    )
    if append is None or problem is not None:
        return Staged(problem, int(row.manifest_id))
    if row.version_id is None:
        skill = append.skill
        assert skill is not None
        current = await db_publication.current_head(conn, skill)
        raise HeadConflict(skill.head, current)
    return Staged(problem, int(row.manifest_id), int(row.version_id), int(row.skill_id))


async def _stage_in_steps(
    conn: AsyncConnection,
    *,
    write_id: str,
    workspace: str,
    manifest: DomainManifest,
    uploaded: Collection[str],
    now: datetime,
    claimed: bool,
) -> Staged:
    held = await db_publication.take_claims(conn, write_id, now) if claimed else frozenset()
    problem = await db_blobs.confirm(
        conn, held=held, uploaded=uploaded, referenced=[e.digest for e in manifest.entries]
    )
    if problem is not None:
        return Staged(problem, 0)
    return Staged(None, await db_publication.ensure_manifest(conn, workspace, manifest, now))
