"""`Registry`: the public face of the library.

    async with Registry.open() as reg:
        pub = await reg.write_package(Scope("acme"), "pdf-report", files, expected_head=None,
                                      origin=Origin.EDIT, actor="u1", sources=["chat:42"])
        pkg = await reg.read_package(Scope("acme"), "pdf-report")

`Registry(engine, blobs, ...)` takes an engine and a `BlobStore` directly, so a test can
wrap the store to inject faults; `Registry.open()` builds both from settings.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore
from registry.bootstrap import build_blobstore, build_engine
from registry.db.migrate import current_revision, head_revision, upgrade
from registry.domain.clock import Clock, SystemClock
from registry.domain.model import ExpectedHead, FileInput, Origin, Publication, Scope
from registry.domain.scanner import DefaultScanner, Scanner
from registry.errors import RegistryError, StorageUnavailable
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services import lockfile, publish, read, reconcile, status
from registry.services.context import Context
from registry.services.lockfile import LockFile
from registry.services.read import Package, PackageInfo, SkillPage
from registry.services.reconcile import ReconcileReport
from registry.services.status import Status
from registry.settings import Settings


class NotInitialized(StorageUnavailable):
    """The database has no schema, or an older one: run `skillreg init`."""

    code = "not_initialized"

    def __init__(self, current: str | None, head: str) -> None:
        self.current = current
        self.head = head
        RegistryError.__init__(
            self,
            f"the database is at revision {current or 'none'}, the registry needs {head}: "
            "run `skillreg init`",
        )
        self.what = "database"
        self.detail = "not initialised"


class Registry:
    """A registry over one database and one blob store."""

    def __init__(
        self,
        engine: AsyncEngine,
        blobs: BlobStore,
        settings: Settings | None = None,
        *,
        scanner: Scanner | None = None,
        clock: Clock | None = None,
        failpoints: Failpoints = NO_FAILPOINTS,
        owns_resources: bool = False,
    ) -> None:
        self.settings = settings or Settings()
        self.ctx = Context(
            engine=engine,
            blobs=blobs,
            settings=self.settings,
            scanner=scanner or DefaultScanner(),
            clock=clock or SystemClock(),
            failpoints=failpoints,
        )
        self._owns_resources = owns_resources

    @property
    def engine(self) -> AsyncEngine:
        return self.ctx.engine

    @property
    def blobs(self) -> BlobStore:
        return self.ctx.blobs

    # ------------------------------------------------------------ lifecycle

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        database_url: str | None = None,
        blob_url: str | None = None,
        settings: Settings | None = None,
        initialize: bool = False,
        **kwargs: object,
    ) -> AsyncIterator[Registry]:
        """Build a registry from settings (overridden by the URLs given) and close it after.

        With `initialize=True` the database is migrated and the blob store created first;
        otherwise a database that is not at the newest revision raises `NotInitialized`.
        """
        base = settings or Settings()
        overrides = {
            k: v
            for k, v in {"database_url": database_url, "blob_url": blob_url}.items()
            if v is not None
        }
        effective = base.model_copy(update=overrides) if overrides else base
        registry = cls(
            build_engine(effective),
            build_blobstore(effective),
            effective,
            owns_resources=True,
            **kwargs,  # type: ignore[arg-type]
        )
        try:
            if initialize:
                await registry.initialize()
            else:
                await registry.check_schema()
            yield registry
        finally:
            await registry.close()

    async def initialize(self) -> None:
        """Create or upgrade the database schema and create the blob store (idempotent)."""
        await self.blobs.ensure()
        await upgrade(self.engine)

    async def check_schema(self) -> None:
        """Raise `NotInitialized` unless the database is at the newest revision."""
        current = await current_revision(self.engine)
        head = head_revision()
        if current != head:
            raise NotInitialized(current, head)

    async def close(self) -> None:
        """Release the engine and the blob store if this registry created them."""
        if self._owns_resources:
            await self.blobs.close()
            await self.engine.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ write path

    async def write_package(
        self,
        scope: Scope,
        slug: str,
        files: Mapping[str, FileInput],
        *,
        expected_head: ExpectedHead,
        origin: Origin = Origin.EDIT,
        actor: str,
        sources: Sequence[str] = (),
        message: str = "",
    ) -> Publication:
        """Publish `files` as the new head of `slug` in one atomic change.

        `expected_head=None`: the skill must not exist yet; an int: the head must be that
        version (`HeadConflict` otherwise); `ANY`: no check. Re-saving the head's exact
        package is a no-op that returns the head (`unchanged=True`).
        """
        request = publish.WriteRequest(
            scope=scope,
            slug=slug,
            expected_head=expected_head,
            origin=origin,
            actor=actor,
            message=message,
            sources=tuple(sources),
        )
        return await publish.write_package(self.ctx, request, files)

    # ------------------------------------------------------------ reads

    async def read_package(self, scope: Scope, slug: str, version: int | None = None) -> Package:
        """The package at the head (or a pinned version), every file verified."""
        return await read.read_package(self.ctx, scope, slug, version)

    async def package_info(
        self, scope: Scope, slug: str, version: int | None = None
    ) -> PackageInfo:
        """A version's manifest and metadata, without reading blobs."""
        return await read.package_info(self.ctx, scope, slug, version)

    async def list_skills(
        self, scope: Scope, *, limit: int = 50, after: str | None = None
    ) -> SkillPage:
        """The live skills of `scope`, by slug, a page at a time."""
        return await read.list_skills(self.ctx, scope, limit=limit, after=after)

    # ------------------------------------------------------------ materialisation

    async def reconcile(
        self,
        scope: Scope,
        target: Path | str,
        *,
        mode: str | None = None,
        adopt: bool = False,
        verify: bool = False,
        lock: LockFile | None = None,
        wait: bool = False,
        actor: str = "reconciler",
    ) -> ReconcileReport:
        """Make the directory `target` hold the desired state of `scope`, and repair drift.

        Every skill of the scope in use (or, with `lock`, exactly the pinned versions) is
        written package-atomically to `target/<slug>`; skills deleted or paused are removed.
        On-disk edits are restored from the blob store, or with `adopt=True` published as
        a new version (origin `out_of_band`, compare-and-swap on the applied version).
        `mode` is `link` (default: each skill a link swapped atomically) or `copy` (real
        folders, `SKILL.md` written last), fixed when the target is first used. `verify`
        rehashes every file instead of trusting the stat cache. A second reconciler on the
        same target raises `TargetBusy` unless `wait=True`.
        """
        return await reconcile.reconcile(
            self.ctx,
            scope,
            target,
            mode=mode,
            adopt=adopt,
            verify=verify,
            lock=lock,
            wait=wait,
            actor=actor,
        )

    async def lock_file(self, scope: Scope) -> LockFile:
        """The head version and manifest hash of every skill of `scope` in use."""
        return await lockfile.make_lock(self.ctx, scope)

    async def status(self, workspace: str | None = None, agent: str | None = None) -> Status:
        """Targets and pending materialisations, of one workspace (and agent) or of all."""
        return await status.status(self.ctx, workspace, agent)
