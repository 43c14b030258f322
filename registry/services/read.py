"""Reads: a package at the head or a pinned version (digests verified), and skill listings.

Reads and listings carry each version's discovery triggers (`metadata.triggers` of its
`SKILL.md`, docs/package-format.md), taken from the SKILL.md index; a `SKILL.md` stored
before the index existed is read from the blob store and parsed instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobCorrupted, BlobNotFound, BlobStoreError
from registry.db import documents as db_documents
from registry.db import exclusions as db_exclusions
from registry.db import skills as db_skills
from registry.domain.arguments import check_optional_text
from registry.domain.frontmatter import parse_skill_md
from registry.domain.manifest import Manifest
from registry.domain.model import ArchivedVersion, PackageFile, Scope, check_slug
from registry.domain.numbers import MAX_ID, MAX_VERSION, names_row
from registry.errors import (
    ArchivedSkillAmbiguous,
    ArchivedSkillNotFound,
    Inconsistency,
    RegistryError,
    SkillNotFound,
    VersionNotFound,
    VersionUnavailable,
)
from registry.services.context import Context, blob_store_failed

_READ_CONCURRENCY: Final = 16
MAX_PAGE: Final = 500


@dataclass(frozen=True)
class PackageInfo:
    """A version's identity and metadata, without its bytes."""

    scope: Scope
    slug: str
    version: int
    head: int
    manifest: Manifest
    origin: str
    actor: str
    message: str
    created_at: datetime
    # The skill row's id: a deleted and re-created skill of the same slug gets a new one,
    # so entity tags built from it (registry/http) cannot confuse the two.
    skill_id: int
    triggers: tuple[str, ...]
    # True for a version of a deleted skill (`ArchivedVersion`); `head` is then the
    # deleted skill's last version.
    archived: bool

    @property
    def manifest_hash(self) -> str:
        return self.manifest.hash


@dataclass(frozen=True)
class Package(PackageInfo):
    """A whole package: metadata and every file's bytes, verified against its digest."""

    files: dict[str, PackageFile]


@dataclass(frozen=True)
class SkillSummary:
    """One line of a skill listing."""

    slug: str
    head: int
    manifest_hash: str
    file_count: int
    total_size: int
    kind: str
    state: str
    auto_improve: bool
    learning_paused: bool
    use_paused: bool
    updated_at: datetime
    skill_id: int
    triggers: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkillPage:
    """A page of a listing; pass `next_after` back as `after` for the next page."""

    items: list[SkillSummary]
    next_after: str | None


VersionRef = int | ArchivedVersion | None
"""A version of the live skill (None: its head), or of a deleted one (`ArchivedVersion`)."""


async def archived_skill(
    conn: AsyncConnection, scope: Scope, slug: str, skill_id: int | None
) -> db_skills.SkillRow:
    """The deleted skill of `slug` with `skill_id`, or the slug's only deleted skill.

    `ArchivedSkillNotFound` if there is none (an id that is live, another slug's or another
    scope's included); `ArchivedSkillAmbiguous`, listing them, if `skill_id` is None and
    several deleted skills had the slug.
    """
    if skill_id is not None and not names_row("skill_id", skill_id, MAX_ID):
        raise ArchivedSkillNotFound(scope.workspace, scope.agent, slug, skill_id)
    found = await db_skills.deleted_skills(conn, scope, slug, skill_id=skill_id)
    if not found:
        raise ArchivedSkillNotFound(scope.workspace, scope.agent, slug, skill_id)
    if len(found) > 1:
        candidates: list[dict[str, object]] = [
            {
                "skill_id": s.id,
                "head": s.head,
                "deleted_at": None if s.deleted_at is None else s.deleted_at.isoformat(),
            }
            for s in found
        ]
        raise ArchivedSkillAmbiguous(slug, candidates)
    return found[0]


async def locate(
    conn: AsyncConnection, scope: Scope, slug: str, version: VersionRef
) -> tuple[db_skills.SkillRow, db_skills.VersionRow]:
    """The live skill and the requested version (the head if `version` is None).

    An `ArchivedVersion` names a version of a deleted skill instead (`archived_skill`).

    A version that lists a source excluded from the workspace is unavailable: reading or
    restoring it raises `VersionUnavailable` (docs/history.md). A number no version has
    (below 1, above `MAX_VERSION`) is `VersionNotFound` without a query; one that is not
    an int is `ArgumentInvalid`, before any.
    """
    check_slug(slug)
    if isinstance(version, ArchivedVersion):
        skill = await archived_skill(conn, scope, slug, version.skill_id)
        version = version.number
    else:
        found = await db_skills.live_skill(conn, scope, slug)
        if found is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        skill = found
    stored = version is None or names_row("version", version, MAX_VERSION)
    number = skill.head if version is None else version
    row = await db_skills.version(conn, skill, number) if stored else None
    if row is None:
        raise VersionNotFound(slug, number)
    excluded = await db_exclusions.unavailable(conn, scope.workspace, [row.id])
    if row.id in excluded:
        raise VersionUnavailable(slug, number, excluded[row.id])
    return skill, row


async def package_info(
    ctx: Context, scope: Scope, slug: str, version: VersionRef = None
) -> PackageInfo:
    """The manifest and metadata of a version, without reading any blob."""

    async def work(conn: AsyncConnection) -> PackageInfo:
        skill, row = await locate(conn, scope, slug, version)
        await ctx.hit("read.located")
        manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
        indexed = await db_documents.skill_md_of(conn, scope.workspace, [manifest.hash])
        return PackageInfo(
            scope=scope,
            slug=slug,
            version=row.number,
            head=skill.head,
            manifest=manifest,
            origin=row.origin,
            actor=row.actor,
            message=row.message,
            created_at=row.created_at,
            skill_id=skill.id,
            triggers=_indexed_triggers(indexed, manifest.hash),
            archived=skill.state == "deleted",
        )

    info = await ctx.read(work)
    if info.triggers == _UNINDEXED:
        found = await triggers_of(ctx, scope.workspace, {info.manifest.hash: slug})
        info = replace(info, triggers=found.get(info.manifest.hash, ()))
    return info


_UNINDEXED: Final = ("\x00unindexed",)
"""Stands for triggers the index does not hold (never a real phrase: phrases hold no NUL)."""


def _indexed_triggers(
    indexed: dict[str, tuple[str, list[str] | None]], manifest_hash: str
) -> tuple[str, ...]:
    found = indexed.get(manifest_hash)
    if found is None or found[1] is None:
        return _UNINDEXED
    return tuple(found[1])


async def triggers_of(
    ctx: Context, workspace: str, slugs: dict[str, str]
) -> dict[str, tuple[str, ...]]:
    """The triggers of each manifest (hash -> its skill's slug), from the index or the blob."""

    async def work(conn: AsyncConnection) -> dict[str, tuple[str, list[str] | None]]:
        return await db_documents.skill_md_of(conn, workspace, slugs)

    indexed = await ctx.read(work)
    out: dict[str, tuple[str, ...]] = {}
    for manifest_hash, slug in slugs.items():
        found = indexed.get(manifest_hash)
        if found is None:
            out[manifest_hash] = ()
        elif found[1] is not None:
            out[manifest_hash] = tuple(found[1])
        else:
            out[manifest_hash] = await _parsed_triggers(ctx, found[0], slug)
    return out


async def _parsed_triggers(ctx: Context, digest: str, slug: str) -> tuple[str, ...]:
    try:
        data = await ctx.blobs.get(digest)
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    try:
        return parse_skill_md(data, slug).triggers
    except RegistryError:
        return ()  # stored under older rules: it names no triggers the registry can read


Vanished = Callable[[], Awaitable[None]]
"""What a caller checks when a blob it read is not found, in a snapshot of its own.

The blobs of a version read from one snapshot are held by nothing once it ends: retention
may prune the version and GC delete its blobs before they are read. Such a callback
raises the error that says so (`VersionNotFound`, `HeadConflict`) if the version or head
is gone; if it returns, the version is still there and the missing blob is damage.
"""


async def read_files(
    ctx: Context, manifest: Manifest, *, vanished: Vanished | None = None
) -> dict[str, PackageFile]:
    """Fetch every file of `manifest` from the blob store, verified, in parallel.

    A blob not found is `Inconsistency`, unless `vanished` finds that what referenced it
    is gone (see `Vanished`), and raises that instead.
    """
    gate = asyncio.Semaphore(_READ_CONCURRENCY)
    digests = sorted({e.digest for e in manifest.entries})

    async def fetch(digest: str) -> tuple[str, bytes]:
        async with gate:
            return digest, await ctx.blobs.get(digest)

    try:
        fetched = dict(await asyncio.gather(*(fetch(d) for d in digests)))
    except BlobNotFound as exc:
        if vanished is not None:
            await vanished()
        raise Inconsistency(f"a referenced blob is unreadable: {exc}") from exc
    except BlobCorrupted as exc:
        raise Inconsistency(f"a referenced blob is unreadable: {exc}") from exc
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    return {e.path: PackageFile(fetched[e.digest], e.executable) for e in manifest.entries}


async def read_package(
    ctx: Context, scope: Scope, slug: str, version: VersionRef = None
) -> Package:
    """The package at the head, or at a pinned version, with every digest verified."""
    info = await package_info(ctx, scope, slug, version)
    files = await read_files(ctx, info.manifest)
    return Package(**{f: getattr(info, f) for f in info.__dataclass_fields__}, files=files)


async def list_skills(
    ctx: Context, scope: Scope, *, limit: int = 50, after: str | None = None
) -> SkillPage:
    """The live skills of `scope`, ordered by slug, one keyset page at a time."""
    check_optional_text("after", after)
    limit = max(1, min(limit, MAX_PAGE))

    async def work(conn: AsyncConnection) -> SkillPage:
        rows = await db_skills.live_skills_page(conn, scope, limit=limit + 1, after=after)
        items = [SkillSummary(**row) for row in rows[:limit]]
        next_after = items[-1].slug if len(rows) > limit else None
        return SkillPage(items, next_after)

    page = await ctx.read(work)
    found = await triggers_of(ctx, scope.workspace, {i.manifest_hash: i.slug for i in page.items})
    items = [replace(i, triggers=found.get(i.manifest_hash, ())) for i in page.items]
    return SkillPage(items, page.next_after)


async def list_agents(ctx: Context, workspace: str) -> list[str]:
    """The agents of `workspace` with at least one live skill, by name."""

    async def work(conn: AsyncConnection) -> list[str]:
        return await db_skills.agents(conn, workspace)

    return await ctx.read(work)
