"""`reg.learning`: the owner's control over automated learning (docs/history.md).

One list of open decisions across a workspace's agents and batch decisions; pending writes
(learning writes waiting for a saved slot); suppressions (behaviours the owner undid); and
the learning status of a workspace. The web console, the CLI and HTTP all use these.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.domain.arguments import check_flag
from registry.services.context import Context
from registry.services.history import decisions
from registry.services.history.decisions import DecisionOutcome, DecisionRequest
from registry.services.history.proposals import ProposalPage
from registry.services.learning import pending, suppressions
from registry.services.learning import status as learning
from registry.services.learning.pending import PendingWriteInfo
from registry.services.learning.status import LearningStatus
from registry.services.learning.suppressions import SuppressionInfo


class Learning:
    """The owner's side of automated learning: `reg.learning`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def decisions(
        self,
        workspace: str,
        *,
        agent: str | None = None,
        origin: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> ProposalPage:
        """Open decisions (pending proposals) of every agent of `workspace`, newest first.

        Filters: `agent`, `origin` (`learning`, `marketplace_update`, `edit`, ...), `kind`
        (`learning`, `suppressed`, `update`, `draft`). Page with `next_before`.
        """
        return await decisions.list_decisions(
            self.ctx, workspace, agent=agent, origin=origin, kind=kind, limit=limit, before=before
        )

    async def decide_many(
        self, workspace: str, requests: Sequence[DecisionRequest], *, actor: str
    ) -> list[DecisionOutcome]:
        """Decide several proposals (apply, alternative, keep_current), each on its own.

        Each decision is its own compare-and-swap on its skill: one that is stale, already
        decided or missing fails alone (`DecisionOutcome.error`) and the rest go through.
        """
        return await decisions.decide_many(self.ctx, workspace, requests, actor=actor)

    async def pending_writes(
        self, workspace: str, *, agent: str | None = None, waiting_only: bool = True
    ) -> list[PendingWriteInfo]:
        """Learning writes waiting for a saved slot (all of them, closed ones too, if asked)."""
        check_flag("waiting_only", waiting_only)
        return await pending.list_pending(
            self.ctx, workspace, agent=agent, waiting_only=waiting_only
        )

    async def drop_pending_write(
        self, workspace: str, pending_id: int, *, actor: str
    ) -> PendingWriteInfo:
        """Drop a waiting write: it is never applied (`StateConflict` if it is closed)."""
        return await pending.drop_pending(self.ctx, workspace, pending_id, actor=actor)

    async def apply_pending_writes(
        self, workspace: str | None = None, agent: str | None = None
    ) -> list[PendingWriteInfo]:
        """Apply waiting writes in order while there is room; returns those that changed.

        Runs by itself after a delete and when the HTTP service starts; call it after
        raising the capacity in a process that keeps running.
        """
        return await pending.apply_pending(self.ctx, workspace, agent)

    async def suppressions(
        self, workspace: str, *, agent: str | None = None, active_only: bool = True
    ) -> list[SuppressionInfo]:
        """Behaviours the owner undid (restores) or removed (deletes), newest first."""
        check_flag("active_only", active_only)
        return await suppressions.list_suppressions(
            self.ctx, workspace, agent=agent, active_only=active_only
        )

    async def lift_suppression(
        self, workspace: str, suppression_id: int, *, actor: str
    ) -> SuppressionInfo:
        """Lift a suppression: learning may bring that behaviour back without a decision."""
        return await suppressions.lift(self.ctx, workspace, suppression_id, actor=actor)

    async def status(self, workspace: str, agent: str | None = None) -> LearningStatus:
        """The workspace's learning section: pending writes, decisions, suppressions, ..."""
        return (await learning.learning_status(self.ctx, workspace, agent))[0]
