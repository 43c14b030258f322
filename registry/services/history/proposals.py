"""Proposals: listing them per scope, showing one with its diffs, and the owner's decisions.

A proposal is recorded by the write path (docs/history.md): an automated write to a skill
under human control, or an owner's draft kept after a lost compare-and-swap. The decisions:

- `apply`: publish the proposal's package as the next version, a compare-and-swap on the
  proposal's base. A stale proposal (the head moved) is refused with `ProposalStale`.
  Nothing is uploaded: the proposal's blobs are stored and referenced by its manifest.
- `alternative`: publish the owner's edited package instead (an owner edit of the base,
  compare-and-swap on the base too); the proposal is closed as applied with that decision.
- `keep_current`: close the proposal (open or stale) as rejected; the head stays.

Each decision is one locked transaction with one outbox event (`proposal_applied` or
`proposal_decided`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import proposals as db_proposals
from registry.db import skills as db_skills
from registry.db.tables import PENDING_PROPOSAL_STATUSES
from registry.domain.arguments import RULE_TYPE, check_choice, check_flag, check_text, type_name
from registry.domain.manifest import Manifest, ManifestDiff
from registry.domain.model import FileInput, Origin, PackageFile, Publication, Scope
from registry.domain.numbers import MAX_ID, names_row, page_before
from registry.errors import ArgumentInvalid, ProposalNotFound, StateConflict
from registry.services.context import Context
from registry.services.history.diff import FileChange, diff_manifests
from registry.services.read import read_files
from registry.services.write import content
from registry.services.write.diversion import check_decidable
from registry.services.write.edit import edit
from registry.services.write.publish import publish_manifest
from registry.services.write.request import ProposalDecision, Screening, WriteRequest

MAX_PAGE: Final = 200

Decision = Literal["apply", "alternative", "keep_current"]
DECISIONS: Final[tuple[Decision, ...]] = ("apply", "alternative", "keep_current")


@dataclass(frozen=True)
class Changes:
    """Paths added, changed and removed from one package to another."""

    added: list[str]
    changed: list[str]
    removed: list[str]

    @classmethod
    def of(cls, diff: ManifestDiff) -> Changes:
        return cls(diff.added, diff.changed, diff.removed)


@dataclass(frozen=True)
class ProposalSummary:
    """A proposal with what it changes against its base and against the current head.

    `against_head` is None when the skill was deleted. `kind` says what the owner decides
    (`learning`: an automated change; `suppressed`: one that would bring back a behaviour
    the owner undid, `suppression` naming it; `update`: a marketplace update of an edited
    copy; `draft`: the owner's own draft kept after a lost compare-and-swap).
    """

    id: int
    agent: str
    slug: str
    status: str
    kind: str
    base_version: int
    head: int
    origin: str
    actor: str
    message: str
    sources: list[str]
    manifest_hash: str
    file_count: int
    total_size: int
    created_at: datetime
    decision: str | None
    decided_by: str | None
    decided_at: datetime | None
    applied_version: int | None
    against_base: Changes
    against_head: Changes | None
    suppression: int | None = None


@dataclass(frozen=True)
class ProposalPage:
    """A page of proposals, newest first; pass `next_before` back as `before`."""

    items: list[ProposalSummary]
    next_before: int | None


@dataclass(frozen=True)
class ProposalDetail:
    """A proposal and its file-level diffs (text previews, or full diffs on request)."""

    summary: ProposalSummary
    diff_base: list[FileChange]
    diff_head: list[FileChange] | None


@dataclass(frozen=True)
class DecisionResult:
    """What a decision did: the proposal's new status and, if it published, the version."""

    proposal: int
    decision: Decision
    status: str
    publication: Publication | None


async def _version_manifest(
    conn: AsyncConnection, skill: db_skills.SkillRow, number: int
) -> Manifest:
    row = await db_skills.version(conn, skill, number)
    if row is None:
        # Retention may have pruned the base; compare against nothing rather than fail.
        return Manifest()
    return await db_skills.manifest_entries(conn, skill.workspace, row.manifest_id)


@dataclass(frozen=True)
class _Loaded:
    summary: ProposalSummary
    proposed: Manifest
    base: Manifest
    head: Manifest | None
    row: db_proposals.ProposalRow


async def _load(
    conn: AsyncConnection, listed: db_proposals.ListedProposal, scope: Scope
) -> _Loaded:
    row = listed.proposal
    skill = await db_skills.skill_by_id(conn, scope.workspace, row.skill_id)
    assert skill is not None
    proposed = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
    base = await _version_manifest(conn, skill, row.base_version)
    head = None if skill.state == "deleted" else await _version_manifest(conn, skill, skill.head)
    summary = ProposalSummary(
        id=row.id,
        agent=listed.agent,
        slug=listed.slug,
        status=row.status,
        kind=row.kind,
        base_version=row.base_version,
        head=listed.head,
        origin=row.origin,
        actor=row.actor,
        message=row.message,
        sources=list(row.sources),
        manifest_hash=row.manifest_hash,
        file_count=row.file_count,
        total_size=row.total_size,
        created_at=row.created_at,
        decision=row.decision,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        applied_version=row.applied_version,
        against_base=Changes.of(base.diff(proposed)),
        against_head=None if head is None else Changes.of(head.diff(proposed)),
        suppression=row.suppression_id,
    )
    return _Loaded(summary, proposed, base, head, row)


async def summarise(
    conn: AsyncConnection, listed: db_proposals.ListedProposal, scope: Scope
) -> ProposalSummary:
    """A listed proposal with its changes against its base and the current head."""
    return (await _load(conn, listed, scope)).summary


async def list_proposals(
    ctx: Context,
    scope: Scope,
    *,
    pending_only: bool = True,
    limit: int = 50,
    before: int | None = None,
) -> ProposalPage:
    """The proposals of `scope`, newest first (only open and stale ones by default)."""
    limit = max(1, min(limit, MAX_PAGE))
    before = page_before("before", before, MAX_ID)

    async def work(conn: AsyncConnection) -> ProposalPage:
        listed = await db_proposals.in_scope_page(
            conn,
            scope,
            statuses=PENDING_PROPOSAL_STATUSES if pending_only else None,
            limit=limit + 1,
            before=before,
        )
        items = [(await _load(conn, p, scope)).summary for p in listed[:limit]]
        next_before = items[-1].id if len(listed) > limit else None
        return ProposalPage(items, next_before)

    return await ctx.read(work)


async def _find(ctx: Context, scope: Scope, proposal_id: int) -> _Loaded:
    if not names_row("proposal_id", proposal_id, MAX_ID):
        raise ProposalNotFound(proposal_id)

    async def work(conn: AsyncConnection) -> _Loaded:
        listed = await db_proposals.find(conn, scope, proposal_id)
        if listed is None:
            raise ProposalNotFound(proposal_id)
        return await _load(conn, listed, scope)

    return await ctx.read(work)


async def show(
    ctx: Context, scope: Scope, proposal_id: int, *, full: bool = False
) -> ProposalDetail:
    """A proposal of `scope` with its diffs against its base and the current head."""
    loaded = await _find(ctx, scope, proposal_id)
    diff_base = await diff_manifests(ctx, loaded.base, loaded.proposed, full=full)
    diff_head = (
        None
        if loaded.head is None
        else await diff_manifests(ctx, loaded.head, loaded.proposed, full=full)
    )
    return ProposalDetail(loaded.summary, diff_base, diff_head)


async def read_proposal(ctx: Context, scope: Scope, proposal_id: int) -> dict[str, PackageFile]:
    """The proposed package's files, every digest verified."""
    loaded = await _find(ctx, scope, proposal_id)
    return await read_files(ctx, loaded.proposed)


def check_decision(argument: str, value: object) -> Decision:
    """`value` if it is one of `DECISIONS`, else `ArgumentInvalid` (docs/write-path.md)."""
    return check_choice(argument, value, DECISIONS)


def check_decision_files(argument: str, files: object, decision: Decision) -> None:
    """Files come with the `alternative` decision, and only with it (`ArgumentInvalid`)."""
    if decision == "alternative" and files is None:
        raise ArgumentInvalid(argument, RULE_TYPE, "a mapping of files for an alternative")
    if decision != "alternative" and files is not None:
        detail = f"None unless the decision is alternative, not {type_name(files)}"
        raise ArgumentInvalid(argument, RULE_TYPE, detail)


async def decide(
    ctx: Context,
    scope: Scope,
    proposal_id: int,
    decision: Decision,
    *,
    actor: str,
    files: Mapping[str, FileInput] | None = None,
    keep_auto_improve: bool = False,
) -> DecisionResult:
    """Record the owner's decision on a pending proposal (see the module docstring).

    `files` is the edited package of an `alternative` (required for it, refused otherwise).
    """
    decision = check_decision("decision", decision)
    check_decision_files("files", files, decision)
    check_flag("keep_auto_improve", keep_auto_improve)
    check_text("actor", actor)
    loaded = await _find(ctx, scope, proposal_id)
    row, slug = loaded.row, loaded.summary.slug
    # Early refusal; the same check runs again under the lock.
    check_decidable(row, decision, loaded.summary.head)
    if decision == "keep_current":
        return await _keep_current(ctx, scope, slug, row, actor)
    decides = ProposalDecision(row.id, decision, actor)
    deleted = loaded.head is None
    if decision == "alternative" and deleted:
        # A `suppressed` proposal on a deleted skill: apply it (a new skill) or keep it out.
        raise StateConflict(decision, "skill deleted")
    if decision == "alternative":
        assert files is not None
        publication = await edit(
            ctx,
            scope,
            slug,
            files,
            base_version=row.base_version,
            actor=actor,
            keep_auto_improve=keep_auto_improve,
            decides=decides,
        )
        return DecisionResult(row.id, decision, "applied", publication)
    kept = await content.check(ctx, loaded.proposed, None, allowed=row.approval_values())
    request = WriteRequest(
        scope=scope,
        slug=slug,
        # Applying a proposal on a deleted skill gives its slug a new skill.
        expected_head=None if deleted else row.base_version,
        origin=Origin(row.origin),
        actor=row.actor,
        message=row.message,
        sources=tuple(row.sources),
        decides=decides,
    )
    publication = await publish_manifest(
        ctx, request, loaded.proposed, {}, screening=Screening(approvals=kept)
    )
    return DecisionResult(row.id, decision, "applied", publication)


async def _keep_current(
    ctx: Context, scope: Scope, slug: str, row: db_proposals.ProposalRow, actor: str
) -> DecisionResult:
    async def work(conn: AsyncConnection) -> DecisionResult:
        now = ctx.clock.now()
        current = await db_proposals.get(conn, scope, row.id)
        if current is None:
            raise ProposalNotFound(row.id)
        skill = await db_skills.skill_by_id(conn, scope.workspace, current.skill_id)
        assert skill is not None
        check_decidable(current, "keep_current", skill.head)
        await db_proposals.close(
            conn, current, status="rejected", decision="keep_current", actor=actor, now=now
        )
        await db_skills.insert_event(
            conn,
            scope,
            slug,
            skill_id=skill.id,
            kind="proposal_decided",
            version=skill.head,
            manifest_hash=current.manifest_hash,
            payload={"proposal": current.id, "decision": "keep_current", "actor": actor},
            now=now,
        )
        return DecisionResult(current.id, "keep_current", "rejected", None)

    return await ctx.locked(scope.workspace, work)
