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
from registry.domain.manifest import Manifest
from registry.domain.model import (
    ExpectedHead,
    Origin,
    Publication,
    Scope,
    check_expected_head,
    check_slug,
)
from registry.errors import HeadConflict, SkillNotFound, VersionNotFound
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


async def stored_version(ctx: Context, scope: Scope, slug: str, number: int) -> StoredVersion:
    """A readable version of the live skill (`VersionUnavailable` if a source is excluded)."""

    async def work(conn: AsyncConnection) -> StoredVersion:
        _, row = await locate(conn, scope, slug, number)
        await ctx.hit("read.located")
        manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
        sources = await db_skills.version_sources(conn, [row.id])
        approvals = await db_approvals.for_version(conn, scope.workspace, row.id)
        return StoredVersion(row.number, manifest, sources[row.id], approvals)

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
) -> Publication:
    """Append `stored`'s package as a new version (origin `restore`); uploads nothing.

    With `revokes`, the version is the yank of the head it replaces (origin `revocation`).

    `vanished` is asked, if the content check finds a blob of `stored` missing, whether
    the version is gone (`read.read_files`).
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
    )
    return await publish_manifest(
        ctx, request, stored.manifest, {}, screening=Screening(approvals=kept)
    )


async def restore(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: int,
    *,
    expected_head: ExpectedHead,
    actor: str,
    message: str = "",
) -> Publication:
    """Make `version`'s package the head again as a new version (see the module docstring)."""
    check_slug(slug)
    check_expected_head(expected_head)  # before the version is read and checked
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
