"""The reconciler's view of a target's records during one run, kept current as it records.

The records are read once, when the run begins (`Source.begin`); each change is then a
compare-and-swap on the record as last read or written (`Source.record`), skipped when the
record already says so, so a second run that finds everything in place records nothing.

Skills are materialised side by side, but their records go one at a time: the registry
takes them one at a time anyway (each holds the workspace's lock, or SQLite's one write
lock), so sending several would only make them wait there, each against its lock timeout,
and a run would take more of the lock from other writers than one skill at a time did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from registry.domain.display import visible
from registry.errors import RegistryError
from registry.services.materialize.drift import DriftItem
from registry.services.materialize.source import (
    APPLIED,
    FAILED,
    REMOVED,
    Applied,
    Change,
    Source,
)
from registry.wire import MAX_ERROR


class Records:
    """The records of one target, as read at the start of a run and kept current."""

    def __init__(self, source: Source, rows: dict[str, Applied]) -> None:
        self.source = source
        self.rows = dict(rows)
        self._turn = asyncio.Lock()

    async def applied(
        self,
        slug: str,
        *,
        manifest_hash: str,
        version: int,
        action: str,
        found: Sequence[DriftItem],
    ) -> None:
        """Record that the target holds `manifest_hash` (version `version`) for `slug`."""
        new = Applied(slug, manifest_hash, version, APPLIED, None)
        await self._save(new, Change(action, tuple(found)))

    async def removed(self, slug: str) -> None:
        """Record that `slug` is no longer on the target."""
        await self._save(Applied(slug, None, None, REMOVED, None), Change(REMOVED))

    async def failed(self, slug: str, error: RegistryError) -> None:
        """Record a failure (best effort: it is reported either way; the record feeds status).

        The recorded hash stays what is on disk: a failed write changed nothing there.
        """
        row = self.rows.get(slug)
        new = Applied(
            slug,
            None if row is None else row.manifest_hash,
            None if row is None else row.version,
            FAILED,
            # Storable and safe to show: an error can quote a name found on disk.
            visible(f"{error.code}: {error}", MAX_ERROR - 1),
        )
        try:
            await self._save(new, Change(FAILED, error_code=error.code))
        except RegistryError:
            return

    async def _save(self, new: Applied, change: Change) -> None:
        expected = self.rows.get(new.slug)
        if expected is not None and expected.key == new.key:
            return
        async with self._turn:
            await self.source.record(expected=expected, new=new, change=change)
        self.rows[new.slug] = new
