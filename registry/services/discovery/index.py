"""The discovery index of a scope: its published skills in use, each with its artifact.

The index lists the head of every published skill that a reconcile would materialise
(state active, use not paused, the head readable: no excluded source, not revoked), and
that a client would accept (registry/domain/discovery.py, `unlistable`). Each entry names
its version and carries the SHA-256 and size of its artifact and the description in its
`SKILL.md`.

Those three are functions of the package state, cached per manifest hash and artifact
format (`discovery_artifacts`): an index whose entries are all cached is served from two
read queries without reading a blob. A state seen for the first time is read from the
blob store (digests verified), its artifact built and hashed, and the result cached;
this happens at most once per state, whichever process gets there first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import discovery as db_discovery
from registry.db import exclusions as db_exclusions
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain import discovery
from registry.domain.discovery import ArtifactType
from registry.domain.model import PackageFile, Scope
from registry.errors import NotFound, VersionRevoked
from registry.services import read
from registry.services.context import Context
from registry.services.discovery.settings import DiscoverySettings, read_settings

# Packages read at once to fill the cache (each read fetches its own blobs in parallel).
_BUILD_CONCURRENCY: Final = 4

_log = logging.getLogger("registry.discovery")


@dataclass(frozen=True)
class IndexEntry:
    """One skill of the index: the version it names and that version's artifact."""

    slug: str
    skill_id: int
    version: int
    manifest_hash: str
    type: ArtifactType
    description: str
    sha256: str
    size: int


@dataclass(frozen=True)
class DiscoveryIndex:
    """A scope's index: its settings and its entries, by slug."""

    settings: DiscoverySettings
    entries: tuple[IndexEntry, ...]


def not_enabled(scope: Scope) -> NotFound:
    """The error for a scope that publishes nothing (it looks like one that does not exist)."""
    return NotFound(f"{scope.workspace}/{scope.agent} publishes no discovery index")


async def enabled_settings(conn: AsyncConnection, scope: Scope) -> DiscoverySettings:
    """The settings of a scope that serves an index, or `NotFound`."""
    settings = await read_settings(conn, scope)
    if not settings.enabled:
        raise not_enabled(scope)
    return settings


def artifact_row(
    head: db_discovery.HeadRow, kind: ArtifactType, files: Mapping[str, PackageFile]
) -> tuple[db_discovery.ArtifactRow, bytes]:
    """The artifact of `kind` built from a version's files, and what the cache keeps of it."""
    data = discovery.artifact_bytes(kind, files)
    row = db_discovery.ArtifactRow(
        manifest_hash=head.manifest_hash,
        format=discovery.FORMATS[kind],
        sha256=discovery.sha256_hex(data),
        size=len(data),
        description=discovery.description_of(head.slug, files[discovery.SKILL_MD].data),
    )
    return row, data


async def remember(ctx: Context, row: db_discovery.ArtifactRow) -> None:
    """Cache an artifact's digest, size and description (idempotent)."""
    now = ctx.clock.now()
    await ctx.write(lambda conn: db_discovery.remember_artifacts(conn, [row], now))


async def artifact_of(
    ctx: Context, scope: Scope, head: db_discovery.HeadRow, kind: ArtifactType
) -> db_discovery.ArtifactRow:
    """Read a version's files, build its artifact of `kind`, and cache what the index needs."""
    manifest = await ctx.read(
        lambda conn: db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
    )
    row, _ = artifact_row(head, kind, await read.read_files(ctx, manifest))
    await remember(ctx, row)
    return row


async def refuse_revoked(
    conn: AsyncConnection, scope: Scope, slug: str, skill_id: int, version: int
) -> None:
    """`VersionRevoked` (HTTP 410 Gone, with its kind and reason) if the version is revoked.

    The one check every discovery URL of a version makes before it serves anything
    (docs/revocation.md): a client holding an older index learns why the bytes are gone.
    """
    found = await db_revocations.of_version(conn, scope.workspace, skill_id, version)
    if found is not None:
        raise VersionRevoked(slug, version, found.kind, found.reason)


Cached = dict[tuple[str, str], db_discovery.ArtifactRow]


async def listing(
    conn: AsyncConnection, scope: Scope
) -> tuple[DiscoverySettings, list[db_discovery.HeadRow], Cached]:
    """The settings, the readable published heads, and their cached artifacts (one read)."""
    settings = await enabled_settings(conn, scope)
    heads = await db_discovery.published_heads(conn, scope, everything=settings.everything)
    unavailable = await db_exclusions.unavailable(
        conn, scope.workspace, [h.version_id for h in heads]
    )
    revoked = await db_revocations.of_skills(conn, scope.workspace, {h.skill_id for h in heads})
    heads = [
        h
        for h in heads
        if h.version_id not in unavailable and (h.skill_id, h.version) not in revoked
    ]
    keys = [(h.manifest_hash, _format(h)) for h in heads]
    return settings, heads, await db_discovery.artifacts(conn, keys)


def uncached(heads: list[db_discovery.HeadRow], cached: Cached) -> list[db_discovery.HeadRow]:
    """The heads whose artifact is not cached yet."""
    return [h for h in heads if (h.manifest_hash, _format(h)) not in cached]


def entries_of(
    scope: Scope, heads: list[db_discovery.HeadRow], cached: Cached
) -> tuple[IndexEntry, ...]:
    """The index entries of `heads`, all cached: those a client would accept."""
    entries = []
    for head in heads:
        found = cached[(head.manifest_hash, _format(head))]
        why = discovery.unlistable(head.slug, head.file_count, head.total_size, found.description)
        if why is not None:
            _log.info("%s/%s: %s is not listed: %s", scope.workspace, scope.agent, head.slug, why)
            continue
        entries.append(
            IndexEntry(
                slug=head.slug,
                skill_id=head.skill_id,
                version=head.version,
                manifest_hash=head.manifest_hash,
                type=discovery.artifact_type(head.file_count),
                description=found.description,
                sha256=found.sha256,
                size=found.size,
            )
        )
    return tuple(entries)


async def fill(ctx: Context, scope: Scope, heads: list[db_discovery.HeadRow]) -> Cached:
    """Build and cache the artifacts of `heads` (reading their blobs), by cache key."""
    gate = asyncio.Semaphore(_BUILD_CONCURRENCY)

    async def one(head: db_discovery.HeadRow) -> db_discovery.ArtifactRow:
        async with gate:
            return await artifact_of(ctx, scope, head, discovery.artifact_type(head.file_count))

    built = await asyncio.gather(*(one(h) for h in heads))
    return {(a.manifest_hash, a.format): a for a in built}


async def build_index(ctx: Context, scope: Scope) -> DiscoveryIndex:
    """The index of `scope` (`NotFound` if the scope publishes nothing)."""
    settings, heads, cached = await ctx.read(lambda conn: listing(conn, scope))
    cached = {**cached, **await fill(ctx, scope, uncached(heads, cached))}
    return DiscoveryIndex(settings, entries_of(scope, heads, cached))


def _format(head: db_discovery.HeadRow) -> str:
    return discovery.FORMATS[discovery.artifact_type(head.file_count)]
