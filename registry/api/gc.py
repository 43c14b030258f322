"""`reg.gc`: garbage collection, retention and the integrity check.

Every operation here is safe while writers run.
"""

from __future__ import annotations

from registry.domain.retention import RetentionPolicy
from registry.services.context import Context
from registry.services.gc import collect as collect_service
from registry.services.gc import figures as figures_service
from registry.services.gc import fsck as fsck_service
from registry.services.gc import retention
from registry.services.gc.collect import GcReport
from registry.services.gc.figures import GcFigures
from registry.services.gc.fsck import FsckReport
from registry.services.gc.retention import RetentionReport


class GarbageCollection:
    """Garbage collection of one registry: `reg.gc`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def collect(self, *, grace: float | None = None, dry_run: bool = False) -> GcReport:
        """Reclaim orphaned blobs (and prune versions, if a retention policy is set).

        Safe while writers run. `grace` (seconds, default `settings.gc_grace`) is how long
        an unreferenced, unclaimed blob is kept after it was last touched; `dry_run`
        reports what a run would reclaim and changes nothing.
        """
        return await collect_service.collect(self.ctx, grace=grace, dry_run=dry_run)

    async def fsck(self, *, verify_content: bool = False, limit: int = 1000) -> FsckReport:
        """Check the registry end to end; `report.clean` is False on any inconsistency.

        `verify_content` reads every referenced blob and checks its hash (otherwise its
        existence and size). At most `limit` problems and orphans are listed; the
        counters cover all of them.
        """
        return await fsck_service.fsck(self.ctx, verify_content=verify_content, limit=limit)

    async def figures(self) -> GcFigures:
        """Bytes stored, referenced and orphaned, and what garbage collection reclaimed."""
        return await figures_service.gc_figures(self.ctx)

    async def prune(
        self,
        *,
        keep_versions: int | None = None,
        keep_days: float | None = None,
        dry_run: bool = False,
    ) -> RetentionReport:
        """Apply a retention policy now (default: the settings' policy; off if unset).

        Never prunes a head, a marketplace baseline or a version another row names. A
        pruned version can no longer be read or restored; its blobs are reclaimed by a
        later GC run once the grace period has passed.
        """
        policy = None
        if keep_versions is not None or keep_days is not None:
            policy = RetentionPolicy(keep_versions, keep_days)
        return await retention.prune(self.ctx, policy, dry_run=dry_run)
