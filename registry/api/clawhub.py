"""`reg.clawhub`: the marketplace catalog as the `clawhub` client sees it (docs/clawhub.md).

The ClawHub-compatible API serves the catalog's listings: a listing is a ClawHub skill, its
versions are the listing's versions (N as `"N.0.0"`, registry/domain/clawhub.py), its owner
is the catalog workspace. Everything here is a read of the catalog or the listing write
path (`publish_listing`): a publish is compare-and-swapped on the head the client's
version was chosen against, content-checked, recorded and signed with the caller's
principal, like every catalog write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from blobstore.digest import compute_digest
from registry.domain import clawhub as mapping
from registry.domain.frontmatter import parse_skill_md
from registry.domain.manifest import Manifest
from registry.domain.model import PackageFile, Publication, Scope
from registry.domain.ziparchive import zip_package
from registry.errors import (
    ArgumentInvalid,
    ListingNotFound,
    RegistryError,
    SkillNotFound,
    VersionNotFound,
    VersionNotNewer,
)
from registry.services import read
from registry.services.context import Context
from registry.services.history import versions as history
from registry.services.marketplace import catalog
from registry.services.search import query as search_query
from registry.services.write import uploads
from registry.services.write.uploads import ManifestFile

# How many versions `resolve` compares a fingerprint with, newest first: each one read
# costs its package's bytes, and a local copy is almost always of a recent version.
RESOLVE_DEPTH: Final = 50
SOURCE_PREFIX: Final = "clawhub:"


@dataclass(frozen=True)
class ClawVersion:
    """A listing version as ClawHub shows it."""

    number: int
    created_at: datetime
    changelog: str

    @property
    def semver(self) -> str:
        return mapping.semver_of(self.number)


@dataclass(frozen=True)
class ClawFile:
    """One file of a version: path, size, SHA-256 and the type shown for it."""

    path: str
    size: int
    sha256: str
    content_type: str


@dataclass(frozen=True)
class ClawSkill:
    """A listing: its slug, the head's description and its newest version."""

    slug: str
    summary: str
    owner: str
    latest: ClawVersion
    created_at: datetime


@dataclass(frozen=True)
class ClawPage:
    items: list[ClawSkill]
    next_cursor: str | None


@dataclass(frozen=True)
class ClawVersionPage:
    items: list[ClawVersion]
    next_cursor: str | None


@dataclass(frozen=True)
class ClawHit:
    slug: str
    summary: str
    version: int
    score: float


@dataclass(frozen=True)
class ClawArchive:
    """A version's reproducible zip (registry/domain/ziparchive.py) and its SHA-256."""

    version: int
    data: bytes
    sha256: str


@dataclass(frozen=True)
class ClawUpload:
    """One file a publish names: its path, the stored blob, the client's SHA-256, size."""

    path: str
    storage_id: str
    sha256: str
    size: int


def _summary(skill_md: bytes, slug: str) -> str:
    try:
        return parse_skill_md(skill_md, slug).description
    except RegistryError:
        return ""


class ClawHub:
    """The catalog through ClawHub's model: `reg.clawhub`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @property
    def owner(self) -> str:
        """The owner handle of every listing: the catalog workspace."""
        return self.ctx.settings.catalog_workspace

    @property
    def scope(self) -> Scope:
        return catalog.catalog_scope(self.ctx)

    async def _skill_md(self, manifest: Manifest, slug: str) -> str:
        entry = manifest.get("SKILL.md")
        if entry is None:
            return ""
        data = await uploads.read_blob(self.ctx, self.scope.workspace, entry.digest)
        return _summary(data, slug)

    async def skill(self, slug: str) -> ClawSkill:
        """A listing's detail (`ListingNotFound` if there is none)."""
        try:
            info = await read.package_info(self.ctx, self.scope, slug)
        except (SkillNotFound, VersionNotFound):
            raise ListingNotFound(slug) from None
        first = await self._oldest(slug)
        return ClawSkill(
            slug=slug,
            summary=await self._skill_md(info.manifest, slug),
            owner=self.owner,
            latest=ClawVersion(info.version, info.created_at, info.message),
            created_at=first or info.created_at,
        )

    async def _oldest(self, slug: str) -> datetime | None:
        before: str | None = None
        oldest: datetime | None = None
        while True:
            page = await history.history(self.ctx, self.scope, slug, limit=500, before=before)
            if page.items:
                oldest = page.items[-1].created_at
            if page.next_before is None:
                return oldest
            before = page.next_before

    async def skills(
        self, *, limit: int = 25, cursor: str | None = None, prefix: str | None = None
    ) -> ClawPage:
        """Listings by slug, a page at a time; with `prefix`, those whose slug starts so."""
        items: list[ClawSkill] = []
        after = cursor
        while len(items) < limit:
            page = await catalog.list_listings(self.ctx, limit=limit, after=after)
            for summary in page.items:
                if prefix and not summary.slug.startswith(prefix):
                    continue
                info = await read.package_info(self.ctx, self.scope, summary.slug)
                items.append(
                    ClawSkill(
                        slug=summary.slug,
                        summary=await self._skill_md(info.manifest, summary.slug),
                        owner=self.owner,
                        latest=ClawVersion(info.version, info.created_at, info.message),
                        created_at=info.created_at,
                    )
                )
                if len(items) == limit:
                    break
            # Slugs come in order: once one sorts past every slug with the prefix, stop.
            last = page.items[-1].slug if page.items else ""
            beyond = prefix is not None and last > prefix and not last.startswith(prefix)
            if page.next_after is None or beyond:
                return ClawPage(items, None)
            after = page.next_after
        return ClawPage(items, items[-1].slug if items else None)

    async def versions(
        self, slug: str, *, limit: int = 25, cursor: str | None = None
    ) -> ClawVersionPage:
        """A listing's versions, newest first."""
        try:
            page = await history.history(self.ctx, self.scope, slug, limit=limit, before=cursor)
        except SkillNotFound:
            raise ListingNotFound(slug) from None
        items = [ClawVersion(v.number, v.created_at, v.message) for v in page.items]
        return ClawVersionPage(items, page.next_before)

    async def version(self, slug: str, number: int) -> tuple[ClawVersion, list[ClawFile]]:
        """One version and its files, each with its SHA-256 (the package is read)."""
        package = await catalog.read_listing(self.ctx, slug, number)
        files = [
            ClawFile(
                path=path,
                size=len(f.data),
                sha256=hashlib.sha256(f.data).hexdigest(),
                content_type=mapping.content_type(path),
            )
            for path, f in package.files.items()
        ]
        return ClawVersion(package.version, package.created_at, package.message), files

    async def file(self, slug: str, number: int | None, path: str) -> bytes:
        """One file of a version (the newest if `number` is None)."""
        info = await catalog.listing_version(self.ctx, slug, number)
        entry = info.manifest.get(path)
        if entry is None:
            raise VersionNotFound(slug, info.version)
        return await uploads.read_blob(self.ctx, self.scope.workspace, entry.digest)

    async def archive(self, slug: str, number: int | None) -> ClawArchive:
        """A version's zip (the newest if `number` is None): the same bytes every time."""
        package = await catalog.read_listing(self.ctx, slug, number)
        data = zip_package(package.files)
        return ClawArchive(package.version, data, hashlib.sha256(data).hexdigest())

    async def resolve(self, slug: str, fingerprint: str) -> tuple[int | None, int | None]:
        """(the version whose fingerprint is `fingerprint`, the newest): None for none.

        Compares with the newest `RESOLVE_DEPTH` versions; an unknown listing is
        `(None, None)`, as ClawHub answers for a slug nobody published.
        """
        try:
            page = await history.history(
                self.ctx, self.scope, slug, limit=RESOLVE_DEPTH, before=None
            )
        except SkillNotFound:
            return None, None
        latest = page.head
        for item in page.items:
            if not item.available:
                continue
            package = await catalog.read_listing(self.ctx, slug, item.number)
            if mapping.package_fingerprint(package.files) == fingerprint:
                return item.number, latest
        return None, latest

    async def search(self, text: str, *, limit: int = 25) -> list[ClawHit]:
        """Full-text search of the listings' heads (docs/search.md), best first."""
        results = await search_query.search(self.ctx, self.scope, text, limit=limit)
        return [ClawHit(h.slug, h.description, h.version, h.score) for h in results.hits]

    async def upload(self, workspace: str, data: bytes, sha256: str) -> str:
        """Store one file of a coming publish; its storage id is its BLAKE3 digest.

        The bytes must have the SHA-256 the client announced (`ArgumentInvalid`), and pass
        the content check (`ContentBlocked`) before anything is stored.
        """
        if hashlib.sha256(data).hexdigest() != sha256.lower():
            raise ArgumentInvalid("sha256", "mismatch", "the bytes do not have this SHA-256")
        digest = compute_digest(data)
        await uploads.upload_blob(self.ctx, workspace, digest, data)
        return digest

    async def publish(
        self,
        workspace: str,
        slug: str,
        semver: str,
        files: Sequence[ClawUpload],
        *,
        changelog: str = "",
    ) -> Publication:
        """Publish uploaded files as the listing's next version, named by `semver`.

        `semver` must be greater than the newest version's `"N.0.0"`
        (`VersionNotNewer`); the version written is N+1, compare-and-swapped on N, so a
        publish that raced another is refused (`HeadConflict`), never stacked on it. The
        requested string is kept as the version's source `clawhub:version:<semver>`.
        """
        requested = mapping.semver_triple(semver)
        if requested is None:
            raise ArgumentInvalid("version", "semver", "a release version: MAJOR.MINOR.PATCH")
        try:
            head: int | None = (await read.package_info(self.ctx, self.scope, slug)).version
        except SkillNotFound:
            head = None
        if head is not None and requested <= (head, 0, 0):
            raise VersionNotNewer(semver, mapping.semver_of(head))
        manifest = [
            ManifestFile(path=f.path, digest=f.storage_id, size=f.size, executable=False)
            for f in files
        ]
        stored = await uploads.uploaded_files(self.ctx, workspace, manifest)
        for f in files:
            if hashlib.sha256(stored[f.path].data).hexdigest() != f.sha256.lower():
                raise ArgumentInvalid("files", "sha256", f"{f.path}: not the bytes uploaded")
        package: dict[str, PackageFile] = dict(stored)
        return await catalog.publish_listing(
            self.ctx,
            slug,
            package,
            actor=self.ctx.principal,
            message=changelog,
            expected_head=head,
            sources=[f"{SOURCE_PREFIX}version:{semver.strip()}"],
        )
