"""`Registry`: the public face of the library.

    async with Registry.open() as reg:
        pub = await reg.write_package(Scope("acme"), "pdf-report", files, expected_head=None,
                                      origin=Origin.EDIT, actor="u1", sources=["chat:42"])
        pkg = await reg.read_package(Scope("acme"), "pdf-report")

`Registry(engine, blobs, ...)` takes an engine and a `BlobStore` directly, so a test can
wrap the store to inject faults; `Registry.open()` builds both from settings.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore
from registry.bootstrap import build_blobstore, build_engine
from registry.db.jobs import JobRow
from registry.db.migrate import current_revision, head_revision, upgrade
from registry.domain.approvals import FindingRef
from registry.domain.archive import EntryCallback
from registry.domain.clock import Clock, SystemClock
from registry.domain.model import (
    ANY,
    ExpectedHead,
    FileInput,
    Origin,
    PackageFile,
    Publication,
    Scope,
)
from registry.domain.retention import RetentionPolicy
from registry.domain.scanner import DefaultScanner, Scanner
from registry.domain.states import Action
from registry.errors import RegistryError, StorageUnavailable
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services import read
from registry.services.context import Context
from registry.services.gc import collect as gc_service
from registry.services.gc import figures as figures_service
from registry.services.gc import fsck as fsck_service
from registry.services.gc import retention
from registry.services.gc.collect import GcReport
from registry.services.gc.figures import GcFigures
from registry.services.gc.fsck import FsckReport
from registry.services.gc.retention import RetentionReport
from registry.services.history import approvals as approve
from registry.services.history import controls, diff, exclusions, proposals
from registry.services.history import versions as history
from registry.services.history.approvals import ApprovalResult
from registry.services.history.controls import SkillStatus
from registry.services.history.diff import DiffTarget, PackageDiff
from registry.services.history.exclusions import ExclusionReport
from registry.services.history.proposals import DecisionResult, ProposalDetail, ProposalPage
from registry.services.history.versions import HistoryPage
from registry.services.marketplace import catalog, jobs
from registry.services.marketplace import install as marketplace
from registry.services.marketplace.catalog import ImportResult, ListingVersion
from registry.services.marketplace.install import Policy
from registry.services.marketplace.jobs import Enqueued, JobOutcome, JobPage, Wait, Worker
from registry.services.materialize import lockfile, reconcile
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.reconcile import ReconcileReport
from registry.services.ops import health as operations
from registry.services.ops import status, tokens
from registry.services.ops.health import Readiness, ServiceStatus
from registry.services.ops.status import Status
from registry.services.ops.tokens import IssuedToken, TokenInfo
from registry.services.read import Package, PackageInfo, SkillPage
from registry.services.write import edit, publish, restore, uploads
from registry.services.write.request import WriteRequest
from registry.services.write.uploads import ManifestFile, UploadedBlob
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
        """Wait for cleanups in flight, then release the engine and the blob store.

        A failed or cancelled write releases its claims in a task of its own; `close()`
        waits up to `shutdown_timeout` for such tasks, so none runs against a disposed
        engine. What is still running then is abandoned: its claims expire after
        `claim_ttl` and GC reclaims the blobs (invariant I4).
        """
        await self.ctx.cleanups.drain(self.settings.shutdown_timeout)
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
        approve: Sequence[FindingRef] = (),
    ) -> Publication:
        """Publish `files` as the new head of `slug` in one atomic change.

        `expected_head=None`: the skill must not exist yet; an int: the head must be that
        version (`HeadConflict` otherwise); `ANY`: no check. Re-saving the head's exact
        package is a no-op that returns the head (`unchanged=True`).

        An automated write (`Origin.LEARNING`) to a skill whose automatic improvements are
        off, or whose learning is paused, publishes nothing and records a proposal instead
        (`Publication.proposal`). `approve` names content-check findings (path, ordinal)
        the writer approves; approvals of the version written on are inherited.
        """
        request = WriteRequest(
            scope=scope,
            slug=slug,
            expected_head=expected_head,
            origin=origin,
            actor=actor,
            message=message,
            sources=tuple(sources),
            approve=tuple(approve),
        )
        return await publish.write_package(self.ctx, request, files)

    async def edit(
        self,
        scope: Scope,
        slug: str,
        files: Mapping[str, FileInput],
        *,
        base_version: int,
        actor: str,
        message: str = "",
        sources: Sequence[str] = (),
        keep_auto_improve: bool = False,
        keep_draft: bool = False,
        approve: Sequence[FindingRef] = (),
    ) -> Publication:
        """The owner's edit of version `base_version` (a compare-and-swap on it).

        If the head moved, `HeadConflict` is raised and nothing is published; with
        `keep_draft=True` the draft is stored as a proposal first and the error is
        `DraftKept` (a `HeadConflict` carrying `proposal`). Automatic improvements are
        turned off unless `keep_auto_improve`.
        """
        return await edit.edit(
            self.ctx,
            scope,
            slug,
            files,
            base_version=base_version,
            actor=actor,
            message=message,
            sources=sources,
            keep_auto_improve=keep_auto_improve,
            keep_draft=keep_draft,
            approve=approve,
        )

    async def restore(
        self,
        scope: Scope,
        slug: str,
        version: int,
        *,
        expected_head: ExpectedHead,
        actor: str,
        message: str = "",
    ) -> Publication:
        """Make `version`'s package the head again, as a new version with origin `restore`.

        Uploads nothing; records `restored_from` and the restored version's sources; turns
        automatic improvements off; refuses a version the content check blocks
        (`ContentBlocked`) or that lists an excluded source (`VersionUnavailable`).
        Restoring the head's own package is a no-op (`unchanged=True`).
        """
        return await restore.restore(
            self.ctx,
            scope,
            slug,
            version,
            expected_head=expected_head,
            actor=actor,
            message=message,
        )

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

    # ------------------------------------------------------------ history and diff

    async def history(
        self,
        scope: Scope,
        slug: str,
        *,
        limit: int = 20,
        before: str | None = None,
        include_archived: bool = False,
    ) -> HistoryPage:
        """The versions of `slug`, newest first, a page at a time.

        With `include_archived`, the versions of earlier, deleted skills of the same slug
        follow (marked `archived`). Pinned reads: `read_package(..., version=N)`.
        """
        return await history.history(
            self.ctx, scope, slug, limit=limit, before=before, include_archived=include_archived
        )

    async def diff(
        self, scope: Scope, slug: str, a: DiffTarget, b: DiffTarget, *, full: bool = False
    ) -> PackageDiff:
        """What changed from `a` to `b` (version numbers, or `ProposalRef(id)`).

        Text files get a bounded unified-diff preview (`full=True`: the whole diff);
        binary files are reported as binary.
        """
        return await diff.diff(self.ctx, scope, slug, a, b, full=full)

    # ------------------------------------------------------------ proposals

    async def list_proposals(
        self,
        scope: Scope,
        *,
        pending_only: bool = True,
        limit: int = 50,
        before: int | None = None,
    ) -> ProposalPage:
        """The proposals of `scope`, newest first, with their changes against base and head.

        Only pending (open or stale) proposals unless `pending_only=False`.
        """
        return await proposals.list_proposals(
            self.ctx, scope, pending_only=pending_only, limit=limit, before=before
        )

    async def proposal(
        self, scope: Scope, proposal_id: int, *, full: bool = False
    ) -> ProposalDetail:
        """One proposal with its file diffs against its base and the current head."""
        return await proposals.show(self.ctx, scope, proposal_id, full=full)

    async def read_proposal(self, scope: Scope, proposal_id: int) -> dict[str, PackageFile]:
        """The proposed package's files, every digest verified."""
        return await proposals.read_proposal(self.ctx, scope, proposal_id)

    async def decide(
        self,
        scope: Scope,
        proposal_id: int,
        decision: proposals.Decision,
        *,
        actor: str,
        files: Mapping[str, FileInput] | None = None,
        keep_auto_improve: bool = False,
    ) -> DecisionResult:
        """Decide a pending proposal: `apply`, `alternative` (with `files`) or `keep_current`.

        Applying is a compare-and-swap on the proposal's base: a stale proposal (the head
        moved) raises `ProposalStale`.
        """
        return await proposals.decide(
            self.ctx,
            scope,
            proposal_id,
            decision,
            actor=actor,
            files=files,
            keep_auto_improve=keep_auto_improve,
        )

    # ------------------------------------------------------------ controls and state

    async def skill_status(self, scope: Scope, slug: str) -> SkillStatus:
        """The skill's controls and its state (ready, needs_decision, blocked, paused...)."""
        return await controls.status(self.ctx, scope, slug)

    async def pause_learning(
        self, scope: Scope, slug: str, *, actor: str, reason: str = ""
    ) -> SkillStatus:
        """Pause learning: automated writes become proposals. `StateConflict` if paused."""
        return await controls.act(self.ctx, scope, slug, Action.PAUSE, actor=actor, reason=reason)

    async def resume_learning(self, scope: Scope, slug: str, *, actor: str) -> SkillStatus:
        """Resume learning. `StateConflict` unless learning is paused."""
        return await controls.act(self.ctx, scope, slug, Action.RESUME, actor=actor)

    async def stop_using(
        self, scope: Scope, slug: str, *, actor: str, reason: str = ""
    ) -> SkillStatus:
        """Stop using the skill: runtimes do not load it; history is kept."""
        return await controls.act(
            self.ctx, scope, slug, Action.STOP_USING, actor=actor, reason=reason
        )

    async def resume_use(self, scope: Scope, slug: str, *, actor: str) -> SkillStatus:
        """Resume use. Refused unless use is paused, and while the head is blocked."""
        return await controls.act(self.ctx, scope, slug, Action.RESUME_USE, actor=actor)

    async def set_auto_improve(
        self, scope: Scope, slug: str, *, enabled: bool, actor: str
    ) -> SkillStatus:
        """Turn automatic improvements on or off (`StateConflict` if already so)."""
        action = Action.AUTO_IMPROVE_ON if enabled else Action.AUTO_IMPROVE_OFF
        return await controls.act(self.ctx, scope, slug, action, actor=actor)

    async def delete(
        self, scope: Scope, slug: str, *, actor: str, expected_head: int | None = None
    ) -> SkillStatus:
        """Delete the skill: its versions are kept (listed as archived), the slug is free.

        With `expected_head`, only if the head is still that version (`HeadConflict`).
        """
        return await controls.act(
            self.ctx, scope, slug, Action.DELETE, actor=actor, expected_head=expected_head
        )

    async def control(
        self,
        scope: Scope,
        slug: str,
        action: Action,
        *,
        actor: str,
        reason: str = "",
        expected_head: int | None = None,
    ) -> SkillStatus:
        """Apply any owner control `action` (pause, resume, stop_using, ..., delete).

        With `expected_head`, a compare-and-swap on the head (`HeadConflict`).
        """
        return await controls.act(
            self.ctx, scope, slug, action, actor=actor, reason=reason, expected_head=expected_head
        )

    # ------------------------------------------------------------ exceptions and exclusions

    async def approve_findings(
        self,
        scope: Scope,
        slug: str,
        version: int,
        findings: Sequence[FindingRef],
        *,
        actor: str,
    ) -> ApprovalResult:
        """Approve content-check findings of a stored version (exact-match, never values)."""
        return await approve.approve_findings(self.ctx, scope, slug, version, findings, actor=actor)

    async def exclude_source(
        self, scope: Scope, source: str, *, actor: str, reason: str = ""
    ) -> ExclusionReport:
        """Exclude `source` from the workspace and repair the heads that depend on it.

        Idempotent: excluding again changes nothing more and finishes an interrupted repair.
        """
        return await exclusions.exclude_source(self.ctx, scope, source, actor=actor, reason=reason)

    # ------------------------------------------------------------ marketplace: catalog

    async def publish_listing(
        self,
        listing: str,
        files: Mapping[str, FileInput],
        *,
        actor: str,
        message: str = "",
        expected_head: ExpectedHead = ANY,
        approve: Sequence[FindingRef] = (),
    ) -> Publication:
        """Publish `files` as the next version of the catalog listing `listing`.

        `approve` names content-check findings the publisher approves; installed copies
        carry the approvals with the files.
        """
        return await catalog.publish_listing(
            self.ctx,
            listing,
            files,
            actor=actor,
            message=message,
            expected_head=expected_head,
            approve=approve,
        )

    async def import_listing(
        self,
        listing: str,
        source: bytes | Path,
        *,
        actor: str,
        message: str = "",
        expected_head: ExpectedHead = ANY,
        on_entry: EntryCallback | None = None,
    ) -> ImportResult:
        """Import an archive (`.zip`, `.tar.gz`, `.tar`: bytes or a file) or a folder.

        The archive is read safely in memory (`ArchiveRejected` for links, devices,
        escaping names, bombs, ...), then published as the listing's next version through
        the normal write path, with `expected_head` as its compare-and-swap. `on_entry` is
        called with each file's path as it is read.
        """
        if isinstance(source, bytes):
            return await catalog.import_archive(
                self.ctx,
                listing,
                source,
                actor=actor,
                message=message,
                expected_head=expected_head,
                on_entry=on_entry,
            )
        return await catalog.import_path(
            self.ctx,
            listing,
            source,
            actor=actor,
            message=message,
            expected_head=expected_head,
            on_entry=on_entry,
        )

    async def listing(self, listing: str, version: int | None = None) -> ListingVersion:
        """A listing's version (its newest if `version` is None) and manifest."""
        return await catalog.listing_version(self.ctx, listing, version)

    async def read_listing(self, listing: str, version: int | None = None) -> Package:
        """Every file of a listing's version (its newest if `version` is None), verified."""
        return await catalog.read_listing(self.ctx, listing, version)

    async def list_listings(self, *, limit: int = 50, after: str | None = None) -> SkillPage:
        """The catalog's listings, by id, a page at a time."""
        return await catalog.list_listings(self.ctx, limit=limit, after=after)

    # ------------------------------------------------------------ marketplace: jobs

    async def enqueue_install(
        self,
        scope: Scope,
        listing: str,
        version: int | None = None,
        *,
        actor: str = marketplace.DEFAULT_ACTOR,
        key: str | None = None,
        max_attempts: int | None = None,
    ) -> Enqueued:
        """Queue the install of a listing version (the newest if None) into `scope`.

        Idempotent by `key` (default: one per scope, listing and version): the same key
        returns the job it already names.
        """
        return await marketplace.enqueue_install(
            self.ctx, scope, listing, version, actor=actor, key=key, max_attempts=max_attempts
        )

    async def enqueue_update(
        self,
        scope: Scope,
        slug: str,
        *,
        version: int | None = None,
        policy: Policy | None = None,
        actor: str = marketplace.DEFAULT_ACTOR,
        key: str | None = None,
        max_attempts: int | None = None,
    ) -> Enqueued:
        """Queue the update of the installed copy `slug` to a listing version (the newest).

        `policy`: `merge` (publish a clean merge of an edited copy, propose on a conflict)
        or `propose` (always propose for an edited copy); default `settings.update_policy`.
        """
        return await marketplace.enqueue_update(
            self.ctx,
            scope,
            slug,
            version=version,
            policy=policy,
            actor=actor,
            key=key,
            max_attempts=max_attempts,
        )

    async def install(
        self,
        scope: Scope,
        listing: str,
        version: int | None = None,
        *,
        actor: str = marketplace.DEFAULT_ACTOR,
        key: str | None = None,
    ) -> JobOutcome:
        """Queue an install and run it now, in this process; return what the job recorded.

        A job that already finished (the same key) is returned as it is.
        """
        enqueued = await self.enqueue_install(scope, listing, version, actor=actor, key=key)
        return await self.worker().run_job(enqueued.job.id)

    async def update(
        self,
        scope: Scope,
        slug: str,
        *,
        version: int | None = None,
        policy: Policy | None = None,
        actor: str = marketplace.DEFAULT_ACTOR,
        key: str | None = None,
    ) -> JobOutcome:
        """Queue an update and run it now, in this process; return what the job recorded."""
        enqueued = await self.enqueue_update(
            scope, slug, version=version, policy=policy, actor=actor, key=key
        )
        return await self.worker().run_job(enqueued.job.id)

    def worker(
        self,
        *,
        worker_id: str | None = None,
        heartbeat: Wait | None = None,
        poll: Wait | None = None,
        rng: random.Random | None = None,
    ) -> Worker:
        """A job worker for the marketplace's job kinds, on this registry."""
        return Worker(
            self.ctx,
            marketplace.HANDLERS,
            worker_id=worker_id,
            heartbeat=heartbeat,
            poll=poll,
            rng=rng,
        )

    async def run_jobs(
        self, *, once: bool = False, drain: bool = False, stop: asyncio.Event | None = None
    ) -> int:
        """Run due jobs (see `Worker.run`); return how many ran."""
        return await self.worker().run(once=once, drain=drain, stop=stop)

    async def job(self, job_id: int) -> JobRow:
        """The job `job_id` (`JobNotFound` if there is none)."""
        return await jobs.get_job(self.ctx, job_id)

    async def list_jobs(
        self,
        *,
        status: str | None = None,
        workspace: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> JobPage:
        """Jobs, newest first, optionally of one status and one workspace."""
        return await jobs.list_jobs(
            self.ctx, status=status, workspace=workspace, limit=limit, before=before
        )

    # ------------------------------------------------------------ garbage collection

    async def gc(self, *, grace: float | None = None, dry_run: bool = False) -> GcReport:
        """Reclaim orphaned blobs (and prune versions, if a retention policy is set).

        Safe while writers run. `grace` (seconds, default `settings.gc_grace`) is how long
        an unreferenced, unclaimed blob is kept after it was last touched; `dry_run`
        reports what a run would reclaim and changes nothing.
        """
        return await gc_service.collect(self.ctx, grace=grace, dry_run=dry_run)

    async def fsck(self, *, verify_content: bool = False, limit: int = 1000) -> FsckReport:
        """Check the registry end to end; `report.clean` is False on any inconsistency.

        `verify_content` reads every referenced blob and checks its hash (otherwise its
        existence and size). At most `limit` problems and orphans are listed; the
        counters cover all of them.
        """
        return await fsck_service.fsck(self.ctx, verify_content=verify_content, limit=limit)

    async def gc_figures(self) -> GcFigures:
        """Bytes stored, referenced and orphaned, and what garbage collection reclaimed."""
        return await figures_service.gc_figures(self.ctx)

    async def prune_versions(
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

    # ------------------------------------------------------------ two-phase upload

    async def upload_blob(self, workspace: str, digest: str, data: bytes) -> UploadedBlob:
        """Store one file's bytes under its digest, ahead of the manifest that names it.

        The bytes are verified against `digest` before anything is stored
        (`BlobDigestMismatch`); the blob is kept for `workspace` for `claim_ttl` seconds,
        and for good once a version references it.
        """
        return await uploads.upload_blob(self.ctx, workspace, digest, data)

    async def blob_size(self, workspace: str, digest: str) -> int:
        """The size of a blob the workspace uploaded or references (`BlobUnknown` otherwise)."""
        return await uploads.blob_size(self.ctx, workspace, digest)

    async def read_blob(self, workspace: str, digest: str) -> bytes:
        """The verified bytes of a blob the workspace uploaded or references."""
        return await uploads.read_blob(self.ctx, workspace, digest)

    async def publish_uploaded(
        self,
        scope: Scope,
        slug: str,
        files: Sequence[ManifestFile],
        *,
        expected_head: ExpectedHead,
        origin: Origin = Origin.EDIT,
        actor: str,
        sources: Sequence[str] = (),
        message: str = "",
    ) -> Publication:
        """Publish a manifest whose blobs were uploaded with `upload_blob` beforehand.

        The package is validated and content-checked on the stored bytes, exactly like
        `write_package`; `BlobsMissing` names the digests the workspace has not uploaded.
        """
        request = WriteRequest(
            scope=scope,
            slug=slug,
            expected_head=expected_head,
            origin=origin,
            actor=actor,
            message=message,
            sources=tuple(sources),
        )
        return await uploads.publish_uploaded(self.ctx, request, files)

    async def uploaded_files(
        self, workspace: str, files: Sequence[ManifestFile]
    ) -> dict[str, PackageFile]:
        """The files a manifest of uploaded blobs names, fetched and verified.

        For writes that take files, such as a proposal's edited alternative.
        """
        return await uploads.uploaded_files(self.ctx, workspace, files)

    # ------------------------------------------------------------ access tokens

    async def create_token(
        self, workspace: str, role: str, *, name: str = "", actor: str
    ) -> IssuedToken:
        """Create an HTTP access token; `IssuedToken.token` is shown once and never stored."""
        return await tokens.create_token(self.ctx, workspace, role, name=name, actor=actor)

    async def revoke_token(self, token_id: str, *, actor: str) -> TokenInfo:
        """Revoke a token (idempotent; `TokenNotFound` if there is none)."""
        return await tokens.revoke_token(self.ctx, token_id, actor=actor)

    async def list_tokens(
        self, workspace: str, *, include_revoked: bool = False
    ) -> list[TokenInfo]:
        """The tokens of a workspace (never their secrets)."""
        return await tokens.list_tokens(self.ctx, workspace, include_revoked=include_revoked)

    async def authenticate(self, bearer: str) -> TokenInfo:
        """The live token a bearer string names, or `Unauthenticated`."""
        return await tokens.authenticate(self.ctx, bearer)

    # ------------------------------------------------------------ operations

    async def readiness(self) -> Readiness:
        """Whether the database and the blob store answer (never raises for their failures)."""
        return await operations.readiness(self.ctx)

    async def service_status(self) -> ServiceStatus:
        """Service-wide figures for operators: aggregates only, no workspace names."""
        return await operations.service_status(self.ctx)
