"""The rescan: when the content rules change, check what is in use with the new rules.

The rule set is the scanner's `fingerprint` (registry/domain/scanner.py): a declared logic
version plus a digest of every pattern and threshold, so editing a rule changes it even if
nobody bumps the version. `package_checks` records which rule set last checked each
package of a workspace. A rescan is a durable job (`jobs.queue`, kind `rescan`):

    settle     close the open reviews whose package is no longer their skill's head
    count      the packages to check: every live head and every listing version an
               installed copy names, of one workspace or all; done = those the current
               rule set checked already (progress: done of total)
    per package, in (workspace, manifest hash) order, a batch at a time:
      scan     its files with the current rules (digests cached clean are not read),
               outside any lock
      apply    one transaction under the workspace lock: for each live skill whose head
               is this package, the findings its version's approvals do not cover block
               it: open a review (once per skill and package), stop its use if it was in
               use (the `stop using` control, reason `rescan: ...`, event `use_paused`);
               findings the approvals cover are recorded (`findings`) and stop nothing;
               then record the package as checked by this rule set
      progress the job's `progress`, under its lease, after each batch
    finish     a rescan of every workspace records its rule set (`rescan_rulesets`)

Resumable and idempotent: a package's consequences and its record commit together, so a
worker killed mid-job leaves every package either done or untouched; the next attempt
(the lease expired, or a new job) counts again and checks only what is not done. A
review is opened once per skill and package (a second finding keeps the open one).

A review is the owner's decision, bound to the package (its manifest hash and package
digest): `approve` stores the findings as the version's approvals (a later rescan with
these rules finds nothing blocking; another package is checked afresh) and resumes the
use the rescan stopped. Any move of the head to another package (a restore, a yank, a
write) closes it as `superseded`: listing reads that condition, `settle` records it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import rescan as db_rescan
from registry.db import scans as db_scans
from registry.db import skills as db_skills
from registry.db.rescan import Package
from registry.db.rescan import ReviewRow as ReviewRow  # noqa: PLC0414 - the API returns it
from registry.domain.approvals import FindingRef, evaluate
from registry.domain.arguments import check_text
from registry.domain.attestation import package_digest
from registry.domain.model import Scope, check_scope_name
from registry.domain.numbers import MAX_ID, names_row, page_before
from registry.domain.scanner import Finding
from registry.domain.states import Action
from registry.errors import ReviewNotFound, StateConflict
from registry.services.context import Context
from registry.services.history.controls import control_changes
from registry.services.jobs import queue
from registry.services.write import content
from registry.services.write.restore import stored_version

RESCAN: Final = "rescan"
"""The job kind."""

EVERY_WORKSPACE: Final = "*"
"""The `workspace` of a job that rescans every workspace (no workspace is named `*`)."""

ACTOR: Final = "rescan"
"""The actor of what a rescan does on its own (stopping a skill's use)."""

BATCH: Final = 50
"""Packages per batch: the progress is recorded after each."""

MAX_PAGE: Final = 200


@dataclass(frozen=True)
class ReviewPage:
    """A page of open reviews, newest first; pass `next_before` back as `before`."""

    items: list[ReviewRow]
    next_before: int | None


@dataclass(frozen=True)
class ApproveResult:
    """What approving a review did: the review as closed, and whether use resumed."""

    review: ReviewRow
    resumed: bool


@dataclass
class _Tally:
    checked: int = 0
    with_findings: int = 0
    blocked: int = 0
    opened: int = 0
    paused: int = 0

    def as_json(self) -> dict[str, int]:
        return {
            "checked": self.checked,
            "with_findings": self.with_findings,
            "blocked": self.blocked,
            "opened": self.opened,
            "paused": self.paused,
        }


async def start(
    ctx: Context, *, workspace: str | None, actor: str, trigger: str = "request"
) -> queue.Enqueued:
    """Queue a rescan of `workspace` (None: every workspace) with the current rules."""
    if workspace is not None:
        check_scope_name("workspace", workspace)
    check_text("actor", actor)
    ruleset = ctx.scanner.fingerprint
    payload = {"workspace": workspace, "ruleset": ruleset, "actor": actor, "trigger": trigger}
    key = f"rescan:{workspace or EVERY_WORKSPACE}:{ruleset}:{uuid.uuid4().hex}"
    return await queue.enqueue(
        ctx, RESCAN, payload, key=key, workspace=workspace or EVERY_WORKSPACE
    )


async def start_if_rules_changed(ctx: Context) -> queue.Enqueued | None:
    """At a process's start: queue a rescan of everything if the rules changed.

    The rules changed when the newest finished whole-registry rescan ran under another
    rule set (or none ever ran). With nothing to check, the rule set is recorded at once
    and no job is queued. Processes starting together queue one job (its key names the
    rule set, and the finished job it follows, if any).
    """
    ruleset = ctx.scanner.fingerprint
    catalog = ctx.settings.catalog_workspace
    stored = await ctx.read(db_rescan.stored_ruleset)
    if stored == ruleset:
        return None

    async def counted(conn: AsyncConnection) -> tuple[int, int]:
        return await db_rescan.counts(conn, workspace=None, catalog=catalog, ruleset=ruleset)

    done, total = await ctx.read(counted)
    if done == total:
        now = ctx.clock.now()
        await ctx.write(lambda conn: db_rescan.record_ruleset(conn, ruleset, job_id=None, now=now))
        return None
    payload = {"workspace": None, "ruleset": ruleset, "actor": ACTOR, "trigger": "start"}
    key = f"rescan:start:{ruleset}"
    while True:
        enqueued = await queue.enqueue(ctx, RESCAN, payload, key=key, workspace=EVERY_WORKSPACE)
        # A finished job under this key did not leave this rule set recorded last: it
        # failed, or the rules changed back to it since. Its successor has a key of its own.
        if not enqueued.job.finished:
            return enqueued
        key = f"rescan:start:{ruleset}:after:{enqueued.job.id}"


async def run_rescan(ctx: Context, job: queue.JobRow) -> dict[str, Any]:
    """The job handler (see the module docstring)."""
    workspace = job.payload.get("workspace")
    ruleset = ctx.scanner.fingerprint
    catalog = ctx.settings.catalog_workspace
    settled_at = ctx.clock.now()
    await ctx.write(lambda conn: db_rescan.settle(conn, workspace=workspace, now=settled_at))

    async def counted(conn: AsyncConnection) -> tuple[int, int]:
        return await db_rescan.counts(conn, workspace=workspace, catalog=catalog, ruleset=ruleset)

    done, total = await ctx.read(counted)
    tally = _Tally()

    def progress() -> dict[str, Any]:
        return {"done": done, "total": max(total, done), "ruleset": ruleset, **tally.as_json()}

    await queue.report_progress(ctx, job, progress())
    after: tuple[str, str] | None = None
    while True:

        async def batch(
            conn: AsyncConnection, after: tuple[str, str] | None = after
        ) -> list[Package]:
            return await db_rescan.to_check(
                conn,
                workspace=workspace,
                catalog=catalog,
                ruleset=ruleset,
                after=after,
                limit=BATCH,
            )

        packages = await ctx.read(batch)
        if not packages:
            break
        for package in packages:
            if await _check(ctx, package, ruleset, tally):
                done += 1
                await ctx.hit("rescan.package_checked")
        after = (packages[-1].workspace, packages[-1].manifest_hash)
        await queue.report_progress(ctx, job, progress())
    if workspace is None:
        finished = ctx.clock.now()
        await ctx.write(
            lambda conn: db_rescan.record_ruleset(conn, ruleset, job_id=job.id, now=finished)
        )
    return {"outcome": "rescanned", "workspace": workspace, **progress()}


class _Gone(Exception):
    """The package was pruned (no version uses it any more) while it was being read."""


async def _check(ctx: Context, package: Package, ruleset: str, tally: _Tally) -> bool:
    """Check one package and apply what it finds; False if it is gone meanwhile."""
    workspace = package.workspace
    manifest = await ctx.read(
        lambda conn: db_skills.manifest_entries(conn, workspace, package.manifest_id)
    )
    if not manifest.entries:
        return False  # pruned since it was listed: every package has its `SKILL.md`

    async def vanished() -> None:
        # A blob not found: the head moved and retention and GC took the old package
        # since it was listed (no longer anything to check), or else it is damage.
        if not await ctx.read(lambda conn: db_rescan.manifest_exists(conn, package)):
            raise _Gone

    try:
        findings, fresh = await content.package_findings(ctx, manifest, vanished=vanished)
    except _Gone:
        return False
    digest = package_digest(manifest)

    async def apply(conn: AsyncConnection) -> tuple[int, int, int]:
        now = ctx.clock.now()
        blocked = opened = paused = 0
        # Without findings nothing can block: no need to look for the heads.
        holders = (
            await db_rescan.heads_holding(conn, workspace, package.manifest_hash)
            if findings
            else []
        )
        for skill_id in holders:
            outcome = await _consequences(
                conn, ctx, skill_id, package, findings, digest=digest, ruleset=ruleset
            )
            if outcome is not None:
                blocked += 1
                opened += outcome[0]
                paused += outcome[1]
        await db_scans.remember_clean(conn, fresh, ruleset, now)
        await db_rescan.record_check(
            conn,
            package,
            package_digest=digest,
            ruleset=ruleset,
            findings=len(findings),
            blocked_heads=blocked,
            now=now,
        )
        return blocked, opened, paused

    blocked, opened, paused = await ctx.locked(workspace, apply)
    tally.checked += 1
    tally.with_findings += bool(findings)
    tally.blocked += blocked
    tally.opened += opened
    tally.paused += paused
    return True


async def _consequences(
    conn: AsyncConnection,
    ctx: Context,
    skill_id: int,
    package: Package,
    findings: list[Finding],
    *,
    digest: str,
    ruleset: str,
) -> tuple[int, int] | None:
    """Block the skill if its head's approvals leave a finding uncovered: (opened, paused)."""
    workspace, now = package.workspace, ctx.clock.now()
    skill = await db_skills.skill_by_id(conn, workspace, skill_id)
    assert skill is not None, "the skill was just read under the same lock"
    head = await db_skills.version(conn, skill, skill.head)
    assert head is not None, "a skill's head names an existing version"
    approvals = await db_approvals.for_version(conn, workspace, head.id)
    blocked = evaluate(findings, approvals).blocked
    if blocked is None:
        return None  # every finding is approved for this version: recorded, stops nothing
    listed = [dict(f) for f in blocked.findings]
    existing = await db_rescan.open_review(conn, skill.id, package.manifest_hash)
    if existing is not None:
        await db_rescan.refresh_review(conn, existing, ruleset=ruleset, findings=listed)
        return 0, 0
    pause = not skill.use_paused
    review = await db_rescan.insert_review(
        conn,
        workspace=workspace,
        skill_id=skill.id,
        version=skill.head,
        manifest_hash=package.manifest_hash,
        package_digest=digest,
        ruleset=ruleset,
        findings=listed,
        paused_use=pause,
        opened_at=now,
    )
    reason = (
        f"rescan: content review {review}: finding #{blocked.ordinal} in {blocked.path} "
        f"looks like a {blocked.pattern_class}"
    )
    if pause:
        changes = control_changes(Action.STOP_USING, skill, reason)
        await db_skills.set_controls(conn, skill, changes, now=now)
    await db_skills.insert_event(
        conn,
        Scope(workspace, skill.agent),
        skill.slug,
        skill_id=skill.id,
        kind="use_paused" if pause else "content_review_opened",
        version=skill.head,
        manifest_hash=package.manifest_hash,
        payload={"actor": ACTOR, "reason": reason, "review": review, "ruleset": ruleset},
        now=now,
    )
    return 1, int(pause)


async def list_reviews(
    ctx: Context, workspace: str, *, limit: int = 50, before: int | None = None
) -> ReviewPage:
    """The open reviews of `workspace` (their package still the head), newest first."""
    check_scope_name("workspace", workspace)
    limit = max(1, min(limit, MAX_PAGE))
    before = page_before("before", before, MAX_ID)

    async def work(conn: AsyncConnection) -> list[ReviewRow]:
        return await db_rescan.open_page(conn, workspace, limit=limit + 1, before=before)

    rows = await ctx.read(work)
    items = rows[:limit]
    return ReviewPage(items, items[-1].id if len(rows) > limit else None)


async def get_review(ctx: Context, workspace: str, review_id: int) -> ReviewRow:
    """The review `review_id` of `workspace`, as recorded (`ReviewNotFound` if none)."""
    check_scope_name("workspace", workspace)
    if not names_row("review", review_id, MAX_ID):
        raise ReviewNotFound(review_id)
    found = await ctx.read(lambda conn: db_rescan.review(conn, workspace, review_id))
    if found is None:
        raise ReviewNotFound(review_id)
    return found


async def approve(ctx: Context, workspace: str, review_id: int, *, actor: str) -> ApproveResult:
    """Accept the review's findings for its package; resume the use the rescan stopped.

    Refused (`StateConflict`, action `approve`) when the review is closed, when its
    package is no longer the head (`superseded`), or when the rules changed after it was
    opened (`outdated`: the next rescan brings it up to date).
    """
    check_text("actor", actor)
    found = await get_review(ctx, workspace, review_id)
    if found.status != "open":
        raise StateConflict("approve", found.status)
    if found.ruleset != ctx.scanner.fingerprint:
        raise StateConflict("approve", "outdated")
    scope = Scope(workspace, found.agent)
    stored = await stored_version(ctx, scope, found.slug, found.version)
    refs = [FindingRef(str(f["path"]), int(f["ordinal"])) for f in found.findings]
    verdict = await content.verdict(
        ctx, stored.manifest, None, allowed=stored.approvals, approve=refs
    )
    if verdict.blocked is not None:
        raise verdict.blocked

    async def work(conn: AsyncConnection) -> bool:
        now = ctx.clock.now()
        skill = await db_skills.skill_by_id(conn, workspace, found.skill_id)
        head = None if skill is None else await db_skills.version(conn, skill, skill.head)
        if skill is None or skill.state == "deleted" or head is None:
            raise StateConflict("approve", "withdrawn")
        if head.number != found.version or head.manifest_hash != found.manifest_hash:
            raise StateConflict("approve", "superseded")
        await db_approvals.replace(conn, workspace, head.id, verdict.kept, actor=actor, now=now)
        await db_rescan.close_review(conn, review_id, status="approved", actor=actor, now=now)
        await db_skills.insert_event(
            conn,
            scope,
            skill.slug,
            skill_id=skill.id,
            kind="findings_approved",
            version=head.number,
            manifest_hash=head.manifest_hash,
            payload={
                "actor": actor,
                "findings": [{"path": r.path, "ordinal": r.ordinal} for r in refs],
                "still_blocked": False,
                "review": review_id,
            },
            now=now,
        )
        if not (found.paused_use and skill.use_paused):
            return False
        changes = control_changes(Action.RESUME_USE, skill)
        await db_skills.set_controls(conn, skill, changes, now=now)
        await db_skills.insert_event(
            conn,
            scope,
            skill.slug,
            skill_id=skill.id,
            kind="use_resumed",
            version=head.number,
            manifest_hash=head.manifest_hash,
            payload={"actor": actor, "reason": None, "review": review_id},
            now=now,
        )
        return True

    resumed = await ctx.locked(workspace, work)
    return ApproveResult(await get_review(ctx, workspace, review_id), resumed)


HANDLERS: Final[dict[str, queue.JobHandler]] = {RESCAN: run_rescan}
"""The job kind of the rescan and its handler (what a worker runs)."""
