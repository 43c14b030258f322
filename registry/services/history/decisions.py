"""One list of open decisions across a workspace's agents, and decisions in batches.

An owner decides for every agent of a workspace, so the open proposals of all of them are
one list (`list_decisions`), filtered by agent, origin and kind (`learning`, `suppressed`,
`update`, `draft`: docs/history.md). `decide_many` takes several decisions at once; each
is still its own decision (`proposals.decide`: its own locked transaction, a
compare-and-swap on the proposal's base), so one that finds its proposal stale, decided
or gone fails alone, with its error, and the others go through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import proposals as db_proposals
from registry.db.tables import PENDING_PROPOSAL_STATUSES, PROPOSAL_KINDS
from registry.domain.arguments import check_choice, check_flag, check_members, check_text
from registry.domain.model import FileInput, Scope, check_scope_name, check_workspace
from registry.domain.numbers import MAX_ID, names_row, page_before
from registry.errors import ProposalNotFound, RegistryError
from registry.services.context import Context
from registry.services.history.proposals import (
    MAX_PAGE,
    Decision,
    DecisionResult,
    ProposalPage,
    check_decision,
    check_decision_files,
    decide,
    summarise,
)

KINDS: Final = PROPOSAL_KINDS


@dataclass(frozen=True)
class DecisionRequest:
    """One decision of a batch: the proposal, the decision and, for `alternative`, files."""

    proposal: int
    decision: Decision
    files: Mapping[str, FileInput] | None = None
    keep_auto_improve: bool = False


@dataclass(frozen=True)
class DecisionOutcome:
    """What one decision of a batch did: its result, or the error that refused it alone.

    `error` holds the refusal's `code`, `message` and `details` (as the CLI and HTTP
    report any error).
    """

    proposal: int
    decision: Decision
    ok: bool
    result: DecisionResult | None = None
    error: dict[str, object] | None = None


async def list_decisions(
    ctx: Context,
    workspace: str,
    *,
    agent: str | None = None,
    origin: str | None = None,
    kind: str | None = None,
    limit: int = 50,
    before: int | None = None,
) -> ProposalPage:
    """The open decisions (pending proposals) of every agent of `workspace`, newest first."""
    check_workspace(workspace)
    if agent is not None:
        check_scope_name("agent", agent)
    if kind is not None:
        kind = check_choice("kind", kind, KINDS)
    limit = max(1, min(limit, MAX_PAGE))
    before = page_before("before", before, MAX_ID)

    async def work(conn: AsyncConnection) -> ProposalPage:
        listed = await db_proposals.workspace_page(
            conn,
            workspace,
            agent=agent,
            origin=origin,
            kind=kind,
            statuses=PENDING_PROPOSAL_STATUSES,
            limit=limit + 1,
            before=before,
        )
        items = [await summarise(conn, p, Scope(workspace, p.agent)) for p in listed[:limit]]
        next_before = items[-1].id if len(listed) > limit else None
        return ProposalPage(items, next_before)

    return await ctx.read(work)


async def decide_many(
    ctx: Context, workspace: str, decisions: Sequence[DecisionRequest], *, actor: str
) -> list[DecisionOutcome]:
    """Take each decision in turn, in the order given; each succeeds or fails alone."""
    check_workspace(workspace)
    check_text("actor", actor)
    # The whole batch is checked before any decision is taken (a generator is read once).
    decisions = check_members("requests", decisions, DecisionRequest, "DecisionRequest")
    for n, item in enumerate(decisions, start=1):
        check_decision(f"requests/{n}.decision", item.decision)
        check_decision_files(f"requests/{n}.files", item.files, item.decision)
        check_flag(f"requests/{n}.keep_auto_improve", item.keep_auto_improve)
    outcomes = []
    for item in decisions:
        try:
            scope = await _scope_of(ctx, workspace, item.proposal)
            result = await decide(
                ctx,
                scope,
                item.proposal,
                item.decision,
                actor=actor,
                files=item.files,
                keep_auto_improve=item.keep_auto_improve,
            )
        except RegistryError as exc:
            error: dict[str, object] = {
                "code": exc.code,
                "message": str(exc),
                "details": exc.details(),
            }
            outcomes.append(DecisionOutcome(item.proposal, item.decision, ok=False, error=error))
        else:
            outcomes.append(DecisionOutcome(item.proposal, item.decision, ok=True, result=result))
    return outcomes


async def _scope_of(ctx: Context, workspace: str, proposal_id: int) -> Scope:
    if not names_row("proposal", proposal_id, MAX_ID):
        raise ProposalNotFound(proposal_id)

    async def work(conn: AsyncConnection) -> db_proposals.ListedProposal | None:
        return await db_proposals.find_in_workspace(conn, workspace, proposal_id)

    found = await ctx.read(work)
    if found is None:
        raise ProposalNotFound(proposal_id)
    return Scope(workspace, found.agent)
