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
    "publish.pending_rows",  # a learning write's pending-write row is inserted (no version)
    "publish.before_commit",  # everything written, commit next
    "publish.committed",  # the commit returned; the reply is still to be sent
    "cleanup.releasing",  # a failed write is about to release its claims
    "cleanup.settling",  # a lost commit reply is being settled, the workspace lock held
    "read.located",  # a read found its version row; its manifest rows are read next
    "undo.head_read",  # a restore or a delete read the head it undoes; its files are next
    # Garbage collection and retention (docs/gc.md).
    "gc.claims_expired",  # a batch of expired claims was deleted and committed
    "gc.marked",  # a batch of candidates was marked `deleting` and committed (tx1)
    "gc.untracked_marked",  # rows (`deleting`) were inserted for objects that had none
    "gc.locked",  # tx2 holds the row locks and re-checked them; rows not yet fenced
    "gc.fenced",  # tx2 committed: the rows are fenced; no object deleted yet
    "gc.object_deleted",  # one object was deleted (no transaction open); its row is fenced
    "gc.committed",  # tx3 committed: the rows of the deleted objects are gone
    "retention.planned",  # a skill's prune was planned without the lock; lock next
    "retention.locked",  # the workspace lock is held, versions not yet deleted
    "retention.before_commit",  # versions and manifests deleted, commit next
    "fsck.manifests_read",  # fsck read a page of manifest rows; their entries are read next
)

JOB_POINTS: Final = (
    "job.claimed",  # a worker claimed the job (lease held, attempt counted)
    "job.running",  # the handler is about to run
    "job.effect_done",  # the handler returned: its effect is committed, the outcome is not
    "job.recorded",  # the outcome was recorded (or found fenced off)
    "marketplace.copy_read",  # an update read the copy and its target; nothing written yet
    "rescan.package_checked",  # a rescan committed one package's check and its consequences
)
"""Points in a durable job's run (services/jobs/queue.py) and in the marketplace jobs."""

# The reconciler (services/materialize/reconcile.py, swap.py, target.py). The
# filesystem steps run in a worker thread and reach the failpoints through the event loop.
MATERIALIZE_POINTS: Final = (
    "reconcile.lock_wait",  # another reconciler holds the target; about to wait for it
    "reconcile.locked",  # the target's lock is held and its garbage swept
    "materialize.intent_saved",  # the cache says a write of this slug is in progress
    "materialize.tree_created",  # a fresh tree (or staged folder) exists, still empty
    "materialize.file_written",  # a temp file is written and fsynced, not yet renamed
    "materialize.file_placed",  # the file is renamed into place, not yet verified
    "materialize.file_verified",  # the file read back matches its digest and mode
    "materialize.tree_synced",  # every file verified and every directory fsynced
    "materialize.link_created",  # the new link exists under a temp name
    "materialize.swapped",  # <slug> shows the new package (rename done, not yet fsynced)
    "materialize.skill_md_removed",  # copy mode: SKILL.md removed before the siblings change
    "materialize.pruned",  # copy mode: files no longer in the package are removed
    "materialize.skill_md_placed",  # copy mode: SKILL.md written last
    "materialize.cache_saved",  # the cache records the finished write
    "reconcile.recorded",  # the applied state and its event are committed
    "materialize.old_removed",  # the trees no link names are removed
    "materialize.unlinked",  # a skill no longer in use is out of view
    "reconcile.skill_done",  # one skill is finished
)

# The remote source of `skillreg sync` (registry/client/remote.py).
SYNC_POINTS: Final = (
    "sync.state_saved",  # the desired state fetched (200) is saved in .skillreg/remote.json
    "sync.blob_fetched",  # a blob was downloaded and verified, not yet in the cache
    "sync.blob_cached",  # a downloaded blob is in the local cache
)


class Failpoints(Protocol):
    """Called at each named point; may raise, cancel or wait."""

    async def hit(self, name: str) -> None:
        """Reached point `name`."""
        ...


class _NoFailpoints:
    async def hit(self, name: str) -> None:  # noqa: ARG002 - production ignores the name
        return None


NO_FAILPOINTS: Final[Failpoints] = _NoFailpoints()
