"""The older discovery layout: `/.well-known/skills/index.json` and each skill's files.

Clients written before schema 0.2.0 (and today's, as a fallback) read an index without
`$schema` whose entries list their files, then fetch each file at
`<base>/.well-known/skills/<name>/<path>`: a URL with no version in it, so it serves the
file of the version the index lists now. The skills and the access rules are the 0.2.0
index's (`build_index`): the same published state, one entry per listed skill. A skill
the older client would refuse (a path it thinks unsafe) is left out, since one refused
entry makes it drop the whole index.

Every file is served through `artifacts.file`, addressed by skill and version like the
0.2.0 artifacts, so what applies to a version's artifacts applies here. The layout has
no digest: a client that reads the index, then the files while a new version is
published, can get files of two versions. Clients read the 0.2.0 index first.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import discovery as db_discovery
from registry.db import skills as db_skills
from registry.domain import discovery
from registry.domain.model import Scope
from registry.errors import NotFound
from registry.services.context import Context
from registry.services.discovery import artifacts
from registry.services.discovery.artifacts import Artifact
from registry.services.discovery.index import IndexEntry, build_index
from registry.services.discovery.settings import DiscoverySettings


@dataclass(frozen=True)
class LegacyIndex:
    """The older index of a scope: each listed skill with its files' paths."""

    settings: DiscoverySettings
    items: tuple[discovery.LegacyItem, ...]


async def legacy_index(ctx: Context, scope: Scope) -> LegacyIndex:
    """The older index of `scope` (`NotFound` if it publishes nothing)."""
    index = await build_index(ctx, scope)

    async def work(conn: AsyncConnection) -> list[discovery.LegacyItem]:
        items = []
        for entry in index.entries:
            head = await db_discovery.published_version(
                conn, scope, entry.slug, entry.version, everything=index.settings.everything
            )
            if head is None:
                continue  # unpublished since the index was read
            manifest = await db_skills.manifest_entries(conn, scope.workspace, head.manifest_id)
            paths = tuple(e.path for e in manifest.entries)
            if discovery.legacy_listable(paths):
                items.append(discovery.LegacyItem(entry.slug, entry.description, paths))
        return items

    return LegacyIndex(index.settings, tuple(await ctx.read(work)))


async def _listed(ctx: Context, scope: Scope, slug: str) -> IndexEntry:
    index = await build_index(ctx, scope)
    found = next((e for e in index.entries if e.slug == slug), None)
    if found is None:
        msg = f"{scope.workspace}/{scope.agent} lists no skill {slug!r}"
        raise NotFound(msg)
    return found


async def legacy_file(
    ctx: Context, scope: Scope, slug: str, path: str, *, data: bool = True
) -> Artifact:
    """A file of the version of `slug` the index lists now."""
    entry = await _listed(ctx, scope, slug)
    return await artifacts.file(ctx, scope, slug, entry.version, path, data=data)
