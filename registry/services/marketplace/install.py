"""Marketplace install and update: listings copied into workspaces, owner edits kept.

docs/marketplace.md describes the whole feature; this module holds the jobs' effects.

Both are durable jobs (`registry.services.jobs.queue`); these are their handlers and the
functions that enqueue them. The listing version is resolved when the job is enqueued, so
a job always does the same thing however often it runs.

- **Install** (`marketplace.install`): the listing version's manifest is published into
  the workspace as a new skill (origin `marketplace_install`, kind `installed`, counted
  against `capacity_installed`) with its baseline (listing, version, manifest hash). No
  blob is copied: the manifest names blobs that are already live. An owner-saved skill of
  the same slug is never replaced (`OwnershipConflict`).
- **Update** (`marketplace.update`): if the copy's head still is its baseline, the new
  listing version is published (origin `marketplace_update`) and the baseline moves, in
  one compare-and-swap on the copy's head. If the owner edited the copy, the three
  manifests are merged per file (`registry.domain.merge`): a clean merge is validated,
  scanned and published like any package (unless the policy is `propose`); a conflict, or
  the `propose` policy, records a proposal for the owner instead.

Exactly one effect: every version a job writes lists the source `job:<id>`, and a job
that finds a version with its source (its worker died after the commit) reports that
version instead of writing again. Otherwise the write path's own idempotence and
compare-and-swap make a re-run a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import marketplace as db_marketplace
from registry.db import skills as db_skills
from registry.db.jobs import JobRow
from registry.domain.approvals import Approval
from registry.domain.arguments import check_optional_text, check_text
from registry.domain.manifest import Manifest
from registry.domain.merge import MergeResult, merge_approvals, merge_manifests
from registry.domain.model import Origin, Publication, Scope, check_slug
from registry.domain.package import validate_package
from registry.errors import (
    HeadConflict,
    ListingNotFound,
    NotInstalled,
    OwnershipConflict,
    SkillExists,
    SkillNotFound,
)
from registry.services.context import Context
from registry.services.jobs import queue as jobs
from registry.services.marketplace import catalog
from registry.services.read import read_files
from registry.services.write import content, publish
from registry.services.write.request import Screening, WriteRequest

INSTALL: Final = "marketplace.install"
UPDATE: Final = "marketplace.update"
DEFAULT_ACTOR: Final = "marketplace"

Policy = Literal["merge", "propose"]
POLICIES: Final[tuple[Policy, ...]] = ("merge", "propose")


def job_source(job_id: int) -> str:
    """The source every version a job writes lists (how a re-run finds its effect)."""
    return f"job:{job_id}"


def listing_source(listing: str, version: int) -> str:
    return f"listing:{listing}@{version}"


def install_key(scope: Scope, listing: str, version: int) -> str:
    """The default idempotency key of an install: one per scope, listing and version."""
    return f"install:{scope.workspace}:{scope.agent}:{listing}@{version}"


def update_key(scope: Scope, slug: str, listing: str, version: int, policy: str) -> str:
    """The default idempotency key of an update: one per copy, target version and policy."""
    return f"update:{scope.workspace}:{scope.agent}:{slug}:{listing}@{version}:{policy}"


# ---------------------------------------------------------------- enqueue


async def enqueue_install(
    ctx: Context,
    scope: Scope,
    listing: str,
    version: int | None = None,
    *,
    actor: str = DEFAULT_ACTOR,
    key: str | None = None,
    max_attempts: int | None = None,
) -> jobs.Enqueued:
    """Queue the install of `listing` (its newest version if None) into `scope`."""
    check_slug(listing)
    check_text("actor", actor)
    check_optional_text("key", key)
    target = await catalog.listing_version(ctx, listing, version, for_use=True)
    payload = {
        "workspace": scope.workspace,
        "agent": scope.agent,
        "listing": listing,
        "version": target.version,
        "manifest_hash": target.manifest_hash,
        "actor": actor,
    }
    return await jobs.enqueue(
        ctx,
        INSTALL,
        payload,
        key=key or install_key(scope, listing, target.version),
        workspace=scope.workspace,
        max_attempts=max_attempts,
    )


async def enqueue_update(
    ctx: Context,
    scope: Scope,
    slug: str,
    *,
    version: int | None = None,
    policy: Policy | None = None,
    actor: str = DEFAULT_ACTOR,
    key: str | None = None,
    max_attempts: int | None = None,
) -> jobs.Enqueued:
    """Queue the update of the installed copy `slug` to its listing's version `version`."""
    check_text("actor", actor)
    check_optional_text("key", key)
    chosen = policy or ctx.settings.update_policy
    if chosen not in POLICIES:
        msg = f"policy must be one of {', '.join(POLICIES)}, not {chosen!r}"
        raise ValueError(msg)
    copy = await _read_copy(ctx, scope, slug)
    listing = copy.listing
    target = await catalog.listing_version(ctx, listing, version, for_use=True)
    payload = {
        "workspace": scope.workspace,
        "agent": scope.agent,
        "slug": slug,
        "listing": listing,
        "version": target.version,
        "policy": chosen,
        "actor": actor,
    }
    return await jobs.enqueue(
        ctx,
        UPDATE,
        payload,
        key=key or update_key(scope, slug, listing, target.version, chosen),
        workspace=scope.workspace,
        max_attempts=max_attempts,
    )


# ---------------------------------------------------------------- the copy


@dataclass(frozen=True)
class _Copy:
    skill: db_skills.SkillRow
    manifest: Manifest

    @property
    def listing(self) -> str:
        assert self.skill.baseline_listing is not None
        return self.skill.baseline_listing

    @property
    def baseline(self) -> tuple[str, int, str]:
        skill = self.skill
        assert skill.baseline_version is not None
        assert skill.baseline_manifest_hash is not None
        return self.listing, skill.baseline_version, skill.baseline_manifest_hash

    @property
    def edited(self) -> bool:
        """The owner changed the copy since its baseline."""
        return self.manifest.hash != self.baseline[2]


async def _read_copy(ctx: Context, scope: Scope, slug: str) -> _Copy:
    async def work(conn: AsyncConnection) -> _Copy:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        if skill.kind != "installed" or skill.baseline_manifest_hash is None:
            raise NotInstalled(slug, skill.kind)
        head = await db_skills.version(conn, skill, skill.head)
        assert head is not None, "a skill's head names an existing version"
        return _Copy(
            skill, await db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
        )

    return await ctx.read(work)


async def _already_applied(
    ctx: Context, scope: Scope, job: JobRow, slug: str | None = None
) -> dict[str, Any] | None:
    """The result of this job's effect if an earlier run of it committed one.

    The effect is a version listing the job's source or, for an update, a proposal that
    lists it.
    """
    source = job_source(job.id)

    async def work(conn: AsyncConnection) -> dict[str, Any] | None:
        applied = [
            a
            for a in await db_marketplace.versions_with_source(conn, scope.workspace, source)
            if a.agent == scope.agent
        ]
        if applied:
            last = applied[-1]
            return {"slug": last.slug, "version": last.version, "manifest_hash": last.manifest_hash}
        skill = None if slug is None else await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            return None
        proposed = await db_marketplace.proposals_with_source(
            conn, scope.workspace, skill.id, source
        )
        if not proposed:
            return None
        proposal, manifest_hash = proposed[-1]
        return {
            "outcome": "proposed",
            "slug": skill.slug,
            "version": skill.head,
            "proposal": proposal,
            "proposed_manifest_hash": manifest_hash,
        }

    found = await ctx.read(work)
    if found is None:
        return None
    return {"workspace": scope.workspace, "agent": scope.agent, **found, "recovered": True}


# ---------------------------------------------------------------- install


async def run_install(ctx: Context, job: JobRow) -> dict[str, Any]:
    """The install job's effect (idempotent; see the module docstring)."""
    payload = job.payload
    scope = Scope(payload["workspace"], payload["agent"])
    listing, version = str(payload["listing"]), int(payload["version"])
    base = {"listing": listing, "listing_version": version}
    done = await _already_applied(ctx, scope, job)
    if done is not None:
        return {"outcome": "installed", **base, **done}
    target = await catalog.listing_version(ctx, listing, version, for_use=True)
    await _check_installable(ctx, scope, listing, target.manifest_hash)
    request = WriteRequest(
        scope=scope,
        slug=listing,
        expected_head=None,
        origin=Origin.MARKETPLACE_INSTALL,
        actor=str(payload.get("actor", DEFAULT_ACTOR)),
        message=f"installed {listing}@{version}",
        sources=(listing_source(listing, version), job_source(job.id)),
        baseline=(listing, version, target.manifest_hash),
    )
    # The same files as the listing version: its content-check approvals hold exactly.
    approvals = await catalog.listing_approvals(ctx, listing, version)
    pub = await publish.publish_manifest(
        ctx, request, target.manifest, {}, screening=Screening(approvals=approvals)
    )
    return {
        "outcome": "installed" if pub.created else "already_installed",
        **base,
        **_where(scope, listing, pub),
    }


async def _check_installable(ctx: Context, scope: Scope, slug: str, manifest_hash: str) -> None:
    """Refuse early what the publish transaction would refuse, with the precise reason.

    The write path treats re-saving the head's exact package as a no-op before it checks
    ownership, so an owner-saved skill that happens to hold the listing's package is
    caught here; the same ownership check runs again under the lock.
    """

    async def work(conn: AsyncConnection) -> tuple[db_skills.SkillRow, str] | None:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            return None
        head = await db_skills.version(conn, skill, skill.head)
        assert head is not None
        return skill, head.manifest_hash

    found = await ctx.read(work)
    if found is None:
        return
    skill, head_hash = found
    if skill.kind == "saved":
        raise OwnershipConflict(slug, "saved")
    if head_hash != manifest_hash:
        # Another version is installed (or the copy was edited): that is an update.
        raise SkillExists(slug, skill.head)


def _where(scope: Scope, slug: str, pub: Publication) -> dict[str, Any]:
    return {
        "workspace": scope.workspace,
        "agent": scope.agent,
        "slug": slug,
        "version": pub.version,
        "manifest_hash": pub.manifest_hash,
    }


# ---------------------------------------------------------------- update


async def run_update(ctx: Context, job: JobRow) -> dict[str, Any]:
    """The update job's effect (idempotent; see the module docstring)."""
    payload = job.payload
    scope = Scope(payload["workspace"], payload["agent"])
    slug, version = str(payload["slug"]), int(payload["version"])
    actor = str(payload.get("actor", DEFAULT_ACTOR))
    done = await _already_applied(ctx, scope, job, slug)
    if done is not None:
        return {"outcome": "updated", "listing_version": version, **done}
    copy = await _read_copy(ctx, scope, slug)
    listing, from_version, from_hash = copy.baseline
    target = await catalog.listing_version(ctx, listing, version, for_use=True)
    await ctx.hit("marketplace.copy_read")
    update = _Update(
        scope=scope,
        copy=copy,
        target=target,
        policy=str(payload.get("policy", "merge")),
        actor=actor,
        job_id=job.id,
        summary={
            "listing": listing,
            "from_version": from_version,
            "listing_version": target.version,
        },
    )
    if (from_version, from_hash) == (target.version, target.manifest_hash):
        return update.result("up_to_date")
    if from_version > target.version:
        # A newer update ran first (this job was queued before it): never back. The write
        # or baseline move below decides again under the lock (`_Update.request`).
        return update.result("superseded")
    if not copy.edited:
        return await _fast_forward(ctx, update)
    return await _merge(ctx, update)


@dataclass
class _Update:
    """One run of an update: the copy as read, the target, and what to report."""

    scope: Scope
    copy: _Copy
    target: catalog.ListingVersion
    policy: str
    actor: str
    job_id: int
    summary: dict[str, Any]

    @property
    def slug(self) -> str:
        return self.copy.skill.slug

    @property
    def baseline(self) -> tuple[str, int, str]:
        return self.copy.listing, self.target.version, self.target.manifest_hash

    def request(self, message: str = "") -> WriteRequest:
        """The write of this update: compare-and-swap on the head it read.

        The skill's id goes with the head (a copy deleted and installed again reaches the
        same head numbers), and the write path refuses a baseline older than the copy's
        (`rootchecks.check_root`): either is a `HeadConflict`, and the retry reads again.
        """
        listing, version, _ = self.baseline
        text = f"updated {listing} {self.summary['from_version']} -> {version}"
        return WriteRequest(
            scope=self.scope,
            slug=self.slug,
            expected_head=self.copy.skill.head,
            expected_skill=self.copy.skill.id,
            origin=Origin.MARKETPLACE_UPDATE,
            actor=self.actor,
            message=f"{text}{message}",
            sources=(listing_source(listing, version), job_source(self.job_id)),
            baseline=self.baseline,
        )

    def result(self, outcome: str, pub: Publication | None = None) -> dict[str, Any]:
        """The job's result; the head it left (the copy's, if `pub` is None)."""
        where = (
            _at_head(self.scope, self.slug, self.copy)
            if pub is None
            else _where(self.scope, self.slug, pub)
        )
        return {"outcome": outcome, **self.summary, **where}


async def _fast_forward(ctx: Context, update: _Update) -> dict[str, Any]:
    """The copy is unedited: publish the listing version as it is (with its approvals)."""
    target = update.target
    approvals = await catalog.listing_approvals(ctx, target.listing, target.version)
    pub = await publish.publish_manifest(
        ctx, update.request(), target.manifest, {}, screening=Screening(approvals=approvals)
    )
    if pub.unchanged:
        # The new listing version holds the same package as the old one.
        return update.result(await _move_baseline(ctx, update))
    return update.result("fast_forward", pub)


async def _merge(ctx: Context, update: _Update) -> dict[str, Any]:
    """The owner edited the copy: merge per file, publish a clean merge or propose."""
    copy = update.copy
    base = await _baseline_manifest(ctx, copy)
    merge = merge_manifests(base, copy.manifest, update.target.manifest)
    update.summary |= _merge_summary(merge)
    if merge.clean and merge.manifest.hash == copy.manifest.hash:
        # The copy already holds every upstream change (the owner made them): only the
        # baseline moves, whatever the policy (there is nothing to decide).
        return update.result(await _move_baseline(ctx, update))
    if not merge.clean or update.policy == "propose":
        return await _propose(ctx, update, merge)
    request = update.request(f", merged (kept {len(merge.kept)} owner changes)")
    pub = await _write_checked(ctx, update, merge, request)
    return update.result("merged", pub)


async def _write_checked(
    ctx: Context, update: _Update, merge: MergeResult, request: WriteRequest
) -> Publication:
    """Publish (or propose) a merged package after the checks any new package meets.

    A merge is a package state nobody checked yet: it is read back (every digest
    verified), validated and scanned. The content check allows what each file's side
    approved (`merge_approvals`), looked up only if the scan finds something.
    """
    files = await read_files(ctx, merge.manifest)
    package = validate_package(files, request.slug, ctx.limits)
    copy, target = update.copy, update.target

    async def allowed() -> tuple[Approval, ...]:
        mine = await content.approvals_of(ctx, update.scope, update.slug, copy.skill.head)
        upstream = await catalog.listing_approvals(ctx, target.listing, target.version)
        return merge_approvals(merge.manifest, copy.manifest, target.manifest, mine, upstream)

    verdict = await content.verdict(
        ctx, merge.manifest, package.files, allowed=allowed, remember=False
    )
    if verdict.blocked is not None:
        raise verdict.blocked
    await ctx.hit("write.validated")
    # As `publish.write_package` does: the clean digests are recorded with the claims.
    return await publish.publish_manifest(
        ctx, request, merge.manifest, package.files, screening=Screening.of(verdict)
    )


def _merge_summary(merge: MergeResult) -> dict[str, Any]:
    return {
        "taken": list(merge.taken),
        "kept": list(merge.kept),
        "conflicts": [{"path": c.path, "kind": c.kind} for c in merge.conflicts],
    }


def _at_head(scope: Scope, slug: str, copy: _Copy) -> dict[str, Any]:
    return {
        "workspace": scope.workspace,
        "agent": scope.agent,
        "slug": slug,
        "version": copy.skill.head,
        "manifest_hash": copy.manifest.hash,
    }


async def _baseline_manifest(ctx: Context, copy: _Copy) -> Manifest:
    """The listing version the copy was installed or last updated from (the merge base).

    Found by its hash in the catalog or, failing that, in the copy's own workspace (an
    install or a fast-forward stored the same manifest there), so a listing version that
    retention pruned from the catalog can still serve as a base.
    """
    listing, version, manifest_hash = copy.baseline
    workspaces = (ctx.settings.catalog_workspace, copy.skill.workspace)

    async def work(conn: AsyncConnection) -> Manifest | None:
        for workspace in workspaces:
            found = await db_marketplace.manifest_by_hash(conn, workspace, manifest_hash)
            if found is not None:
                return found
        return None

    manifest = await ctx.read(work)
    if manifest is None:
        raise ListingNotFound(listing, version)
    return manifest


async def _move_baseline(ctx: Context, update: _Update) -> str:
    """Move the copy's baseline without a new version: one locked transaction, one event.

    Compare-and-swap on the skill and the head the update read (`HeadConflict`: another
    skill under the slug, or another head); a no-op (no event) if the baseline already is
    the target, so retrying the transaction as a whole is safe, and `superseded` (no
    change) if the copy follows a newer listing version since the update read it.
    Returns the outcome.
    """
    scope, slug, read, baseline = (
        update.scope,
        update.slug,
        update.copy.skill,
        update.baseline,
    )

    async def work(conn: AsyncConnection) -> str:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        if skill.id != read.id or skill.head != read.head:
            raise HeadConflict(read.head, skill.head)
        current = (skill.baseline_listing, skill.baseline_version, skill.baseline_manifest_hash)
        if current == baseline:
            return "baseline_moved"
        if current[0] == baseline[0] and current[1] is not None and current[1] > baseline[1]:
            return "superseded"
        now = ctx.clock.now()
        await db_marketplace.move_baseline(conn, skill, baseline=baseline, now=now)
        await db_skills.insert_event(
            conn,
            scope,
            slug,
            skill_id=skill.id,
            kind="baseline_moved",
            version=skill.head,
            manifest_hash=baseline[2],
            payload={
                "listing": baseline[0],
                "from_version": current[1],
                "to_version": baseline[1],
                "actor": update.actor,
                "job": update.job_id,
            },
            now=now,
        )
        return "baseline_moved"

    return await ctx.locked(scope.workspace, work)


async def _propose(ctx: Context, update: _Update, merge: MergeResult) -> dict[str, Any]:
    """Record the merge as a proposal for the owner; the head and the baseline stay.

    For a conflicting path the proposal holds the upstream side (the owner's is the head,
    untouched); applying the proposal moves the baseline to the target listing version.
    The package is checked like any other first (`_write_checked`).
    """
    conflicts = len(merge.conflicts)
    why = f"{conflicts} conflicting paths" if conflicts else f"the {update.policy} policy"
    request = replace(update.request(f", proposed for the owner ({why})"), propose=True)
    pub = await _write_checked(ctx, update, merge, request)
    assert pub.proposal is not None, "a write with `propose` records a proposal"
    return {
        **update.result("proposed"),
        "proposal": pub.proposal,
        "proposed_manifest_hash": pub.manifest_hash,
    }


HANDLERS: Final[dict[str, jobs.JobHandler]] = {INSTALL: run_install, UPDATE: run_update}
"""The job kinds of the marketplace and their handlers (what a worker runs)."""
