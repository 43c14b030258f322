"""`reg.marketplace`: the catalog of listings and the jobs that install and update them.

The catalog holds listings (packages published for installation); an install or update is
a durable job, queued idempotently and run by a `Worker` (or at once, by `install` and
`update`, in the calling process).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from registry.db.jobs import JobRow
from registry.domain.approvals import FindingRef
from registry.domain.archive import EntryCallback
from registry.domain.arguments import check_choice
from registry.domain.model import ANY, ExpectedHead, FileInput, Publication, Scope
from registry.services.context import Context
from registry.services.history import rescan
from registry.services.jobs import queue as jobs
from registry.services.jobs.queue import Enqueued, JobOutcome, JobPage, Wait, Worker
from registry.services.marketplace import catalog, copies
from registry.services.marketplace import install as installer
from registry.services.marketplace.catalog import ImportResult, ListingVersion
from registry.services.marketplace.copies import CopyStatus
from registry.services.marketplace.install import Policy
from registry.services.read import Package, SkillPage


class Marketplace:
    """The marketplace of one registry: `reg.marketplace`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------ catalog

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

    async def copy_status(self, scope: Scope, slug: str) -> CopyStatus:
        """Where the installed copy `slug` stands: its listing, baseline, newest, edited.

        `NotInstalled` for a skill that was saved in the workspace, not installed.
        """
        return await copies.copy_status(self.ctx, scope, slug)

    # ------------------------------------------------------------ jobs

    async def enqueue_install(
        self,
        scope: Scope,
        listing: str,
        version: int | None = None,
        *,
        actor: str = installer.DEFAULT_ACTOR,
        key: str | None = None,
        max_attempts: int | None = None,
    ) -> Enqueued:
        """Queue the install of a listing version (the newest if None) into `scope`.

        Idempotent by `key` (default: one per scope, listing and version): the same key
        returns the job it already names.
        """
        return await installer.enqueue_install(
            self.ctx, scope, listing, version, actor=actor, key=key, max_attempts=max_attempts
        )

    async def enqueue_update(
        self,
        scope: Scope,
        slug: str,
        *,
        version: int | None = None,
        policy: Policy | None = None,
        actor: str = installer.DEFAULT_ACTOR,
        key: str | None = None,
        max_attempts: int | None = None,
    ) -> Enqueued:
        """Queue the update of the installed copy `slug` to a listing version (the newest).

        `policy`: `merge` (publish a clean merge of an edited copy, propose on a conflict)
        or `propose` (always propose for an edited copy); default `settings.update_policy`.
        Another value is `ArgumentInvalid` (`not_a_choice`), before anything is read.
        """
        if policy is not None:
            policy = check_choice("policy", policy, installer.POLICIES)
        return await installer.enqueue_update(
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
        actor: str = installer.DEFAULT_ACTOR,
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
        actor: str = installer.DEFAULT_ACTOR,
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
        """A job worker for every job kind (installs, updates, rescans), on this registry."""
        return Worker(
            self.ctx,
            {**installer.HANDLERS, **rescan.HANDLERS},
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
