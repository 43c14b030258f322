"""`reg.discovery`: the Agent Skills discovery index a scope serves (docs/distribution.md).

An owner publishes the whole scope or skills one by one, public or behind a token; the
index lists the published skills in use, each naming one immutable artifact by version
and by SHA-256; the artifacts are a version's reproducible zip and its files. Each state
of the index served is kept as a numbered, immutable snapshot (versioned discovery); the
older layout (`/.well-known/skills/`) is served from the same state.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.domain.model import ANY, ExpectedHead, Scope
from registry.services.context import Context
from registry.services.discovery import artifacts as served
from registry.services.discovery import index as indexes
from registry.services.discovery import legacy, snapshots
from registry.services.discovery import settings as published
from registry.services.discovery.artifacts import Artifact
from registry.services.discovery.index import DiscoveryIndex
from registry.services.discovery.legacy import LegacyIndex
from registry.services.discovery.settings import DiscoverySettings
from registry.services.discovery.snapshots import Snapshot, SnapshotList


class Discovery:
    """The discovery index of one registry: `reg.discovery`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def settings(self, scope: Scope) -> DiscoverySettings:
        """What `scope` publishes (`revision` 0: nothing, it was never configured)."""
        return await published.get_settings(self.ctx, scope)

    async def update(
        self,
        scope: Scope,
        *,
        actor: str,
        everything: bool | None = None,
        public: bool | None = None,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        skills: Sequence[str] | None = None,
        expected_revision: ExpectedHead = ANY,
    ) -> DiscoverySettings:
        """Change what `scope` publishes: everything, `add`/`remove` by slug, or `skills`.

        `public`: serve without a token. `expected_revision`: None, the scope is not
        configured yet; an int, the revision the change replaces (`HeadConflict` if
        another); `ANY`, no check. One outbox event per change, none for a no-op.
        """
        return await published.update_settings(
            self.ctx,
            scope,
            actor=actor,
            everything=everything,
            public=public,
            add=add,
            remove=remove,
            skills=skills,
            expected_revision=expected_revision,
        )

    async def index(self, scope: Scope) -> DiscoveryIndex:
        """The index of `scope` (`NotFound` if it publishes nothing)."""
        return await indexes.build_index(self.ctx, scope)

    async def archive(
        self, scope: Scope, slug: str, version: int, *, data: bool = True
    ) -> Artifact:
        """The reproducible zip of a published version; without `data`, its digest and size."""
        return await served.archive(self.ctx, scope, slug, version, data=data)

    async def file(
        self, scope: Scope, slug: str, version: int, path: str, *, data: bool = True
    ) -> Artifact:
        """One file of a published version, by its path in the package."""
        return await served.file(self.ctx, scope, slug, version, path, data=data)

    async def current(self, scope: Scope) -> Snapshot:
        """The index of `scope` now, recorded as a new snapshot if its entries changed."""
        return await snapshots.current(self.ctx, scope)

    async def snapshots(self, scope: Scope) -> SnapshotList:
        """The snapshots `scope` serves (the current state recorded first), and the newest."""
        return await snapshots.listed(self.ctx, scope)

    async def snapshot(self, scope: Scope, number: int) -> Snapshot:
        """Snapshot `number` of `scope` while it is listed (`NotFound` otherwise)."""
        return await snapshots.snapshot(self.ctx, scope, number)

    async def legacy_index(self, scope: Scope) -> LegacyIndex:
        """The older index (`/.well-known/skills/index.json`): each listed skill's files."""
        return await legacy.legacy_index(self.ctx, scope)

    async def legacy_file(
        self, scope: Scope, slug: str, path: str, *, data: bool = True
    ) -> Artifact:
        """A file of the version of `slug` the index lists now (the older layout)."""
        return await legacy.legacy_file(self.ctx, scope, slug, path, data=data)
