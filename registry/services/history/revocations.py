"""Yank and unyank: revoke a version, or take the revocation back (docs/revocation.md).

A revoked version is never served as something to use again: not as a head, not in a
desired state, not in the discovery index, not to a catalog install or update. History,
diffs and pinned reads still show it, marked.

    yank of an older version   one locked transaction: the revocation (signed), its event
    yank of the head           a package write (`write.restore.republish`, origin
                               `revocation`): the newest version still allowed becomes the
                               head again as a new version, a compare-and-swap on the
                               yanked head; the revocation is recorded in that write's
                               transaction (`write/revoke.py`)
    yank of the head, nothing  one locked transaction: the revocation and the skill's use
    left to use                stops (`use_paused`, with the reason), as a source
                               exclusion does
    unyank                     one locked transaction: the revocation withdrawn (signed),
                               its `version.unrevoked` event; the head does not move back

"Still allowed": not revoked, not unavailable (an excluded source), passing today's
content check, and not the package of a revoked version under another number (a restore
of the revoked package would bring it back).

A yank that loses its compare-and-swap (a write moved the head after the yank read it),
or whose fallback version was revoked meanwhile, reads the skill again, a few times.
Yanking a version already revoked changes nothing and returns the revocation in force.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import exclusions as db_exclusions
from registry.db import history as db_history
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain.arguments import check_text
from registry.domain.attestation import envelope_digest, package_digest
from registry.domain.model import Scope, check_slug
from registry.domain.numbers import MAX_VERSION, check_int
from registry.domain.revocation import RevocationFacts, check_kind, check_reason
from registry.errors import (
    ContentBlocked,
    HeadConflict,
    SkillNotFound,
    StateConflict,
    VersionNotFound,
    VersionRevoked,
    VersionUnavailable,
)
from registry.services.context import Context
from registry.services.write import revoke
from registry.services.write.request import Revoking
from registry.services.write.restore import republish, stored_version

# A yank that finds the head moved, or its fallback revoked, between its read and its
# transaction starts again from the read, at most this often.
_ATTEMPTS: Final = 4


@dataclass(frozen=True)
class Revocation:
    """A revocation, as history and `status --revoked` show it."""

    workspace: str
    agent: str
    slug: str
    version: int
    manifest_hash: str
    kind: str
    reason: str
    actor: str
    principal: str
    revoked_at: datetime
    unyanked_at: datetime | None = None
    unyanked_by: str | None = None

    @classmethod
    def of(cls, row: db_revocations.RevocationRow) -> Revocation:
        return cls(
            workspace=row.workspace,
            agent=row.agent,
            slug=row.slug,
            version=row.version,
            manifest_hash=row.manifest_hash,
            kind=row.kind,
            reason=row.reason,
            actor=row.actor,
            principal=row.principal,
            revoked_at=row.revoked_at,
            unyanked_at=row.unyanked_at,
            unyanked_by=row.unyanked_by,
        )


@dataclass(frozen=True)
class YankReport:
    """What a yank did: `moved_to` (the new head), `use_stopped`, or `already` revoked."""

    revocation: Revocation
    head: int
    moved_to: int | None = None
    restored_from: int | None = None
    use_stopped: bool = False
    already: bool = False
    # A catalog listing's version: its installed copies given an update job, or stopped.
    copies_updated: int = 0
    copies_stopped: int = 0


@dataclass(frozen=True)
class _Plan:
    skill: db_skills.SkillRow
    existing: db_revocations.RevocationRow | None
    fallbacks: list[int]  # versions the head may move to, newest first


async def yank(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: object,
    *,
    kind: object,
    reason: object,
    actor: str,
) -> YankReport:
    """Revoke `version` of the live skill `slug` (see the module docstring)."""
    check_slug(slug)
    number = _check_version(slug, version)
    revoking = Revoking(number, check_kind(kind).value, check_reason(reason), actor)
    check_text("actor", actor)
    revoke.ready(ctx)  # nothing is recorded by a registry that cannot sign it
    for _ in range(_ATTEMPTS):
        plan = await ctx.read(lambda conn: _plan(conn, scope, slug, number))
        if plan.existing is not None:
            return YankReport(Revocation.of(plan.existing), plan.skill.head, already=True)
        try:
            if plan.skill.head != number:
                return await _record_only(ctx, scope, plan, revoking, stop_use=False)
            for fallback in plan.fallbacks:
                report = await _move_head(ctx, scope, plan, revoking, fallback)
                if report is not None:
                    return report
            return await _record_only(ctx, scope, plan, revoking, stop_use=True)
        except (HeadConflict, _Moved):
            continue  # the head moved, or a fallback was revoked: read again
    raise StateConflict(f"yank {slug}@{number}", "the head kept moving; try again")


class _Moved(Exception):
    """The head is not where the yank read it, or the yanked version was revoked meanwhile."""


def _check_version(slug: str, value: object) -> int:
    number = check_int("version", value)
    if not 1 <= number <= MAX_VERSION:
        raise VersionNotFound(slug, number)
    return number


async def _plan(conn: AsyncConnection, scope: Scope, slug: str, number: int) -> _Plan:
    skill = await db_skills.live_skill(conn, scope, slug)
    if skill is None:
        raise SkillNotFound(scope.workspace, scope.agent, slug)
    if await db_skills.version(conn, skill, number) is None:
        raise VersionNotFound(slug, number)
    revoked = await db_revocations.in_force(conn, scope.workspace, skill.id)
    hashes = await db_revocations.manifest_hashes(conn, scope.workspace, skill.id)
    # A revoked version retention pruned since has no row left: its hash is still banned.
    banned = {r.manifest_hash for r in revoked.values()} | {hashes[number]}
    candidates = sorted((n for n in hashes if n != number and n not in revoked), reverse=True)
    ids = {n: i for i, n in await db_history.version_numbers(conn, scope.workspace, skill.id)}
    unavailable = await db_exclusions.unavailable(conn, scope.workspace, ids.values())
    fallbacks = [n for n in candidates if hashes[n] not in banned and ids.get(n) not in unavailable]
    return _Plan(skill, revoked.get(number), fallbacks)


async def _move_head(
    ctx: Context, scope: Scope, plan: _Plan, revoking: Revoking, fallback: int
) -> YankReport | None:
    """The head's yank as a write back to `fallback`; None if `fallback` cannot be used."""
    skill = plan.skill
    try:
        stored = await stored_version(ctx, scope, skill.slug, fallback)
        publication = await republish(
            ctx,
            scope,
            skill.slug,
            stored,
            expected_head=revoking.version,
            actor=revoking.actor,
            message=f"revoked v{revoking.version} ({revoking.kind}): {revoking.reason}",
            revokes=revoking,
        )
    except (ContentBlocked, VersionUnavailable, VersionNotFound):
        return None  # blocked by today's content check, excluded, or pruned: an older one
    except VersionRevoked as exc:
        raise _Moved from exc  # the fallback, or the head itself, was revoked meanwhile
    found = await ctx.read(
        lambda conn: db_revocations.of_version(conn, scope.workspace, skill.id, revoking.version)
    )
    assert found is not None, "recorded with the version"
    return YankReport(
        Revocation.of(found), skill.head, moved_to=publication.version, restored_from=fallback
    )


async def _record_only(
    ctx: Context, scope: Scope, plan: _Plan, revoking: Revoking, *, stop_use: bool
) -> YankReport:
    """Record the yank of a version that is not the head, or of a head nothing replaces."""
    expected = plan.skill

    async def work(conn: AsyncConnection) -> YankReport:
        now = ctx.clock.now()
        skill = await db_skills.skill_by_id(conn, scope.workspace, expected.id)
        if skill is None or skill.state == "deleted":
            raise SkillNotFound(scope.workspace, scope.agent, expected.slug)
        # Under the lock: the head is where the plan read it (a head yanked is a write).
        if (skill.head == revoking.version) != stop_use:
            raise _Moved
        try:
            await revoke.record(
                ctx, conn, scope, skill, revoking, head=None, use_stopped=stop_use, now=now
            )
        except VersionRevoked:
            raise _Moved from None  # revoked meanwhile: the next read returns it
        if stop_use:
            reason = f"v{revoking.version} revoked ({revoking.kind}): {revoking.reason}"
            await db_skills.set_controls(
                conn, skill, {"use_paused": True, "pause_reason": reason[:500]}, now=now
            )
            await db_skills.insert_event(
                conn,
                scope,
                skill.slug,
                skill_id=skill.id,
                kind="use_paused",
                version=skill.head,
                manifest_hash=None,
                payload={"actor": revoking.actor, "reason": reason},
                now=now,
            )
        row = await db_revocations.of_version(conn, scope.workspace, skill.id, revoking.version)
        assert row is not None
        return YankReport(Revocation.of(row), skill.head, use_stopped=stop_use)

    return await ctx.locked(scope.workspace, work)


async def unyank(
    ctx: Context, scope: Scope, slug: str, version: object, *, actor: str
) -> Revocation:
    """Take back the revocation in force of `version` (`VersionNotFound` if none is).

    The version may be used again (restored, pinned, served by discovery); the head does
    not move back by itself: an owner restores it if they want it as the head.
    """
    check_slug(slug)
    number = _check_version(slug, version)
    check_text("actor", actor)
    revoke.ready(ctx)

    async def work(conn: AsyncConnection) -> Revocation:
        now = ctx.clock.now()
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        row = await db_revocations.of_version(conn, scope.workspace, skill.id, number)
        if row is None:
            raise VersionNotFound(slug, number)
        version_row = await db_skills.version(conn, skill, number)
        if version_row is None:
            # Pruned by retention since: there is no package left to take back.
            raise VersionNotFound(slug, number)
        manifest = await db_skills.manifest_entries(conn, scope.workspace, version_row.manifest_id)
        facts = RevocationFacts(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            version=number,
            manifest_hash=row.manifest_hash,
            kind=row.kind,
            reason=row.reason,
            principal=ctx.principal,
            declared_actor=actor,
            time=now,
            revoked=False,
        )
        envelope = revoke.sign(ctx, facts, package_digest(manifest))
        await db_revocations.withdraw(
            conn, scope.workspace, row.id, actor=actor, envelope=envelope, now=now
        )
        await db_skills.insert_event(
            conn,
            scope,
            slug,
            skill_id=skill.id,
            kind=revoke.UNREVOKED,
            version=number,
            manifest_hash=row.manifest_hash,
            payload={
                "revocation": row.id,
                "workspace": scope.workspace,
                "agent": scope.agent,
                "slug": slug,
                "version": number,
                "actor": actor,
                "principal": ctx.principal,
                "statement": envelope_digest(envelope),
            },
            now=now,
        )
        withdrawn = await db_revocations.by_id(conn, scope.workspace, row.id)
        assert withdrawn is not None
        return Revocation.of(withdrawn)

    return await ctx.locked(scope.workspace, work)


async def revoked_versions(ctx: Context, scope: Scope, slug: str) -> dict[int, Revocation]:
    """The revocations in force of the live skill `slug`, by version (history marks them)."""

    async def work(conn: AsyncConnection) -> dict[int, Revocation]:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            return {}
        found = await db_revocations.in_force(conn, scope.workspace, skill.id)
        return {n: Revocation.of(r) for n, r in found.items()}

    return await ctx.read(work)
