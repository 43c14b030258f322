"""The package write: validate, scan, store blobs first, publish in one locked transaction.

    validate ──► scan ──► claim + upload ──► one transaction ──► reply
    (no I/O)     (cache)  (parallel,          (workspace lock, root checks,
                           idempotent)         CAS, rows, head, event, commit)

Failure handling (docs/write-path.md):
- Anything before the commit leaves the previous package exactly as it was. The write's
  claims are released under `asyncio.shield`, cancellation included; no blob is ever
  deleted here (GC reclaims what nobody references, after its grace period).
- A failure at or after the commit has an unknown outcome: it is settled by looking for the
  version this write created (its `write_id`); if it exists, the write is reported as
  published and nothing is released.
- No blob I/O, hashing or scanning happens while the workspace lock is held.

History (docs/history.md) adds three things to the locked transaction, so that each stays
one change with one event: an automated (`learning`) write the owner's rules divert
records a proposal or a pending write instead of a version (`learning.route`, `record`);
an owner's edit that loses its compare-and-swap can keep its draft as a proposal; and a
write that applies a proposal closes it. Every head move makes the skill's open proposal
stale, and a write that lists an excluded source is refused.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import blobs as db_blobs
from registry.db import errors as db_errors
from registry.db import publication as db_publication
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.db.unit import CommitOutcomeUnknown, Outcome
from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest, build_manifest
from registry.domain.model import (
    FileInput,
    PackageFile,
    Publication,
    check_slug,
)
from registry.domain.package import ValidatedPackage, validate_package
from registry.domain.skeleton import skeleton
from registry.errors import (
    Inconsistency,
    StorageUnavailable,
    VersionNotFound,
    VersionRevoked,
    WorkspaceBusy,
)
from registry.services.context import Context, offloaded
from registry.services.trust import attest
from registry.services.write import (
    append,
    blobstage,
    content,
    diversion,
    learning,
    rootchecks,
    settle,
)
from registry.services.write.append import BlobsRaced
from registry.services.write.request import NOT_SCREENED, Screening, WriteRequest

# A publish that finds one of its blobs claimed away by GC (its claim expired while it
# was stalled, or GC is deleting that object right now under its fence) starts again from
# the claim; this bounds how often, and the jittered pause before each new attempt lets a
# GC delete in flight finish (docs/gc.md, "Interleavings").
_BLOB_RACE_ATTEMPTS: Final = 4
_BLOB_RACE_PAUSE: Final = 0.05


@dataclass(frozen=True, slots=True)
class _Staged:
    """What the blob stage did for one attempt: the write's claims and its uploads."""

    write_id: str
    claimed: bool
    uploaded: frozenset[str]


async def write_package(
    ctx: Context, request: WriteRequest, files: Mapping[str, FileInput]
) -> Publication:
    """Publish `files` as the new head of `request.slug`, or change nothing."""
    with ctx.deadline():
        return await _write_package(ctx, request, files)


async def _write_package(
    ctx: Context, request: WriteRequest, files: Mapping[str, FileInput]
) -> Publication:
    check_slug(request.slug)
    content.check_metadata(ctx.scanner, content.version_metadata(request.message, request.sources))
    package = validate_package(files, request.slug, ctx.limits)
    learning.check_package(request, package)
    manifest = await _hash(package)
    # One read for what the content check and the early checks need: the digests already
    # scanned clean, and the head (its skill row and package).
    digests = [e.digest for e in manifest.entries]
    fingerprint = ctx.scanner.fingerprint

    async def look(conn: AsyncConnection) -> tuple[db_publication.Head | None, set[str]]:
        return await db_publication.head_for_write(
            conn, request.scope, request.slug, digests=digests, scanner=fingerprint
        )

    # One statement: no transaction of its own.
    head, clean = await ctx.read_one(look)
    # Approvals are inherited from the version the write builds on (docs/history.md);
    # they are looked up only if the content check finds something.
    expected = request.expected_head

    async def inherited() -> tuple[Approval, ...]:
        if expected is None:
            return ()
        base = expected if isinstance(expected, int) else None
        return await content.approvals_of(ctx, request.scope, request.slug, base)

    verdict = await content.verdict(
        ctx,
        manifest,
        package.files,
        allowed=inherited,
        approve=request.approve,
        remember=False,
        clean=clean,
    )
    if verdict.blocked is not None:
        raise verdict.blocked
    await ctx.hit("write.validated")
    screening = await learning.screening(request, package, manifest, verdict)
    return await _publish_manifest(ctx, request, manifest, package.files, screening, head=head)


async def publish_manifest(
    ctx: Context,
    request: WriteRequest,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    *,
    screening: Screening = NOT_SCREENED,
) -> Publication:
    """Store the blobs `manifest` needs that the head lacks, then publish it.

    `files` holds the bytes of every entry whose blob may need storing; a restore or an
    install passes an empty mapping (every blob is already referenced and live).
    `screening` is what the content check decided for this package; the request's metadata
    is checked here, for every write.
    """
    content.check_metadata(ctx.scanner, content.version_metadata(request.message, request.sources))
    with ctx.deadline():
        head, _ = await ctx.read_one(
            lambda conn: db_publication.head_for_write(conn, request.scope, request.slug)
        )
        return await _publish_manifest(ctx, request, manifest, files, screening, head=head)


async def _publish_manifest(
    ctx: Context,
    request: WriteRequest,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    screening: Screening,
    *,
    head: db_publication.Head | None,
) -> Publication:
    # A decision or a repair must be recorded even if the head's package is the same.
    if head is not None and head.manifest.hash == manifest.hash and request.may_be_unchanged:
        return _unchanged(head)
    rootchecks.early_checks(request, head.skill if head else None)
    attest.ready(ctx)  # nothing is stored for a write that cannot be signed
    await ctx.hit("write.checked")

    head_digests = set() if head is None else {e.digest for e in head.manifest.entries}
    to_store = {
        e.digest: files[e.path].data
        for e in manifest.entries
        if e.digest not in head_digests and e.path in files
    }
    available = {e.digest: files[e.path].data for e in manifest.entries if e.path in files}
    write_id = str(uuid.uuid4())
    try:
        return await _store_and_publish(
            ctx,
            request,
            screening,
            manifest=manifest,
            write_id=write_id,
            to_store=to_store,
            available=available,
        )
    except CommitOutcomeUnknown as unknown:
        # The reply was lost, not necessarily the write: look for the version.
        try:
            return await ctx.shielded(settle.settle(ctx, request, write_id))
        except settle.CommitFailed:
            cause = unknown.__cause__ or unknown
            raise db_errors.translate(cause, database=ctx.uow.database) from cause
    except WorkspaceBusy:
        # The write has waited its whole lock budget: it is told at once, and its claims
        # are released in the background (tracked: `Registry.close()` waits for it).
        ctx.cleanups.start(settle.release(ctx, request.scope.workspace, write_id))
        raise
    except BaseException:
        # Cancellation included: release the claims, then let the error (or the
        # cancellation) propagate. A cancelled caller gets no reply to report to.
        await ctx.shielded(settle.release(ctx, request.scope.workspace, write_id))
        raise


async def _store_and_publish(
    ctx: Context,
    request: WriteRequest,
    screening: Screening,
    *,
    manifest: Manifest,
    write_id: str,
    to_store: Mapping[str, bytes],
    available: Mapping[str, bytes],
) -> Publication:
    """Claim, upload and publish; if GC raced the write for a blob, store it again and retry.

    A blob deduplicated against the head is normally safe (the head references it), but
    with `expected_head=ANY` the head may move and retention may prune the old version
    meanwhile. Such a blob is claimed and uploaded on the next attempt, if this write has
    its bytes; a restore or an install, which has none, fails instead.
    """
    pending = dict(to_store)
    for attempt in range(_BLOB_RACE_ATTEMPTS):
        if attempt:
            await asyncio.sleep(random.uniform(0, _BLOB_RACE_PAUSE * 2**attempt))  # noqa: S311
        uploaded = await blobstage.claim_and_upload(
            ctx,
            request.scope,
            write_id,
            pending,
            scanned_clean=screening.scanned_clean,
            document=screening.document,
        )
        try:
            staged = _Staged(write_id, claimed=bool(pending), uploaded=uploaded)
            return await _publish(ctx, request, screening, manifest, staged)
        except BlobsRaced as raced:
            missing = [d for d in raced.digests if d not in available]
            if missing:
                raise Inconsistency(
                    f"{len(missing)} blobs this version references are not stored "
                    f"(first: {missing[0]}); run `skillreg fsck`"
                ) from None
            pending |= {d: available[d] for d in raced.digests}
    raise StorageUnavailable("blob store", "referenced blobs kept disappearing during the write")


async def _hash(package: ValidatedPackage) -> Manifest:
    size = sum(len(f.data) for f in package.files.values())
    return await offloaded(size, build_manifest, package.files)


def _unchanged(head: db_publication.Head) -> Publication:
    return Publication(
        version=head.skill.head,
        manifest_hash=head.manifest.hash,
        created=False,
        retired=None,
        unchanged=True,
    )


async def _publish(
    ctx: Context,
    request: WriteRequest,
    screening: Screening,
    manifest: Manifest,
    staged: _Staged,
) -> Publication:
    """The locked transaction (`UnitOfWork.publish`): retried as a whole before its commit."""
    # Before the lock: the first skeleton of a process builds the confusables table.
    slug_skeleton = skeleton(request.slug)

    async def work(conn: AsyncConnection) -> Outcome[Publication]:
        found = await db_publication.write_context(
            conn,
            request.scope,
            request.slug,
            request.sources,
            kind=request.kind,
            total_size=manifest.total_size,
            skeleton=slug_skeleton,
        )
        publication = await _apply(
            ctx, conn, request, screening, found, manifest=manifest, staged=staged
        )
        # A write that finds its package at the head changes nothing but its own claims:
        # it commits their release, or rolls back if it claimed nothing.
        return Outcome(publication, commit=not publication.unchanged or staged.claimed)

    publication = await ctx.uow.publish(request.scope.workspace, work, hit=ctx.hit)
    if publication.created:
        ctx.signing.registered = True  # its key's row committed with the version
    return publication


async def _apply(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    screening: Screening,
    found: db_publication.WriteContext,
    *,
    manifest: Manifest,
    staged: _Staged,
) -> Publication:
    """Root checks, compare-and-swap and every row of the new version (lock held).

    `found` is what the write context read, first under the lock.
    """
    scope, now = request.scope, ctx.clock.now()
    write_id, uploaded = staged.write_id, staged.uploaded
    if request.revives is not None:
        # A deleted skill coming back: from here on it stands where a live skill would.
        found = await rootchecks.reopen(conn, request, found)
    skill = found.skill
    if skill is not None and request.may_be_unchanged and found.head_hash == manifest.hash:
        # Another writer published this package first: the head references every blob
        # this write claimed, so its claims are released (invariant I4).
        if staged.claimed:
            await db_blobs.release(conn, write_id, now)
        return Publication(skill.head, manifest.hash, created=False, retired=None, unchanged=True)
    decided = await diversion.pending_proposal(conn, request, skill)
    draft_base = rootchecks.check_root_or_keep_draft(request, skill)
    rootchecks.check_look_alike(request, found)
    # Retention may have pruned the restored version since the restore read it (and GC its
    # blobs): decided here, under the lock, that is a missing version, not damage.
    restored = request.restored_from
    if restored is not None and skill is not None:
        if not await _has_version(conn, skill, restored):
            raise VersionNotFound(request.slug, restored)
        # A revoked version is never made the head again, by a restore or a rollback.
        revoked = await db_revocations.of_version(conn, scope.workspace, skill.id, restored)
        if revoked is not None:
            raise VersionRevoked(request.slug, restored, revoked.kind, revoked.reason)
    if found.has_excluded_source:
        await diversion.check_sources(conn, request)
    route = await learning.route(
        ctx, conn, request, skill, manifest, screening, draft_base=draft_base, known=found
    )
    await ctx.hit("publish.checked")

    # Dropping the claims here releases them (the commit makes it stick) and tells the
    # blob check which of this write's uploads its claims still covered.
    held = await db_blobs.release(conn, write_id, now) if staged.claimed else frozenset()
    problem = await db_blobs.confirm(
        conn, held=held, uploaded=uploaded, referenced=[e.digest for e in manifest.entries]
    )
    if problem is not None:
        raise BlobsRaced(problem.digests)
    manifest_id = await db_publication.ensure_manifest(conn, scope.workspace, manifest, now)
    if route.action != learning.PUBLISH:
        # A proposal or a pending write instead of a version (docs/history.md).
        recorded = await learning.record(
            ctx,
            conn,
            request,
            route,
            approvals=screening.approvals,
            manifest=manifest,
            manifest_id=manifest_id,
            write_id=write_id,
            now=now,
        )
        return _with_uploads(recorded, manifest, uploaded)
    publication = await append.version(
        ctx,
        conn,
        request,
        found,
        approvals=screening.approvals,
        manifest=manifest,
        manifest_id=manifest_id,
        decided=decided,
        write_id=write_id,
        now=now,
    )
    return _with_uploads(publication, manifest, uploaded)


async def _has_version(conn: AsyncConnection, skill: db_skills.SkillRow, number: int) -> bool:
    return await db_skills.version(conn, skill, number) is not None


def _with_uploads(
    publication: Publication, manifest: Manifest, uploaded: frozenset[str]
) -> Publication:
    return replace(
        publication,
        uploaded=len(uploaded),
        uploaded_bytes=sum(e.size for e in manifest.entries if e.digest in uploaded),
    )
