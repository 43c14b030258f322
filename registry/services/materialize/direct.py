"""The direct source: desired state from the database, blobs from the blob store.

What `skillreg reconcile` (`Registry.reconcile`) materialises from. It is also the one
`Adopter`: an edit found on disk is published through the registry's write path.
"""

from __future__ import annotations

from collections.abc import Mapping

from registry.domain.manifest import Manifest
from registry.domain.model import Origin, PackageFile, Scope
from registry.services import read
from registry.services.context import Context
from registry.services.materialize import applied, desired
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.source import (
    Applied,
    Change,
    Desired,
    Place,
    Snapshot,
    Want,
    resolve,
)
from registry.services.materialize.target import Target
from registry.services.write import publish
from registry.services.write.request import WriteRequest


class DirectSource:
    """A `Source` (and the `Adopter`) over the registry's own database and blob store."""

    records_prove_ownership = True  # the registry's own records

    def __init__(self, ctx: Context, scope: Scope) -> None:
        self.ctx = ctx
        self.scope = scope
        self._place: Place | None = None
        self._fetched = 0

    @property
    def fetched(self) -> int:
        return self._fetched

    @property
    def place(self) -> Place:
        assert self._place is not None, "begin() first"
        return self._place

    async def begin(self, target: Target, lock: LockFile | None) -> Snapshot:
        self._place = Place.of(target)
        await applied.register(self.ctx, self.scope, self._place)
        heads = await desired.heads(self.ctx, self.scope)
        wanted = await resolve(heads, lock, self._pinned)
        rows = await applied.load(self.ctx, self.scope, target.target_id)
        return Snapshot(wanted, rows)

    async def _pinned(self, slug: str, version: int, skill_id: int | None) -> Want:
        return await desired.pinned(self.ctx, self.scope, slug, version, skill_id)

    async def manifest(self, want: Want) -> Manifest:
        return await desired.manifest(self.ctx, self.scope, want)

    async def files(self, manifest: Manifest) -> dict[str, PackageFile]:
        files = await read.read_files(self.ctx, manifest)
        self._fetched += len({e.digest for e in manifest.entries})
        return files

    async def record(self, *, expected: Applied | None, new: Applied, change: Change) -> None:
        await applied.record(
            self.ctx, self.scope, self.place, new.slug, expected=expected, new=new, change=change
        )

    async def finish(self, desired: Desired) -> None:
        del desired  # nothing cached here

    # ------------------------------------------------------------ the adopter

    @property
    def max_file_bytes(self) -> int:
        return self.ctx.settings.max_file_bytes

    async def adopt(
        self,
        slug: str,
        files: Mapping[str, PackageFile],
        *,
        base: int,
        place: Place,
        actor: str,
        skill_id: int | None,
    ) -> Want:
        request = WriteRequest(
            scope=self.scope,
            slug=slug,
            expected_head=base,
            origin=Origin.OUT_OF_BAND,
            actor=actor,
            message=f"adopted from {place.path}/{slug}",
            sources=(f"target:{place.target_id}",),
        )
        pub = await publish.write_package(self.ctx, request, files)
        # Read the new version back rather than reuse what was seen: the write path
        # normalises paths (NFC), so its manifest is the authority.
        return await desired.pinned(self.ctx, self.scope, slug, pub.version, skill_id)
