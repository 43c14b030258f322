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
one change with one event: an automated (`learning`) write to a skill under human control
records a proposal instead of a version; an owner's edit that loses its compare-and-swap
can keep its draft as a proposal; and a write that applies a proposal closes it. Every
head move makes the skill's open proposal stale, and a write that lists an excluded
source is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import blobs as db_blobs
from registry.db import errors as db_errors
from registry.db import proposals as db_proposals
from registry.db import skills as db
from registry.db.cancel import check_cancelled, guarded
from registry.db.engine import write_connection
from registry.db.locks import lock_workspace
from registry.domain.approvals import Approval, FindingRef
from registry.domain.manifest import Manifest, build_manifest
from registry.domain.model import (
    ExpectedHead,
    FileInput,
    Origin,
    PackageFile,
    Publication,
    Scope,
    check_slug,
)
from registry.domain.package import ValidatedPackage, validate_package
from registry.errors import (
    IntegrityError,
    RegistryError,
    StorageUnavailable,
)
from registry.services.context import Context, shielded
from registry.services.write import blobstage, content, diversion, rootchecks
from registry.services.write.diversion import ProposalDecision

# Above this many bytes, hashing runs in a worker thread (BLAKE3 releases the GIL), so a
# large package does not stall the event loop.
_THREAD_THRESHOLD: Final = 256 * 1024
# A publish that finds one of its blobs claimed away by GC (its claim expired while it
# was stalled) starts again from the claim; this bounds how often.
_BLOB_RACE_ATTEMPTS: Final = 3

MARKETPLACE_ORIGINS: Final = frozenset({Origin.MARKETPLACE_INSTALL, Origin.MARKETPLACE_UPDATE})


@dataclass(frozen=True)
class WriteRequest:
    """Everything a package write needs to know besides the files.

    History fields (docs/history.md): `approve` names findings the writer approves;
    `approvals` are the content-check approvals stored with the new version (set by the
    content check, never by callers of `write_package`); `keep_draft` records the package
    as a proposal if the compare-and-swap fails; `decides` makes this write the owner's
    decision on a pending proposal; `repair` marks a rollback after a source exclusion.
    A decision or a repair always appends a version, even if the head has the same package.

    Marketplace (docs/marketplace.md): `baseline` is the listing version an installed copy
    now follows; `propose` records the package as a proposal for the owner instead of
    publishing it (an update of an edited copy), carrying `baseline` to the version the
    proposal becomes if the owner applies it.

    `scanned_clean` are the digests the content check scanned clean for this write; they
    are recorded in the claim transaction (one commit fewer than a transaction of their own).
    """

    scope: Scope
    slug: str
    expected_head: ExpectedHead
    origin: Origin
    actor: str
    message: str = ""
    sources: Sequence[str] = ()
    restored_from: int | None = None
    baseline: tuple[str, int, str] | None = None
    skill_changes: Mapping[str, object] = field(default_factory=dict)
    approve: Sequence[FindingRef] = ()
    approvals: Sequence[Approval] = ()
    keep_draft: bool = False
    decides: ProposalDecision | None = None
    repair: bool = False
    propose: bool = False
    scanned_clean: Sequence[str] = ()

    @property
    def may_be_unchanged(self) -> bool:
        """True if re-saving the head's package is a no-op for this write."""
        return self.decides is None and not self.repair

    @property
    def kind(self) -> str:
        return "installed" if self.origin in MARKETPLACE_ORIGINS else "saved"


@dataclass(frozen=True)
class _Head:
    skill: db.SkillRow
    manifest: Manifest


class _CommitOutcomeUnknown(Exception):
    """The commit was attempted and failed: it may or may not have happened."""


class _BlobsRaced(Exception):
    """A referenced blob was found missing or being deleted inside the publish transaction."""

    def __init__(self, digests: tuple[str, ...]) -> None:
        self.digests = digests
        super().__init__(f"{len(digests)} referenced blobs are not live")


async def write_package(
    ctx: Context, request: WriteRequest, files: Mapping[str, FileInput]
) -> Publication:
    """Publish `files` as the new head of `request.slug`, or change nothing."""
    check_slug(request.slug)
    package = validate_package(files, request.slug, ctx.limits)
    manifest = await _hash(package)
    # Approvals are inherited from the version the write builds on (docs/history.md);
    # they are looked up only if the content check finds something.
    expected = request.expected_head

    async def inherited() -> tuple[Approval, ...]:
        if expected is None:
            return ()
        base = expected if isinstance(expected, int) else None
        return await content.approvals_of(ctx, request.scope, request.slug, base)

    verdict = await content.verdict(
        ctx, manifest, package.files, allowed=inherited, approve=request.approve, remember=False
    )
    if verdict.blocked is not None:
        raise verdict.blocked
    await ctx.hit("write.validated")
    request = replace(request, approvals=verdict.kept, scanned_clean=verdict.fresh)
    return await publish_manifest(ctx, request, manifest, package.files)


async def publish_manifest(
    ctx: Context,
    request: WriteRequest,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
) -> Publication:
    """Store the blobs `manifest` needs that the head lacks, then publish it.

    `files` holds the bytes of every entry whose blob may need storing; a restore or an
    install passes an empty mapping (every blob is already referenced and live).
    """
    head = await ctx.read(lambda conn: _read_head(conn, request.scope, request.slug))
    # A decision or a repair must be recorded even if the head's package is the same.
    if head is not None and head.manifest.hash == manifest.hash and request.may_be_unchanged:
        return _unchanged(head)
    rootchecks.early_checks(request, head.skill if head else None)
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
            manifest=manifest,
            write_id=write_id,
            to_store=to_store,
            available=available,
        )
    except _CommitOutcomeUnknown as unknown:
        # The reply was lost, not necessarily the write: look for the version.
        settled = await shielded(_settle(ctx, request, write_id, look=True))
        if settled is not None:
            return settled
        cause = unknown.__cause__ or unknown
        raise db_errors.translate(cause) from cause
    except BaseException:
        # Cancellation included: release the claims, then let the error (or the
        # cancellation) propagate. A cancelled caller gets no reply to report to.
        await shielded(_settle(ctx, request, write_id, look=False))
        raise


async def _store_and_publish(
    ctx: Context,
    request: WriteRequest,
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
    for _ in range(_BLOB_RACE_ATTEMPTS):
        uploaded = await blobstage.claim_and_upload(
            ctx, request.scope, write_id, pending, scanned_clean=request.scanned_clean
        )
        try:
            return await _publish(ctx, request, manifest, write_id, uploaded)
        except _BlobsRaced as raced:
            missing = [d for d in raced.digests if d not in available]
            if missing:
                raise IntegrityError(
                    f"{len(missing)} blobs this version references are not stored "
                    f"(first: {missing[0]}); run `skillreg fsck`"
                ) from None
            pending |= {d: available[d] for d in raced.digests}
    raise StorageUnavailable("blob store", "referenced blobs kept disappearing during the write")


async def _hash(package: ValidatedPackage) -> Manifest:
    size = sum(len(f.data) for f in package.files.values())
    if size > _THREAD_THRESHOLD:
        return await asyncio.to_thread(build_manifest, package.files)
    return build_manifest(package.files)


async def _read_head(conn: AsyncConnection, scope: Scope, slug: str) -> _Head | None:
    skill = await db.live_skill(conn, scope, slug)
    if skill is None:
        return None
    head = await db.version(conn, skill, skill.head)
    assert head is not None, "a skill's head names an existing version"
    return _Head(skill, await db.manifest_entries(conn, scope.workspace, head.manifest_id))


def _unchanged(head: _Head) -> Publication:
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
    manifest: Manifest,
    write_id: str,
    uploaded: frozenset[str],
) -> Publication:
    """The locked transaction, retried as a whole on transient errors before its commit."""
    try:
        async for attempt in ctx.retrying():
            with attempt:
                return await guarded(
                    lambda: _publish_once(
                        ctx, request, manifest=manifest, write_id=write_id, uploaded=uploaded
                    )
                )
    except db_errors.DATABASE_ERRORS as exc:
        raise db_errors.translate(
            exc, workspace=request.scope.workspace, lock_timeout=ctx.settings.lock_timeout
        ) from exc
    raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover


async def _publish_once(
    ctx: Context,
    request: WriteRequest,
    *,
    manifest: Manifest,
    write_id: str,
    uploaded: frozenset[str],
) -> Publication:
    scope = request.scope
    async with ctx.engine.connect() as raw:
        conn = await write_connection(raw)
        transaction = await conn.begin()
        try:
            await ctx.hit("publish.begin")
            await lock_workspace(conn, scope.workspace)
            await ctx.hit("publish.locked")
            publication = await _apply(
                ctx, conn, request, manifest=manifest, write_id=write_id, uploaded=uploaded
            )
            await ctx.hit("publish.before_commit")
            check_cancelled()
        except BaseException:
            await transaction.rollback()
            raise
        if publication.unchanged:
            await transaction.rollback()
            return publication
        try:
            await transaction.commit()
            await ctx.hit("publish.committed")
        except Exception as exc:
            raise _CommitOutcomeUnknown(str(exc)) from exc
    return publication


async def _apply(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    *,
    manifest: Manifest,
    write_id: str,
    uploaded: frozenset[str],
) -> Publication:
    """Root checks, compare-and-swap and every row of the new version (lock held)."""
    scope, now = request.scope, ctx.clock.now()
    skill = await db.live_skill(conn, scope, request.slug)
    if skill is not None and request.may_be_unchanged:
        head = await db.version(conn, skill, skill.head)
        assert head is not None
        if head.manifest_hash == manifest.hash:
            return Publication(
                skill.head, head.manifest_hash, created=False, retired=None, unchanged=True
            )
    decided = await diversion.pending_proposal(conn, request, skill)
    draft_base = rootchecks.check_root_or_keep_draft(request, skill)
    await diversion.check_sources(conn, request)
    divert = draft_base is not None or diversion.diverted(request, skill)
    if not divert:
        await rootchecks.check_capacity_and_quota(ctx, conn, request, skill, manifest)
    await ctx.hit("publish.checked")

    problem = await db_blobs.confirm(
        conn,
        write_id=write_id,
        uploaded=uploaded,
        referenced=[e.digest for e in manifest.entries],
        now=now,
    )
    if problem is not None:
        raise _BlobsRaced(problem.digests)
    manifest_id = await db.ensure_manifest(conn, scope.workspace, manifest, now)
    if divert:
        assert skill is not None
        proposed = await diversion.propose(
            ctx,
            conn,
            request,
            skill,
            manifest=manifest,
            manifest_id=manifest_id,
            base=skill.head if draft_base is None else draft_base,
            write_id=write_id,
            now=now,
        )
        await db_blobs.release(conn, write_id)
        return _with_uploads(proposed, manifest, uploaded)
    publication = await _append_version(
        ctx,
        conn,
        request,
        skill,
        manifest=manifest,
        manifest_id=manifest_id,
        decided=decided,
        write_id=write_id,
        now=now,
    )
    await db_blobs.release(conn, write_id)
    return _with_uploads(publication, manifest, uploaded)


def _with_uploads(
    publication: Publication, manifest: Manifest, uploaded: frozenset[str]
) -> Publication:
    return replace(
        publication,
        uploaded=len(uploaded),
        uploaded_bytes=sum(e.size for e in manifest.entries if e.digest in uploaded),
    )


async def _append_version(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db.SkillRow | None,
    *,
    manifest: Manifest,
    manifest_id: int,
    decided: db_proposals.ProposalRow | None,
    write_id: str,
    now: datetime,
) -> Publication:
    """Insert the version, move the head (compare-and-swap) and write the event."""
    scope = request.scope
    if skill is None:
        skill_id = await db.insert_skill(
            conn,
            scope,
            request.slug,
            kind=request.kind,
            size=manifest.total_size,
            now=now,
            baseline=request.baseline,
            auto_improve=bool(request.skill_changes.get("auto_improve", True)),
        )
        number, parent = 1, None
    else:
        skill_id, number, parent = skill.id, skill.head + 1, skill.head
    version_id = await db.insert_version(
        conn,
        skill_id,
        scope.workspace,
        number=number,
        parent=parent,
        origin=request.origin.value,
        actor=request.actor,
        message=request.message,
        restored_from=request.restored_from,
        manifest_id=manifest_id,
        manifest=manifest,
        sources=request.sources,
        write_id=write_id,
        now=now,
    )
    await db_approvals.replace(
        conn,
        scope.workspace,
        version_id,
        request.approvals,
        actor=request.actor,
        now=now,
        fresh=True,
    )
    await ctx.hit("publish.version_rows")
    staled: list[int] = []
    if skill is not None:
        changes = dict(request.skill_changes)
        # A decided marketplace proposal moves the copy's baseline as its update would have.
        baseline = request.baseline or (None if decided is None else decided.baseline_tuple)
        if baseline is not None:
            listing, listing_version, listing_hash = baseline
            changes |= {
                "baseline_listing": listing,
                "baseline_version": listing_version,
                "baseline_manifest_hash": listing_hash,
            }
        await db.move_head(
            conn, skill, new_head=number, size=manifest.total_size, now=now, **changes
        )
        staled = await diversion.head_moved(
            conn, request, skill, decided=decided, number=number, now=now
        )
    await ctx.hit("publish.head_moved")
    await db.insert_event(
        conn,
        scope,
        request.slug,
        skill_id=skill_id,
        kind=diversion.event_kind(request),
        version=number,
        manifest_hash=manifest.hash,
        payload={
            "origin": request.origin.value,
            "actor": request.actor,
            "parent": parent,
            "restored_from": request.restored_from,
            "files": manifest.file_count,
            "bytes": manifest.total_size,
            "proposal": None if request.decides is None else request.decides.proposal,
            "decided_by": None if request.decides is None else request.decides.actor,
            "repair": request.repair,
            "staled_proposals": staled,
        },
        now=now,
    )
    return Publication(
        version=number,
        manifest_hash=manifest.hash,
        created=True,
        retired=parent,
        unchanged=False,
        committed_at=now,
    )


async def _settle(
    ctx: Context, request: WriteRequest, write_id: str, *, look: bool
) -> Publication | None:
    """After a failure: release the claims and, if `look`, find what it committed, if anything.

    Releasing is safe either way (a committed write already dropped its claims in its own
    transaction) and never deletes a blob.
    """
    workspace = request.scope.workspace

    async def find(conn: AsyncConnection) -> Publication | None:
        created = await db.version_by_write(conn, workspace, write_id)
        if created is not None:
            return Publication(
                version=created.number,
                manifest_hash=created.manifest_hash,
                created=True,
                retired=created.parent,
                unchanged=False,
                committed_at=created.created_at,
            )
        proposed = await db_proposals.by_write(conn, workspace, write_id)
        if proposed is None:
            return None
        skill = await db.skill_by_id(conn, workspace, proposed.skill_id)
        assert skill is not None
        return Publication(
            version=skill.head,
            manifest_hash=proposed.manifest_hash,
            created=False,
            retired=None,
            unchanged=False,
            committed_at=proposed.created_at,
            proposal=proposed.id,
        )

    async def release(conn: AsyncConnection) -> int:
        return await db_blobs.release(conn, write_id)

    found = None
    if look:
        try:
            found = await ctx.read(find)
        except RegistryError:
            found = None
    # If the database is unreachable the claims expire after `claim_ttl`, and GC reclaims
    # the blobs after its grace period (invariant I4).
    with contextlib.suppress(RegistryError):
        await ctx.write(release, workspace=workspace)
    return found
