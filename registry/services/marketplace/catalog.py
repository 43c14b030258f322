"""The catalog: listings are skills of one scope, published through the normal write path.

A listing id is a slug in the catalog scope (`Scope(settings.catalog_workspace)`, agent
`personal`; the publisher is the version's actor). A listing version is that skill's
version, and its manifest hash is the version's identity: what an installed copy records
as its baseline. Publishing a folder or importing an archive is an ordinary package write
(validation, content check, blobs first, one locked transaction, one outbox event).

Archives are read by the pure `registry.domain.archive` reader, in memory; the archive
file itself is bounded before it is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from registry.db import revocations as db_revocations
from registry.domain.approvals import Approval, FindingRef
from registry.domain.archive import RULE_TOO_LARGE, ArchiveLimits, EntryCallback, read_archive
from registry.domain.manifest import Manifest
from registry.domain.model import ANY, ExpectedHead, FileInput, Origin, Publication, Scope
from registry.errors import (
    ArchiveRejected,
    ListingNotFound,
    SkillNotFound,
    VersionNotFound,
    VersionRevoked,
)
from registry.services import read
from registry.services.context import Context, offloaded
from registry.services.materialize.folder import read_folder
from registry.services.write import content, publish
from registry.services.write.request import WriteRequest


def catalog_scope(ctx: Context) -> Scope:
    """The scope listings are published into."""
    return Scope(ctx.settings.catalog_workspace)


def archive_limits(ctx: Context) -> ArchiveLimits:
    settings = ctx.settings
    return ArchiveLimits(
        max_entries=settings.archive_max_entries,
        max_bytes=settings.archive_max_bytes,
        max_ratio=settings.archive_max_ratio,
    )


@dataclass(frozen=True)
class ListingVersion:
    """One version of a listing: its number, manifest and who published it."""

    listing: str
    version: int
    head: int
    manifest: Manifest
    origin: str
    actor: str
    message: str
    created_at: datetime

    @property
    def manifest_hash(self) -> str:
        return self.manifest.hash


@dataclass(frozen=True)
class ImportResult:
    """What an import published, and what it read: `format` is zip, tar.gz, tar or folder."""

    listing: str
    publication: Publication
    format: str
    files: int
    stripped: str | None


async def publish_listing(
    ctx: Context,
    listing: str,
    files: Mapping[str, FileInput],
    *,
    actor: str,
    message: str = "",
    origin: Origin = Origin.EDIT,
    expected_head: ExpectedHead = ANY,
    sources: Sequence[str] = (),
    approve: Sequence[FindingRef] = (),
) -> Publication:
    """Publish `files` as the next version of `listing` (a normal package write).

    `approve` names content-check findings the publisher approves (docs/history.md); the
    approvals travel with the listing version into installed copies.
    """
    request = WriteRequest(
        scope=catalog_scope(ctx),
        slug=listing,
        expected_head=expected_head,
        origin=origin,
        actor=actor,
        message=message,
        sources=sources,
        approve=approve,
    )
    return await publish.write_package(ctx, request, files)


async def import_archive(
    ctx: Context,
    listing: str,
    data: bytes,
    *,
    actor: str,
    message: str = "",
    expected_head: ExpectedHead = ANY,
    on_entry: EntryCallback | None = None,
) -> ImportResult:
    """Read the archive `data` safely and publish it as the next version of `listing`.

    `expected_head` is the compare-and-swap of any write (`ANY`: whatever the head is).
    """
    limits = archive_limits(ctx)
    contents = await offloaded(len(data), read_archive, data, limits, on_entry=on_entry)
    publication = await publish_listing(
        ctx,
        listing,
        contents.files,
        actor=actor,
        message=message,
        origin=Origin.IMPORT,
        expected_head=expected_head,
    )
    return ImportResult(
        listing, publication, contents.format, len(contents.files), contents.stripped
    )


def max_archive_file(ctx: Context) -> int:
    """The largest archive file read at all: twice the expanded bound (headers, padding)."""
    return 2 * ctx.settings.archive_max_bytes


async def import_path(
    ctx: Context,
    listing: str,
    path: Path,
    *,
    actor: str,
    message: str = "",
    expected_head: ExpectedHead = ANY,
    on_entry: EntryCallback | None = None,
) -> ImportResult:
    """Import a `.zip`, `.tar.gz` or `.tar` file, or a plain skill folder, as `listing`."""
    if await asyncio.to_thread(path.is_dir):
        files = await asyncio.to_thread(read_folder, path, limits=ctx.settings.limits())
        if on_entry is not None:
            for name in files:
                on_entry(name)
        publication = await publish_listing(
            ctx,
            listing,
            files,
            actor=actor,
            message=message,
            origin=Origin.IMPORT,
            expected_head=expected_head,
        )
        return ImportResult(listing, publication, "folder", len(files), None)
    data = await asyncio.to_thread(_read_bounded, path, max_archive_file(ctx))
    return await import_archive(
        ctx,
        listing,
        data,
        actor=actor,
        message=message,
        expected_head=expected_head,
        on_entry=on_entry,
    )


def _read_bounded(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ArchiveRejected("", RULE_TOO_LARGE, f"the archive file is over {limit} bytes")
    return data


async def listing_version(
    ctx: Context, listing: str, version: int | None = None, *, for_use: bool = False
) -> ListingVersion:
    """A listing's version (its newest if `version` is None), with its manifest.

    `for_use` (an install or an update): a revoked version is refused with
    `VersionRevoked` (docs/revocation.md); it is still shown to readers.
    """
    scope = catalog_scope(ctx)
    try:
        info = await read.package_info(ctx, scope, listing, version)
    except SkillNotFound:
        raise ListingNotFound(listing) from None
    except VersionNotFound:
        raise ListingNotFound(listing, version) from None
    if for_use:
        revoked = await ctx.read(
            lambda conn: db_revocations.of_version(
                conn, scope.workspace, info.skill_id, info.version
            )
        )
        if revoked is not None:
            raise VersionRevoked(listing, info.version, revoked.kind, revoked.reason)
    return ListingVersion(
        listing=listing,
        version=info.version,
        head=info.head,
        manifest=info.manifest,
        origin=info.origin,
        actor=info.actor,
        message=info.message,
        created_at=info.created_at,
    )


async def read_listing(ctx: Context, listing: str, version: int | None = None) -> read.Package:
    """Every file of a listing's version (its newest if `version` is None), verified."""
    try:
        return await read.read_package(ctx, catalog_scope(ctx), listing, version)
    except SkillNotFound:
        raise ListingNotFound(listing) from None
    except VersionNotFound:
        raise ListingNotFound(listing, version) from None


async def listing_approvals(ctx: Context, listing: str, version: int) -> tuple[Approval, ...]:
    """The content-check approvals stored with a listing version."""
    return await content.approvals_of(ctx, catalog_scope(ctx), listing, version)


async def list_listings(
    ctx: Context, *, limit: int = 50, after: str | None = None
) -> read.SkillPage:
    """The catalog's listings, by id, a page at a time."""
    return await read.list_skills(ctx, catalog_scope(ctx), limit=limit, after=after)
