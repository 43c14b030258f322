"""Restore: make an earlier version the head again, as a new version.

A restore appends version `head + 1` with origin `restore`, `restored_from` set, the restored
version's sources and its package (the same manifest row: content addressing means every
blob is already stored and referenced, so nothing is uploaded). It is a compare-and-swap on
the head like any write, it turns automatic improvements off (the owner took control), and
it refuses a version that the content check blocks or that lists an excluded source.

Restoring the package the head already has is a no-op that returns the head with
`unchanged=True` (the same rule as re-saving the head's package): a retried restore whose
reply was lost does not append a duplicate.

An owner's restore also records a **suppression** of the change it undoes (the head's
files against the restored version's, docs/history.md), in the same transaction as its
version; a later learning write that would bring that change back becomes a proposal
marked `suppressed`. A rollback after a source exclusion (`repair`) records none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import skills as db_skills
from registry.domain.approvals import Approval
from registry.domain.arguments import RULE_TYPE
from registry.domain.manifest import Manifest
from registry.domain.model import (
    ArchivedVersion,
    ExpectedHead,
    Origin,
    Publication,
    Scope,
    check_expected_head,
    check_slug,
)
from registry.errors import ArgumentInvalid, HeadConflict, SkillNotFound, VersionNotFound
from registry.services.context import Context
from registry.services.read import Vanished, locate
from registry.services.write import content, learning, suppression
from registry.services.write.publish import publish_manifest
from registry.services.write.request import Revoking, Screening, Undone, WriteRequest

# A restore whose head moved between reading it and the lock computes what it undoes
# again, at most this often (only with `expected_head=ANY`: otherwise the CAS refuses).
_UNDONE_ATTEMPTS: Final = 3


@dataclass(frozen=True)
class StoredVersion:
    """A version's package and what a restore carries over from it."""

    number: int
    manifest: Manifest
    sources: list[str]
    approvals: tuple[Approval, ...]


async def _stored(
    ctx: Context, conn: AsyncConnection, scope: Scope, slug: str, version: int | ArchivedVersion
) -> tuple[db_skills.SkillRow, StoredVersion]:
    skill, row = await locate(conn, scope, slug, version)
    await ctx.hit("read.located")
    manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
    sources = await db_skills.version_sources(conn, [row.id])
    approvals = await db_approvals.for_version(conn, scope.workspace, row.id)
    return skill, StoredVersion(row.number, manifest, sources[row.id], approvals)


async def stored_version(ctx: Context, scope: Scope, slug: str, number: int) -> StoredVersion:
    """A readable version of the live skill (`VersionUnavailable` if a source is excluded)."""

    async def work(conn: AsyncConnection) -> StoredVersion:
        return (await _stored(ctx, conn, scope, slug, number))[1]

    return await ctx.read(work)


async def republish(
    ctx: Context,
    scope: Scope,
    slug: str,
    stored: StoredVersion,
    *,
    expected_head: ExpectedHead,
    actor: str,
    message: str = "",
    repair: bool = False,
    undoes: Undone | None = None,
    vanished: Vanished | None = None,
    revokes: Revoking | None = None,
    revives: int | None = None,
) -> Publication:
    """Append `stored`'s package as a new version (origin `restore`); uploads nothing.

    With `revokes`, the version is the yank of the head it replaces (origin `revocation`).

    `vanished` is asked, if the content check finds a blob of `stored` missing, whether
    the version is gone (`read.read_files`). `revives` names the deleted skill that the
    version brings back (`WriteRequest.revives`).
    """
    kept = await content.check(
        ctx, stored.manifest, None, allowed=stored.approvals, vanished=vanished
    )
    request = WriteRequest(
        scope=scope,
        slug=slug,
        expected_head=expected_head,
        origin=Origin.RESTORE if revokes is None else Origin.REVOCATION,
        actor=actor,
        message=message,
        sources=tuple(stored.sources),
        restored_from=stored.number,
        repair=repair or revokes is not None,
        undoes=undoes,
        revokes=revokes,
        revives=revives,
    )
    return await publish_manifest(
        ctx, request, stored.manifest, {}, screening=Screening(approvals=kept)
    )


async def restore(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: int | ArchivedVersion,
    *,
    expected_head: ExpectedHead,
    actor: str,
    message: str = "",
) -> Publication:
    """Make `version`'s package the head again as a new version (see the module docstring).

    An `ArchivedVersion` brings its deleted skill back (`revive`).
    """
    check_slug(slug)
    check_expected_head(expected_head)  # before the version is read and checked
    if isinstance(version, ArchivedVersion):
        return await revive(
            ctx, scope, slug, version, expected_head=expected_head, actor=actor, message=message
        )
    stored = await stored_version(ctx, scope, slug, version)
    for _ in range(_UNDONE_ATTEMPTS):
        head = await suppression.head_manifest(ctx, scope, slug)
        undoes = None
        vanished = _vanished(
            ctx,
            scope,
            slug,
            number=stored.number,
            head=None if head is None else head[0],
            expected_head=expected_head,
        )
        try:
            if head is not None and head[1].hash != stored.manifest.hash:
                change = await suppression.undone_change(
                    ctx, head[1], stored.manifest, vanished=vanished
                )
                undoes = Undone(head[0], head[1].hash, change)
            return await republish(
                ctx,
                scope,
                slug,
                stored,
                expected_head=expected_head,
                actor=actor,
                message=message,
                undoes=undoes,
                vanished=vanished,
            )
        except learning.UndoneMoved:
            continue  # a write moved the head after it was read: undo the new head
    raise HeadConflict(None, None)


def _vanished(
    ctx: Context,
    scope: Scope,
    slug: str,
    *,
    number: int,
    head: int | None,
    expected_head: ExpectedHead,
) -> Vanished:
    """What a restore says when a blob it reads is missing (see `read.Vanished`).

    In a snapshot of its own: the restored version pruned is `VersionNotFound` (as the
    locked check says it); the head it read moved (and its old blobs collected) is
    `HeadConflict` when the restore named a head, and otherwise computed again.
    """

    async def check() -> None:
        async def work(conn: AsyncConnection) -> tuple[int, bool]:
            skill = await db_skills.live_skill(conn, scope, slug)
            if skill is None:
                raise SkillNotFound(scope.workspace, scope.agent, slug)
            return skill.head, await db_skills.version(conn, skill, number) is not None

        current, exists = await ctx.read(work)
        if not exists:
            raise VersionNotFound(slug, number)
        if head is not None and current != head:
            if isinstance(expected_head, int):
                raise HeadConflict(expected_head, current)
            raise learning.UndoneMoved

    return check


async def revive(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: ArchivedVersion,
    *,
    expected_head: ExpectedHead,
    actor: str,
    message: str = "",
) -> Publication:
    """Bring a deleted skill back with `version`'s package as its new head.

    The same skill row becomes live again (state `active`, its id kept) and its history
    continues: the new version is `head + 1` of the deleted skill, origin `restore`,
    `restored_from` the archived number, through the one write path (the lock, the
    compare-and-swap on the deleted skill's head, capacity, quota, the content check,
    the attestation, one `restored` event with `revived: true`). `expected_head` is the
    deleted skill's head, or `ANY`. A slug another live skill holds now is `SlugTaken`
    and changes nothing. The delete's suppression is lifted; restoring an older version
    than the deleted head records what it undoes, as any restore does.
    """
    if expected_head is None:
        detail = "the deleted skill's head (an int) or ANY: a restore continues its history"
        raise ArgumentInvalid("expected_head", RULE_TYPE, detail)

    async def work(conn: AsyncConnection) -> tuple[int, int, Manifest, StoredVersion]:
        skill, stored = await _stored(ctx, conn, scope, slug, version)
        head = await db_skills.version(conn, skill, skill.head)
        if head is None:
            raise VersionNotFound(slug, skill.head)
        if head.number == stored.number:
            return skill.id, skill.head, stored.manifest, stored
        manifest = await db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
        return skill.id, skill.head, manifest, stored

    skill_id, head, head_manifest, stored = await ctx.read(work)
    vanished = _revival_vanished(
        ctx, scope, slug, version, skill_id=skill_id, expected_head=expected_head
    )
    undoes = None
    if head_manifest.hash != stored.manifest.hash:
        change = await suppression.undone_change(
            ctx, head_manifest, stored.manifest, vanished=vanished
        )
        undoes = Undone(head, head_manifest.hash, change)
    return await republish(
        ctx,
        scope,
        slug,
        stored,
        expected_head=expected_head,
        actor=actor,
        message=message,
        undoes=undoes,
        vanished=vanished,
        revives=skill_id,
    )


def _revival_vanished(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: ArchivedVersion,
    *,
    skill_id: int,
    expected_head: ExpectedHead,
) -> Vanished:
    """What a revival says when a blob it reads is missing (see `read.Vanished`).

    The deleted skill brought back meanwhile (its old head's blobs then collectable) is
    `HeadConflict`; the version pruned is `VersionNotFound`.
    """

    async def check() -> None:
        async def work(conn: AsyncConnection) -> db_skills.SkillRow | None:
            return await db_skills.skill_by_id(conn, scope.workspace, skill_id)

        skill = await ctx.read(work)
        if skill is not None and skill.state != "deleted":
            raise HeadConflict(
                expected_head if isinstance(expected_head, int) else None, skill.head
            )
        await ctx.read(lambda conn: locate(conn, scope, slug, version))

    return check
