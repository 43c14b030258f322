"""Named points in the write path and GC where tests inject faults or hold a writer.

Production code calls `await failpoints.hit("publish.locked")` at each step that matters for
failure handling; the default `NO_FAILPOINTS` does nothing. Tests pass their own
implementation to `Registry(...)` to raise at step N, cancel at an await, or park a writer
on an `asyncio.Event` so that races run in a chosen order without sleeps.

The names are part of the test contract and listed in `POINTS`.
"""

from __future__ import annotations

from typing import Final, Protocol

POINTS: Final = (
    "write.validated",  # after validation and the content check, before any storage
    "write.checked",  # the early root checks passed (head read), before any claim
    "write.claiming",  # inside the claim transaction, before its statements
    "write.claimed",  # the claim transaction committed
    "write.uploaded",  # every changed blob is stored
    "publish.begin",  # the publish transaction began, before the lock
    "publish.locked",  # the workspace lock is held
    "publish.checked",  # root checks and compare-and-swap passed
    "publish.version_rows",  # version and manifest rows inserted
    "publish.head_moved",  # the head points at the new version
    "publish.proposal_rows",  # a diverted write's proposal row is inserted (instead of a version)
    "publish.before_commit",  # everything written, commit next
    "publish.committed",  # the commit returned; the reply is still to be sent
    # Garbage collection and retention (docs/gc.md).
    "gc.claims_expired",  # a batch of expired claims was deleted and committed
    "gc.marked",  # a batch of candidates was marked `deleting` and committed (tx1)
    "gc.untracked_marked",  # rows (`deleting`) were inserted for objects that had none
    "gc.locked",  # tx2 holds the row locks and re-checked them; objects not yet deleted
    "gc.object_deleted",  # one object was deleted; its row is not (tx2 still open)
    "gc.committed",  # tx2 committed: the rows of the deleted objects are gone
    "retention.planned",  # a skill's prune was planned without the lock; lock next
    "retention.locked",  # the workspace lock is held, versions not yet deleted
    "retention.before_commit",  # versions and manifests deleted, commit next
)

JOB_POINTS: Final = (
    "job.claimed",  # a worker claimed the job (lease held, attempt counted)
    "job.running",  # the handler is about to run
    "job.effect_done",  # the handler returned: its effect is committed, the outcome is not
    "job.recorded",  # the outcome was recorded (or found fenced off)
    "marketplace.copy_read",  # an update read the copy and its target; nothing written yet
)
"""Points in a durable job's run (registry/services/jobs.py) and in the marketplace jobs."""


class Failpoints(Protocol):
    """Called at each named point; may raise, cancel or wait."""

    async def hit(self, name: str) -> None:
        """Reached point `name`."""
        ...


class _NoFailpoints:
    async def hit(self, name: str) -> None:  # noqa: ARG002 - production ignores the name
        return None


NO_FAILPOINTS: Final[Failpoints] = _NoFailpoints()
