"""Retention: prune old versions and closed proposals by policy, so GC can reclaim blobs.

Off by default (`retention_keep_versions`, `retention_keep_days`). Each skill is pruned in
one transaction under its workspace's lock (the lock every publish takes), so a version
is never pruned while a write of the same workspace reuses its manifest; the transaction
writes one `versions_pruned` event. Pruned versions are gone: they can no longer be read,
diffed or restored (docs/gc.md, "Retention").

The same policy applies to a skill's closed proposals (applied, rejected, superseded,
withdrawn), ordered by id and aged from their closing: each names a whole package, so a
learning job that proposes every night would otherwise keep every candidate's blobs for
ever. Pending proposals are never pruned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import retention as db_retention
from registry.db import skills as db_skills
from registry.domain.model import Scope
from registry.domain.retention import RetentionPolicy, VersionAge, prunable
from registry.services.context import Context

# Pruned skills listed in a report; the counters cover all of them.
_LISTED: Final = 1000


@dataclass(frozen=True)
class PrunedSkill:
    """The versions pruned (or, in a dry run, to be pruned) from one skill."""

    workspace: str
    agent: str
    slug: str
    versions: tuple[int, ...]
    manifests_deleted: int
    proposals: tuple[int, ...] = ()


@dataclass
class RetentionReport:
    """What a retention pass pruned, or would prune."""

    policy: dict[str, object]
    dry_run: bool
    skills_pruned: int = 0
    versions_pruned: int = 0
    proposals_pruned: int = 0
    manifests_deleted: int = 0
    skills: list[PrunedSkill] = field(default_factory=list)

    def add(self, pruned: PrunedSkill) -> None:
        self.skills_pruned += 1
        self.versions_pruned += len(pruned.versions)
        self.proposals_pruned += len(pruned.proposals)
        self.manifests_deleted += pruned.manifests_deleted
        if len(self.skills) < _LISTED:
            self.skills.append(pruned)


async def prune(
    ctx: Context,
    policy: RetentionPolicy | None = None,
    *,
    dry_run: bool = False,
    metadata: sa.MetaData | None = None,
) -> RetentionReport:
    """Apply `policy` (default: the settings') to every skill; return what was pruned.

    `metadata` is where the tables that may name versions and manifests are discovered
    (default: the registry's own tables).
    """
    if policy is None:
        policy = RetentionPolicy(
            ctx.settings.retention_keep_versions, ctx.settings.retention_keep_days
        )
    report = RetentionReport(policy.describe(), dry_run)
    if not policy.enabled:
        return report
    after, limit = 0, ctx.settings.gc_batch_size
    while True:

        async def page(conn: AsyncConnection, after: int = after) -> list[db_retention.SkillRef]:
            return await db_retention.skills_after(conn, after, limit)

        skills = await ctx.read(page)
        if not skills:
            return report
        for ref in skills:
            pruned = await _prune_skill(ctx, ref.id, policy, metadata, dry_run=dry_run)
            if pruned is not None:
                report.add(pruned)
        after = skills[-1].id


@dataclass(frozen=True)
class _Doomed:
    """What the policy prunes from one skill."""

    versions: list[db_retention.VersionRef]
    proposals: list[db_retention.ProposalRef]

    def __bool__(self) -> bool:
        return bool(self.versions or self.proposals)

    @property
    def manifest_ids(self) -> list[int]:
        return [v.manifest_id for v in self.versions] + [p.manifest_id for p in self.proposals]

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(v.number for v in self.versions)

    @property
    def proposal_ids(self) -> tuple[int, ...]:
        return tuple(p.id for p in self.proposals)


async def _doomed(
    ctx: Context,
    conn: AsyncConnection,
    ref: db_retention.SkillRef,
    policy: RetentionPolicy,
    metadata: sa.MetaData | None,
) -> _Doomed:
    now = ctx.clock.now()
    versions = await db_retention.versions_of(conn, ref)
    protected = await db_retention.protected_numbers(conn, ref, metadata)
    numbers = set(
        prunable(
            (VersionAge(v.number, v.created_at) for v in versions),
            head=ref.head,
            protected=protected,
            policy=policy,
            now=now,
        )
    )
    closed = await db_retention.closed_proposals_of(conn, ref)
    # Proposals have no head: id 0 names none of them.
    ids = set(
        prunable(
            (VersionAge(p.id, p.closed_at) for p in closed),
            head=0,
            protected=(),
            policy=policy,
            now=now,
        )
    )
    return _Doomed([v for v in versions if v.number in numbers], [p for p in closed if p.id in ids])


async def _prune_skill(
    ctx: Context,
    skill_id: int,
    policy: RetentionPolicy,
    metadata: sa.MetaData | None,
    *,
    dry_run: bool,
) -> PrunedSkill | None:
    async def plan(conn: AsyncConnection) -> PrunedSkill | None:
        ref = await db_retention.skill(conn, skill_id)
        if ref is None:
            return None
        doomed = await _doomed(ctx, conn, ref, policy, metadata)
        if not doomed:
            return None
        freed = await db_retention.unreferenced_manifests(
            conn,
            ref.workspace,
            doomed.manifest_ids,
            metadata,
            ignoring={
                "versions": [v.id for v in doomed.versions],
                "proposals": list(doomed.proposal_ids),
            },
        )
        return PrunedSkill(
            ref.workspace, ref.agent, ref.slug, doomed.numbers, len(freed), doomed.proposal_ids
        )

    # A read first, so that a skill with nothing to prune costs no workspace lock.
    planned = await ctx.read(plan)
    if planned is None or dry_run:
        return planned
    await ctx.hit("retention.planned")

    async def work(conn: AsyncConnection) -> PrunedSkill | None:
        await ctx.hit("retention.locked")
        # Decide again under the lock: the head may have moved since the plan.
        ref = await db_retention.skill(conn, skill_id)
        if ref is None:
            return None
        doomed = await _doomed(ctx, conn, ref, policy, metadata)
        if not doomed:
            return None
        now, numbers = ctx.clock.now(), doomed.numbers
        await db_retention.delete_versions(conn, ref, numbers)
        await db_retention.delete_proposals(conn, ref, doomed.proposal_ids)
        orphaned = await db_retention.unreferenced_manifests(
            conn, ref.workspace, doomed.manifest_ids, metadata
        )
        await db_retention.touch_blobs(conn, await db_retention.digests_of(conn, orphaned), now)
        deleted = await db_retention.delete_manifests(conn, orphaned)
        await db_skills.insert_event(
            conn,
            Scope(ref.workspace, ref.agent),
            ref.slug,
            skill_id=ref.id,
            kind="versions_pruned",
            version=ref.head,
            manifest_hash=None,
            payload={
                "versions": list(numbers),
                "proposals": list(doomed.proposal_ids),
                "manifests_deleted": deleted,
                "policy": policy.describe(),
            },
            now=now,
        )
        await ctx.hit("retention.before_commit")
        return PrunedSkill(
            ref.workspace, ref.agent, ref.slug, numbers, deleted, doomed.proposal_ids
        )

    return await ctx.locked(planned.workspace, work)
