"""`Registry`: the face of the library (see `registry/api/__init__.py` for the map).

`Registry(engine, blobs, ...)` takes an engine and a `BlobStore` directly, so a test can
wrap the store to inject faults; `Registry.open()` builds both from settings.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Generic, Self, TypeVar, overload

from registry import lazy
from registry.api.controls import OwnerControls
from registry.api.materialization import Materialisation
from registry.api.search import Searching
from registry.bootstrap import build_blobstore, build_engine, missing_database
from registry.db import revision
from registry.db.engine import UnsupportedDatabaseURL, parse_database_url
from registry.domain.approvals import FindingRef
from registry.domain.clock import Clock, SystemClock
from registry.domain.model import (
    ArchivedVersion,
    ExpectedHead,
    FileInput,
    Origin,
    PackageFile,
    Publication,
    Scope,
)
from registry.domain.scanner import DefaultScanner, Scanner
from registry.errors import (
    NotFound,
    NotInitialized,
    SkillNotFound,
    StateConflict,
    StorageUnavailable,
)
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.context import Context
from registry.services.signing import Signer, Signing, load_signer
from registry.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from blobstore import BlobStore
    from registry.api.clawhub import ClawHub
    from registry.api.discovery import Discovery
    from registry.api.gc import GarbageCollection
    from registry.api.learning import Learning
    from registry.api.marketplace import Marketplace
    from registry.api.ops import Operations
    from registry.api.rescan import Rescan
    from registry.api.targets import Targets
    from registry.api.tokens import Tokens
    from registry.api.trust import Trust
    from registry.api.uploads import Uploads
    from registry.db import migrate
    from registry.services import names, read
    from registry.services.history import diff, proposals
    from registry.services.history import versions as history
    from registry.services.history.diff import DiffTarget, PackageDiff
    from registry.services.history.proposals import DecisionResult, ProposalDetail, ProposalPage
    from registry.services.history.versions import HistoryPage
    from registry.services.learning import loads, pending
    from registry.services.learning.loads import LoadRecord
    from registry.services.read import Package, PackageInfo, SkillPage
    from registry.services.trust import attest
    from registry.services.trust import keys as trust_keys
    from registry.services.write import content, edit, request, restore, retry
    from registry.services.write.retry import Change
else:
    # The services, each imported when a method first calls into it (registry/lazy.py):
    # a command runs one or two of them, and importing all (Alembic, the marketplace,
    # materialisation) would cost more than most commands' own work.
    migrate = lazy.module("registry.db.migrate")
    names = lazy.module("registry.services.names")
    read = lazy.module("registry.services.read")
    diff = lazy.module("registry.services.history.diff")
    proposals = lazy.module("registry.services.history.proposals")
    history = lazy.module("registry.services.history.versions")
    loads = lazy.module("registry.services.learning.loads")
    pending = lazy.module("registry.services.learning.pending")
    attest = lazy.module("registry.services.trust.attest")
    trust_keys = lazy.module("registry.services.trust.keys")
    content = lazy.module("registry.services.write.content")
    edit = lazy.module("registry.services.write.edit")
    request = lazy.module("registry.services.write.request")
    restore = lazy.module("registry.services.write.restore")
    retry = lazy.module("registry.services.write.retry")


T = TypeVar("T")


class _Namespace(Generic[T]):
    """A namespace of `Registry` (`reg.gc`, ...), built over its context on first use.

    Its module is imported then (a command that never runs GC never imports it); the
    instance is kept in the registry's `__dict__`, which `acting_as` clears.
    """

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute

    @overload
    def __get__(self, registry: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, registry: Registry, owner: type | None = None) -> T: ...
    def __get__(self, registry: Registry | None, owner: type | None = None) -> T | Self:
        if registry is None:  # looked up on the class (`inspect`, documentation tools)
            return self
        namespace: T = getattr(importlib.import_module(self.module), self.name)(registry.ctx)
        registry.__dict__[self.attribute] = namespace
        return namespace


class Registry(OwnerControls, Searching, Materialisation):
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
        signer: Signer | None = None,
    ) -> None:
        """`signer` signs every version; by default the key settings name (docs/trust.md)."""
        self.settings = settings or Settings()
        self.ctx = Context(
            engine=engine,
            blobs=blobs,
            settings=self.settings,
            scanner=scanner or DefaultScanner(),
            clock=clock or SystemClock(),
            failpoints=failpoints,
            signing=Signing(signer) if signer else Signing(settings=self.settings),
        )
        self._owns_resources = owns_resources

    marketplace: _Namespace[Marketplace] = _Namespace("registry.api.marketplace", "Marketplace")
    rescan: _Namespace[Rescan] = _Namespace("registry.api.rescan", "Rescan")
    gc: _Namespace[GarbageCollection] = _Namespace("registry.api.gc", "GarbageCollection")
    uploads: _Namespace[Uploads] = _Namespace("registry.api.uploads", "Uploads")
    tokens: _Namespace[Tokens] = _Namespace("registry.api.tokens", "Tokens")
    ops: _Namespace[Operations] = _Namespace("registry.api.ops", "Operations")
    learning: _Namespace[Learning] = _Namespace("registry.api.learning", "Learning")
    targets: _Namespace[Targets] = _Namespace("registry.api.targets", "Targets")
    discovery: _Namespace[Discovery] = _Namespace("registry.api.discovery", "Discovery")
    trust: _Namespace[Trust] = _Namespace("registry.api.trust", "Trust")
    clawhub: _Namespace[ClawHub] = _Namespace("registry.api.clawhub", "ClawHub")

    @property
    def engine(self) -> AsyncEngine:
        return self.ctx.engine

    @property
    def principal(self) -> str:
        """Who this registry acts for: recorded and signed with every version it writes."""
        return self.ctx.principal

    def acting_as(self, principal: str) -> Self:
        """This registry acting for `principal` (`token:<id>`: an authenticated caller).

        Shares the engine, the blob store, the key and every other resource; closing it
        closes nothing. By default a registry acts for its process's user (`os:<user>`).
        """
        other = copy.copy(self)
        other.ctx = self.ctx.acting_as(principal)
        other._owns_resources = False  # noqa: SLF001 - its own class
        for name, value in vars(type(self)).items():
            if isinstance(value, _Namespace):
                other.__dict__.pop(name, None)  # built again over the new context
        return other

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
        otherwise a database that is not at the newest revision raises `NotInitialized`,
        and so does a SQLite file that does not exist, before anything is created.
        """
        base = settings or Settings()
        urls = {"database_url": database_url, "blob_url": blob_url}
        overrides = {k: v for k, v in urls.items() if v is not None}
        effective = base.model_copy(update=overrides) if overrides else base
        _check_database_url(effective.database_url)
        missing = None if initialize else missing_database(effective)
        if missing is not None:
            raise NotInitialized(None, revision.head_revision(), missing=str(missing))
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
        """Create or upgrade the database schema, the blob store and the signing key.

        Idempotent. The key file (`SKILLREG_SIGNING_KEY_FILE`) is made only when no key is
        configured at all; a key from `SKILLREG_SIGNING_KEY` or an existing file is
        registered as it is.
        """
        await self.blobs.ensure()
        await migrate.upgrade(self.engine)
        signing = self.ctx.signing
        if signing.signer is None:
            try:
                signing.signer = await trust_keys.create(self.ctx, self.settings)
            except StateConflict:
                # Another process made the file first: that key is the registry's.
                signing.signer = load_signer(self.settings)
        await trust_keys.register(self.ctx, attest.ready(self.ctx))
        signing.registered = True

    @staticmethod
    async def ensure_database(database_url: str) -> bool:
        """Create the PostgreSQL database `database_url` names if missing; True if it was.

        Only if the role may create databases; SQLite files are made when first opened.
        """
        _check_database_url(database_url)
        return await migrate.ensure_database(database_url)

    async def revision(self) -> str | None:
        """The database's migration revision; None before the first migration."""
        return await revision.current_revision(self.engine)

    def check_metadata(self, fields: Mapping[str, str | None]) -> None:
        """Refuse a caller's text fields (an actor, a reason, a key) holding a credential.

        `ContentBlocked` naming `meta:<field>`, never the value; the same check the write
        path applies to a version's message and sources.
        """
        content.check_metadata(self.ctx.scanner, [(k, v) for k, v in fields.items() if v])

    def load_signing_key(self) -> None:
        """Load the signing key now rather than at the first write that signs.

        `SigningKeyUnavailable` if the key settings name cannot be read; a registry with no
        key at all loads nothing (it refuses writes). A read never needs the key, so a
        registry loads it on first use; a server loads it as it starts (`skillreg serve`),
        so that a bad key stops it there rather than failing its first write.
        """
        _ = self.ctx.signing.signer

    async def check_schema(self) -> None:
        """Raise `NotInitialized` unless the database is at the newest revision."""
        current = await revision.current_revision(self.engine)
        head = revision.head_revision()
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

    async def __aexit__(self, *exc_info: object) -> None:
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
        keep_auto_improve: bool = False,
    ) -> Publication:
        """Publish `files` as the new head of `slug` in one atomic change.

        `expected_head=None`: the skill must not exist yet; an int: the head must be that
        version (`HeadConflict` otherwise); `ANY`: no check. Re-saving the head's exact
        package is a no-op that returns the head (`unchanged=True`).

        A write by a person (origin `edit`, `import`, ...) turns the skill's automatic
        improvements off unless `keep_auto_improve`. An automated write (`Origin.LEARNING`)
        follows the owner's rules (docs/history.md, "Learning writes"): it may record a
        proposal (`Publication.proposal`, possibly labelled `suppressed`) or a pending write
        (`Publication.pending`) instead of a version, and is refused
        (`LearningIncomplete`) if its `SKILL.md` lacks Steps or Verification. `approve`
        names content-check findings (path, ordinal) the writer approves; approvals of the
        version written on are inherited.
        """
        write = request.WriteRequest(
            scope=scope,
            slug=slug,
            expected_head=expected_head,
            origin=origin,
            actor=actor,
            message=message,
            sources=sources,
            approve=approve,
            keep_auto_improve=keep_auto_improve,
        )
        return await pending.write_package(self.ctx, write, files)

    async def write_with_retry(
        self,
        scope: Scope,
        slug: str,
        change: Change,
        *,
        actor: str,
        origin: Origin = Origin.EDIT,
        message: str = "",
        sources: Sequence[str] = (),
        attempts: int = 20,
    ) -> Publication:
        """Apply `change(current package or None)` as a compare-and-swap, retried on conflict.

        Re-reads the head and re-applies the change before each retry, after a jittered,
        growing wait, so writers on one hot skill neither lose nor overwrite each other's
        changes. This registry's calls for one skill take turns, in the order they came, so
        only other processes' writers make an attempt fail (docs/write-path.md, "Retrying a
        compare-and-swap").
        """
        return await retry.write_with_retry(
            self.ctx, scope, slug, change, actor=actor, origin=origin, message=message,
            sources=sources, attempts=attempts,
        )  # fmt: skip

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
        version: int | ArchivedVersion,
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

        An `ArchivedVersion` brings its deleted skill back: the same skill, live again,
        its history continued by the new version; `expected_head` is the deleted skill's
        head (or `ANY`). A slug that another live skill holds now is `SlugTaken`.
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

    # ------------------------------------------------------------ reads, loads, history and diff

    async def record_load(
        self, scope: Scope, slug: str, version: int, conversation: str
    ) -> LoadRecord:
        """Record that a runtime loaded exactly `version` of `slug` for `conversation`.

        A load, never a success. Idempotent per (skill, version, conversation); the version
        is kept by retention, so `read_package(scope, slug, version)` keeps working.
        """
        return await loads.record_load(self.ctx, scope, slug, version, conversation)

    async def loads(self, workspace: str, conversation: str) -> list[LoadRecord]:
        """The loads recorded for `conversation`, in order (which versions it used)."""
        return await loads.loads_of(self.ctx, workspace, conversation)

    async def read_package(
        self, scope: Scope, slug: str, version: int | ArchivedVersion | None = None
    ) -> Package:
        """The package at the head (or a pinned version), every file verified.

        An `ArchivedVersion` reads a version of a deleted skill of the slug.
        """
        return await read.read_package(self.ctx, scope, slug, version)

    async def package_info(
        self, scope: Scope, slug: str, version: int | ArchivedVersion | None = None
    ) -> PackageInfo:
        """A version's manifest and metadata, without reading blobs (`ArchivedVersion` too)."""
        return await read.package_info(self.ctx, scope, slug, version)

    async def list_skills(
        self, scope: Scope, *, limit: int = 50, after: str | None = None
    ) -> SkillPage:
        """The live skills of `scope`, by slug, a page at a time."""
        return await read.list_skills(self.ctx, scope, limit=limit, after=after)

    async def require_workspace(self, workspace: str) -> None:
        """Raise `WorkspaceNotFound` unless anything was ever recorded for `workspace`.

        A workspace exists once a skill (deleted ones too), a pending write, a token, its
        discovery settings or a materialisation target names it; the error names the
        nearest existing workspaces. A read of an empty listing is not refused by itself:
        callers that want a misspelt name caught (the CLI's reads) ask first.
        """
        await names.require_workspace(self.ctx, workspace)

    async def explain_not_found(self, error: SkillNotFound) -> NotFound:
        """`error` with the nearest names: its workspace missing, or the nearest slugs."""
        return await names.skill_not_found(self.ctx, error)

    async def agents(self, workspace: str) -> list[str]:
        """The agents of `workspace` that have at least one live skill, by name."""
        return await read.list_agents(self.ctx, workspace)

    async def history(
        self,
        scope: Scope,
        slug: str,
        *,
        limit: int = 20,
        before: str | None = None,
        include_archived: bool = False,
        skill_id: int | None = None,
    ) -> HistoryPage:
        """The versions of `slug`, newest first, a page at a time.

        With `include_archived`, the versions of earlier, deleted skills of the same slug
        follow (marked `archived`, each with its `skill_id`); `skill_id` lists one skill's
        versions only. Pinned reads: `read_package(..., version=N)`, or
        `version=ArchivedVersion(N, skill_id)` for an archived one.
        """
        return await history.history(
            self.ctx,
            scope,
            slug,
            limit=limit,
            before=before,
            include_archived=include_archived,
            skill_id=skill_id,
        )

    async def diff(
        self, scope: Scope, slug: str, a: DiffTarget, b: DiffTarget, *, full: bool = False
    ) -> PackageDiff:
        """What changed from `a` to `b` (version numbers, `ProposalRef(id)`, `ArchivedVersion`).

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


def _check_database_url(url: str) -> None:
    """Refuse a URL no supported database answers, as the database being unavailable.

    A mistyped URL and an unreachable server are the same problem to whoever runs the
    registry (its configuration): one error class, one exit code, one HTTP status.
    """
    try:
        parse_database_url(url)
    except UnsupportedDatabaseURL as exc:
        raise StorageUnavailable("database", str(exc)) from None
