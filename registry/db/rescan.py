"""Queries of the rescan: the packages to check, their records, and content reviews.

The caller owns the transaction (the workspace lock for the consequences of a check).

The packages a rescan checks are the distinct (workspace, manifest) pairs of every live
head and of every listing version an installed copy names as its baseline (in the catalog
workspace), optionally of one workspace: `_targets`. A package is *done* when its
`package_checks` row names the current rule set.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from registry.db.blobs import upsert
from registry.db.tables import (
    ContentReview,
    Manifest,
    PackageCheck,
    RescanRuleset,
    Skill,
    Version,
)


@dataclass(frozen=True, slots=True)
class Package:
    """A package of a workspace to check: its manifest's hash and row id."""

    workspace: str
    manifest_hash: str
    manifest_id: int


@dataclass(frozen=True, slots=True)
class ReviewRow:
    """A content review as the services see it (with its skill's scope and slug)."""

    id: int
    workspace: str
    agent: str
    slug: str
    skill_id: int
    version: int
    manifest_hash: str
    package_digest: str
    ruleset: str
    findings: list[dict[str, Any]]
    status: str
    paused_use: bool
    opened_at: datetime
    closed_at: datetime | None
    closed_by: str | None


def _targets(workspace: str | None, catalog: str) -> sa.Subquery:
    heads = (
        sa.select(Version.workspace, Version.manifest_hash, Version.manifest_id)
        .join(Skill, sa.and_(Skill.id == Version.skill_id, Skill.head == Version.number))
        .where(Skill.state != "deleted")
    )
    listing, copy = aliased(Skill), aliased(Skill)
    installed = (
        sa.select(Version.workspace, Version.manifest_hash, Version.manifest_id)
        .join(listing, listing.id == Version.skill_id)
        .join(
            copy,
            sa.and_(
                copy.baseline_listing == listing.slug,
                copy.baseline_version == Version.number,
            ),
        )
        .where(
            listing.workspace == catalog,
            listing.agent == "personal",
            listing.state != "deleted",
            copy.kind == "installed",
            copy.state != "deleted",
        )
    )
    if workspace is not None:
        heads = heads.where(Skill.workspace == workspace)
        installed = installed.where(copy.workspace == workspace)
    # UNION (not UNION ALL): each package once, however many heads and copies share it.
    return sa.union(heads, installed).subquery("targets")


def _checked(targets: sa.Subquery) -> sa.ColumnElement[bool]:
    return sa.and_(
        PackageCheck.workspace == targets.c.workspace,
        PackageCheck.manifest_hash == targets.c.manifest_hash,
    )


async def counts(
    conn: AsyncConnection, *, workspace: str | None, catalog: str, ruleset: str
) -> tuple[int, int]:
    """(done, total): the packages to check, and those the current rule set checked."""
    targets = _targets(workspace, catalog)
    done = sa.func.count(PackageCheck.ruleset).filter(PackageCheck.ruleset == ruleset)
    row = (
        await conn.execute(
            sa.select(done, sa.func.count()).select_from(
                targets.outerjoin(PackageCheck, _checked(targets))
            )
        )
    ).one()
    return int(row[0]), int(row[1])


async def to_check(
    conn: AsyncConnection,
    *,
    workspace: str | None,
    catalog: str,
    ruleset: str,
    after: tuple[str, str] | None,
    limit: int,
) -> list[Package]:
    """The next packages (in workspace, manifest hash order) not checked by `ruleset`."""
    targets = _targets(workspace, catalog)
    query = (
        sa.select(targets.c.workspace, targets.c.manifest_hash, targets.c.manifest_id)
        .select_from(targets.outerjoin(PackageCheck, _checked(targets)))
        .where(sa.or_(PackageCheck.ruleset.is_(None), PackageCheck.ruleset != ruleset))
        .order_by(targets.c.workspace, targets.c.manifest_hash)
        .limit(limit)
    )
    if after is not None:
        query = query.where(
            sa.or_(
                targets.c.workspace > after[0],
                sa.and_(targets.c.workspace == after[0], targets.c.manifest_hash > after[1]),
            )
        )
    return [Package(*row) for row in await conn.execute(query)]


async def manifest_exists(conn: AsyncConnection, package: Package) -> bool:
    """Whether the package's manifest row is still there (retention deletes unused ones)."""
    found = await conn.scalar(
        sa.select(Manifest.id).where(
            Manifest.workspace == package.workspace, Manifest.id == package.manifest_id
        )
    )
    return found is not None


async def record_check(
    conn: AsyncConnection,
    package: Package,
    *,
    package_digest: str,
    ruleset: str,
    findings: int,
    blocked_heads: int,
    now: datetime,
) -> None:
    """Record that `ruleset` checked `package` (replacing an older rule set's record)."""
    values = {
        "package_digest": package_digest,
        "ruleset": ruleset,
        "findings": findings,
        "blocked_heads": blocked_heads,
        "checked_at": now,
    }
    insert = upsert(conn, PackageCheck).values(
        workspace=package.workspace, manifest_hash=package.manifest_hash, **values
    )
    await conn.execute(
        insert.on_conflict_do_update(index_elements=["workspace", "manifest_hash"], set_=values)
    )


async def heads_holding(conn: AsyncConnection, workspace: str, manifest_hash: str) -> list[int]:
    """The ids of the live skills of `workspace` whose head is the package `manifest_hash`."""
    rows = await conn.execute(
        sa.select(Skill.id)
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .where(
            Skill.workspace == workspace,
            Skill.state != "deleted",
            Version.workspace == workspace,
            Version.manifest_hash == manifest_hash,
        )
        .order_by(Skill.id)
    )
    return [int(r.id) for r in rows]


_REVIEW_COLUMNS = (
    ContentReview.id,
    ContentReview.workspace,
    Skill.agent,
    Skill.slug,
    ContentReview.skill_id,
    ContentReview.version,
    ContentReview.manifest_hash,
    ContentReview.package_digest,
    ContentReview.ruleset,
    ContentReview.findings,
    ContentReview.status,
    ContentReview.paused_use,
    ContentReview.opened_at,
    ContentReview.closed_at,
    ContentReview.closed_by,
)


def _reviews() -> sa.Select[Any]:
    return sa.select(*_REVIEW_COLUMNS).join(Skill, Skill.id == ContentReview.skill_id)


def _current_head() -> sa.ColumnElement[bool]:
    """The review's package is still its skill's head (and the skill is live)."""
    head = (
        sa.select(Version.manifest_hash)
        .where(Version.skill_id == Skill.id, Version.number == Skill.head)
        .scalar_subquery()
    )
    return sa.and_(Skill.state != "deleted", head == ContentReview.manifest_hash)


async def review(conn: AsyncConnection, workspace: str, review_id: int) -> ReviewRow | None:
    """The review `review_id` of `workspace` as recorded, or None."""
    query = _reviews().where(ContentReview.workspace == workspace, ContentReview.id == review_id)
    row = (await conn.execute(query)).first()
    return None if row is None else ReviewRow(*row)


async def open_review(conn: AsyncConnection, skill_id: int, manifest_hash: str) -> int | None:
    """The id of the open review of this skill's package `manifest_hash`, if there is one."""
    found = await conn.scalar(
        sa.select(ContentReview.id).where(
            ContentReview.skill_id == skill_id,
            ContentReview.manifest_hash == manifest_hash,
            ContentReview.status == "open",
        )
    )
    return None if found is None else int(found)


async def insert_review(conn: AsyncConnection, **values: Any) -> int:
    """Open a review; returns its id."""
    inserted = await conn.execute(
        sa.insert(ContentReview).values(status="open", **values).returning(ContentReview.id)
    )
    return int(inserted.scalar_one())


async def refresh_review(
    conn: AsyncConnection, review_id: int, *, ruleset: str, findings: list[dict[str, Any]]
) -> None:
    """Keep an open review's findings those of the newest rule set that found them."""
    await conn.execute(
        sa.update(ContentReview)
        .where(ContentReview.id == review_id)
        .values(ruleset=ruleset, findings=findings)
    )


async def close_review(
    conn: AsyncConnection, review_id: int, *, status: str, actor: str | None, now: datetime
) -> None:
    await conn.execute(
        sa.update(ContentReview)
        .where(ContentReview.id == review_id, ContentReview.status == "open")
        .values(status=status, closed_at=now, closed_by=actor)
    )


async def settle(conn: AsyncConnection, *, workspace: str | None, now: datetime) -> int:
    """Close the open reviews whose package is no longer their skill's head; return how many.

    A deleted skill's review is `withdrawn`; one whose head moved (a restore, a yank, any
    write) is `superseded`. Listing reads the same condition, so a review closes the
    moment the head moves, whether or not this ran since.
    """
    closed = 0
    for status, condition in (
        ("withdrawn", Skill.state == "deleted"),
        ("superseded", sa.not_(_current_head())),
    ):
        stale = (
            sa.select(ContentReview.id)
            .join(Skill, Skill.id == ContentReview.skill_id)
            .where(ContentReview.status == "open", condition)
        )
        if workspace is not None:
            stale = stale.where(ContentReview.workspace == workspace)
        result = await conn.execute(
            sa.update(ContentReview)
            .where(ContentReview.id.in_(stale.scalar_subquery()))
            .values(status=status, closed_at=now)
        )
        closed += int(result.rowcount)
    return closed


async def open_page(
    conn: AsyncConnection, workspace: str, *, limit: int, before: int | None
) -> list[ReviewRow]:
    """The open reviews of `workspace` whose package is still the head, newest first."""
    query = (
        _reviews()
        .where(
            ContentReview.workspace == workspace, ContentReview.status == "open", _current_head()
        )
        .order_by(ContentReview.id.desc())
        .limit(limit)
    )
    if before is not None:
        query = query.where(ContentReview.id < before)
    return [ReviewRow(*row) for row in await conn.execute(query)]


async def stored_ruleset(conn: AsyncConnection) -> str | None:
    """The rule set of the newest finished whole-registry rescan, if any."""
    found = await conn.scalar(
        sa.select(RescanRuleset.ruleset).order_by(RescanRuleset.finished_at.desc()).limit(1)
    )
    return None if found is None else str(found)


async def record_ruleset(
    conn: AsyncConnection, ruleset: str, *, job_id: int | None, now: datetime
) -> None:
    values = {"job_id": job_id, "finished_at": now}
    insert = upsert(conn, RescanRuleset).values(ruleset=ruleset, **values)
    await conn.execute(insert.on_conflict_do_update(index_elements=["ruleset"], set_=values))
