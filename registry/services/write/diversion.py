"""The write path's history hooks, run inside the publish transaction (lock held).

- A write that becomes a proposal records it (`propose`); `learning.route` decides which
  writes do (an automated write the owner's rules divert, a kept draft, a marketplace
  update of an edited copy) and with which kind.
- An owner's edit that asked to keep its draft records it as a (stale) proposal when its
  compare-and-swap fails (`propose`, with the draft's base).
- A write that decides a proposal finds it open and made on the current head
  (`pending_proposal`), and closes it as applied when the head moves (`head_moved`) or,
  for a `suppressed` proposal on a deleted skill, when its slug gets a new skill
  (`skill_created`).
- Every head move makes the skill's open proposal stale (`head_moved`).
- A learning write never supersedes a pending `draft` or `update` proposal: it is refused
  with `StateConflict` (`propose`); it may supersede a `learning` or `suppressed` one.
- A version may not list an excluded source (`check_sources`).

Each hook only adds rows to the one transaction; the caller writes its one event (or, for a
proposal, `propose` writes it instead of the version's).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import exclusions as db_exclusions
from registry.db import proposals as db_proposals
from registry.db import skills as db_skills
from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest
from registry.domain.model import Origin, Publication
from registry.errors import ProposalNotFound, ProposalStale, SourceExcluded, StateConflict
from registry.services.context import Context
from registry.services.write.request import WriteRequest

OWNER_KINDS = ("draft", "update")
"""Kinds of pending proposal a learning write may not supersede: the owner's kept draft and
a marketplace update of an edited copy wait for the owner's decision (docs/history.md)."""


def event_kind(request: WriteRequest) -> str:
    """The outbox event kind of a write that appends a version."""
    if request.decides is not None:
        return "proposal_applied"
    if request.origin is Origin.RESTORE:
        return "restored"
    return "published"


async def pending_proposal(
    conn: AsyncConnection, request: WriteRequest, skill: db_skills.SkillRow | None
) -> db_proposals.ProposalRow | None:
    """The proposal this write decides, checked to be open and made on the current head.

    A `suppressed` proposal on a deleted skill is decided by a write that creates the
    slug's new skill (`skill` is None then): it is checked against the deleted head.
    """
    decides = request.decides
    if decides is None:
        return None
    proposal = await db_proposals.get(conn, request.scope, decides.proposal)
    if proposal is None:
        raise ProposalNotFound(decides.proposal)
    if skill is None:
        owner = await db_skills.skill_by_id(conn, request.scope.workspace, proposal.skill_id)
        if owner is None or owner.state != "deleted" or owner.slug != request.slug:
            raise ProposalNotFound(decides.proposal)
        check_decidable(proposal, decides.decision, owner.head)
        return proposal
    if proposal.skill_id != skill.id:
        raise ProposalNotFound(decides.proposal)
    check_decidable(proposal, decides.decision, skill.head)
    return proposal


def check_decidable(proposal: db_proposals.ProposalRow, decision: str, head: int) -> None:
    """Refuse a decision the proposal's status does not allow (docs/history.md)."""
    if decision == "keep_current":
        if not proposal.pending:
            raise StateConflict(decision, f"proposal {proposal.status}")
        return
    if proposal.status == "stale" or (proposal.status == "open" and proposal.base_version != head):
        raise ProposalStale(proposal.id, proposal.base_version, head)
    if proposal.status != "open":
        raise StateConflict(decision, f"proposal {proposal.status}")


async def check_sources(conn: AsyncConnection, request: WriteRequest) -> None:
    """A version may not list a source its workspace has excluded (docs/history.md)."""
    excluded = await db_exclusions.excluded(conn, request.scope.workspace, request.sources)
    if excluded:
        raise SourceExcluded(excluded[0])


async def head_moved(
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow,
    *,
    decided: db_proposals.ProposalRow | None,
    number: int,
    now: datetime,
    pending: bool = True,
) -> list[int]:
    """Close the decided proposal as applied; return the ids of proposals made stale.

    `pending=False` (the skill had no pending proposal when the lock was taken) skips the
    update that would find nothing to make stale.
    """
    if decided is not None and request.decides is not None:
        await db_proposals.close(
            conn,
            decided,
            status="applied",
            decision=request.decides.decision,
            actor=request.decides.actor,
            now=now,
            applied_version=number,
        )
    # A proposal made on the old head can no longer be applied.
    if not pending:
        return []
    return await db_proposals.stale_open(conn, skill, now)


async def skill_created(
    conn: AsyncConnection,
    request: WriteRequest,
    *,
    decided: db_proposals.ProposalRow | None,
    number: int,
    now: datetime,
) -> None:
    """Close the decided proposal of a deleted skill whose slug this write re-created."""
    if decided is not None and request.decides is not None:
        await db_proposals.close(
            conn,
            decided,
            status="applied",
            decision=request.decides.decision,
            actor=request.decides.actor,
            now=now,
            applied_version=number,
        )


async def propose(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow,
    *,
    approvals: Sequence[Approval],
    manifest: Manifest,
    manifest_id: int,
    base: int,
    write_id: str,
    now: datetime,
    kind: str = "learning",
    suppression: int | None = None,
) -> Publication:
    """Record the package as the skill's pending proposal (superseding the previous one).

    A learning write whose skill has a pending `draft` or `update` proposal is refused
    (`StateConflict`) instead: one proposal is pending per skill, and that one is the
    owner's to decide.

    `skill` may be a deleted skill: a learning write that would bring back its suppressed
    behaviour is recorded on it (`kind` `suppressed`).
    """
    status = "open" if base == skill.head else "stale"
    pending = await db_proposals.pending(conn, skill)
    if pending is not None and (
        pending.manifest_hash,
        pending.base_version,
        pending.status,
        pending.kind,
    ) == (manifest.hash, base, status, kind):
        # The same proposal again (a retried job): nothing new to decide on, no event.
        return _proposed(skill, manifest, pending.id, None, kind)
    if pending is not None and request.automated and pending.kind in OWNER_KINDS:
        # A guest never replaces the owner's kept draft or a marketplace update.
        raise StateConflict("learning write", f"{pending.kind} proposal {pending.id} pending")
    proposal_id, superseded = await db_proposals.record(
        conn,
        skill,
        base_version=base,
        status=status,
        manifest_id=manifest_id,
        manifest=manifest,
        origin=request.origin.value,
        actor=request.actor,
        message=request.message,
        sources=request.sources,
        approvals=approvals,
        baseline=request.baseline,
        write_id=write_id,
        now=now,
        kind=kind,
        suppression_id=suppression,
    )
    await ctx.hit("publish.proposal_rows")
    await db_skills.insert_event(
        conn,
        request.scope,
        request.slug,
        skill_id=skill.id,
        kind="proposed",
        version=skill.head,
        manifest_hash=manifest.hash,
        payload={
            "proposal": proposal_id,
            "base": base,
            "status": status,
            "kind": kind,
            "suppression": suppression,
            "origin": request.origin.value,
            "actor": request.actor,
            "superseded": superseded,
            "files": manifest.file_count,
            "bytes": manifest.total_size,
        },
        now=now,
    )
    return _proposed(skill, manifest, proposal_id, now, kind)


def _proposed(
    skill: db_skills.SkillRow,
    manifest: Manifest,
    proposal_id: int,
    now: datetime | None,
    kind: str,
) -> Publication:
    return Publication(
        version=0 if skill.state == "deleted" else skill.head,
        manifest_hash=manifest.hash,
        created=False,
        retired=None,
        unchanged=False,
        committed_at=now,
        proposal=proposal_id,
        proposal_kind=kind,
    )
