"""The artifacts a discovery index names: a version's zip, and each of its files.

Both are immutable: a version's files never change, and the zip is a function of them
(registry/domain/ziparchive.py). They are served for any version of a skill the scope
publishes while that skill is in use, so a client holding an older index still gets the
bytes its digest names, and nothing of a skill that is not published (or is deleted, or
paused) is served.

An archive is checked against its cached digest before it is served: bytes that hash to
anything other than what an index said are an `Inconsistency`, never served.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import discovery as db_discovery
from registry.db import exclusions as db_exclusions
from registry.db import skills as db_skills
from registry.domain import discovery
from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import Scope
from registry.domain.numbers import MAX_VERSION, names_row
from registry.errors import Inconsistency, NotFound, VersionNotFound, VersionUnavailable
from registry.services import read
from registry.services.context import Context
from registry.services.discovery.index import (
    artifact_of,
    artifact_row,
    enabled_settings,
    refuse_revoked,
    remember,
)
from registry.services.discovery.settings import DiscoverySettings

ZIP_MEDIA_TYPE: Final = "application/zip"
MARKDOWN_MEDIA_TYPE: Final = "text/markdown; charset=utf-8"
# Anything but Markdown is served as bytes: a package may hold HTML or SVG, which a
# browser must not render as a page of the registry's origin.
BYTES_MEDIA_TYPE: Final = "application/octet-stream"


@dataclass(frozen=True)
class Artifact:
    """An artifact of a published version; `data` is None when it was not asked for.

    `digest` names the bytes (the SHA-256 of a zip; the BLAKE3 of a file, as its blob is
    stored) without reading them; `sha256` is known when `data` is, and for a cached zip.
    """

    settings: DiscoverySettings
    slug: str
    skill_id: int
    version: int
    manifest_hash: str
    media_type: str
    digest: str
    size: int
    sha256: str | None = None
    data: bytes | None = None


async def _locate(
    conn: AsyncConnection, scope: Scope, slug: str, version: int
) -> tuple[DiscoverySettings, db_discovery.HeadRow]:
    stored = names_row("version", version, MAX_VERSION)
    settings = await enabled_settings(conn, scope)
    head = None
    if stored:
        head = await db_discovery.published_version(
            conn, scope, slug, version, everything=settings.everything
        )
    if head is None:
        raise VersionNotFound(slug, version)
    excluded = await db_exclusions.unavailable(conn, scope.workspace, [head.version_id])
    if head.version_id in excluded:
        raise VersionUnavailable(slug, version, excluded[head.version_id])
    await refuse_revoked(conn, scope, slug, head.skill_id, head.version)
    return settings, head


async def archive(
    ctx: Context, scope: Scope, slug: str, version: int, *, data: bool = True
) -> Artifact:
    """The zip of a published version (its digest alone when `data` is False and cached)."""
    zip_format = discovery.FORMATS[discovery.ARCHIVE_TYPE]

    async def work(
        conn: AsyncConnection,
    ) -> tuple[DiscoverySettings, db_discovery.HeadRow, db_discovery.ArtifactRow | None]:
        settings, head = await _locate(conn, scope, slug, version)
        cached = await db_discovery.artifacts(conn, [(head.manifest_hash, zip_format)])
        return settings, head, cached.get((head.manifest_hash, zip_format))

    settings, head, cached = await ctx.read(work)

    def artifact(sha256: str, size: int, body: bytes | None) -> Artifact:
        return Artifact(
            settings=settings,
            slug=slug,
            skill_id=head.skill_id,
            version=head.version,
            manifest_hash=head.manifest_hash,
            media_type=ZIP_MEDIA_TYPE,
            digest=sha256,
            size=size,
            sha256=sha256,
            data=body,
        )

    if not data:
        if cached is None:
            cached = await artifact_of(ctx, scope, head, discovery.ARCHIVE_TYPE)
        return artifact(cached.sha256, cached.size, None)
    manifest = await ctx.read(
        lambda conn: db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
    )
    built, body = artifact_row(head, discovery.ARCHIVE_TYPE, await read.read_files(ctx, manifest))
    if cached is None:
        await remember(ctx, built)
    elif cached.sha256 != built.sha256:
        msg = (
            f"the archive of {slug} version {version} hashes to {built.sha256}, "
            f"but its recorded digest is {cached.sha256}"
        )
        raise Inconsistency(msg)
    return artifact(built.sha256, built.size, body)


def _media_type(path: str) -> str:
    return MARKDOWN_MEDIA_TYPE if path.lower().endswith(".md") else BYTES_MEDIA_TYPE


async def file(
    ctx: Context, scope: Scope, slug: str, version: int, path: str, *, data: bool = True
) -> Artifact:
    """One file of a published version, by its path in the package."""
    wanted = unicodedata.normalize("NFC", path)

    async def work(
        conn: AsyncConnection,
    ) -> tuple[DiscoverySettings, db_discovery.HeadRow, ManifestEntry]:
        settings, head = await _locate(conn, scope, slug, version)
        manifest = await db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
        entry = next((e for e in manifest.entries if e.path == wanted), None)
        if entry is None:
            msg = f"version {version} of {slug!r} has no file {path!r}"
            raise NotFound(msg)
        return settings, head, entry

    settings, head, entry = await ctx.read(work)
    body = None
    if data:
        body = (await read.read_files(ctx, Manifest([entry])))[entry.path].data
    return Artifact(
        settings=settings,
        slug=slug,
        skill_id=head.skill_id,
        version=head.version,
        manifest_hash=head.manifest_hash,
        media_type=_media_type(entry.path),
        digest=entry.digest,
        size=entry.size,
        sha256=None if body is None else discovery.sha256_hex(body),
        data=body,
    )
