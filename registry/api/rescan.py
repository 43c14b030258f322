"""`reg.rescan`: check what is in use again when the content rules change.

A rescan is a durable job (kind `rescan`) that checks every live head and every installed
listing version the current rule set has not checked yet; a blocking finding stops the
skill's use and opens a content review, the owner's decision (docs/write-path.md,
"Rescan when the rules change").
"""

from __future__ import annotations

from registry.services.context import Context
from registry.services.history import rescan
from registry.services.history.rescan import ApproveResult, ReviewPage, ReviewRow
from registry.services.jobs.queue import Enqueued


class Rescan:
    """The rescan of one registry: `reg.rescan`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @property
    def ruleset(self) -> str:
        """The current content rule set (the scanner's fingerprint)."""
        return self.ctx.scanner.fingerprint

    async def start(self, *, workspace: str | None = None, actor: str = "admin") -> Enqueued:
        """Queue a rescan of `workspace` (None: every workspace); a worker runs it."""
        return await rescan.start(self.ctx, workspace=workspace, actor=actor)

    async def start_if_rules_changed(self) -> Enqueued | None:
        """Queue a rescan of everything if the rules changed since the last one finished.

        Called when a server or a worker starts; None if nothing needs checking.
        """
        return await rescan.start_if_rules_changed(self.ctx)

    async def reviews(
        self, workspace: str, *, limit: int = 50, before: int | None = None
    ) -> ReviewPage:
        """The open content reviews of `workspace`, newest first."""
        return await rescan.list_reviews(self.ctx, workspace, limit=limit, before=before)

    async def review(self, workspace: str, review_id: int) -> ReviewRow:
        """One content review of `workspace`, open or closed (`ReviewNotFound` if none)."""
        return await rescan.get_review(self.ctx, workspace, review_id)

    async def approve(self, workspace: str, review_id: int, *, actor: str) -> ApproveResult:
        """Accept the review's findings for its package; the use the rescan stopped resumes."""
        return await rescan.approve(self.ctx, workspace, review_id, actor=actor)
