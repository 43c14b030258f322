"""What a scope publishes for discovery, changed by its owner under the workspace lock.

A scope publishes nothing until its owner says so. The owner publishes every skill of the
scope (`everything`) or skills one by one, and decides whether the index and its
artifacts are `public` (served without a token) or need a `read` token of the workspace.
Each change increments the settings' `revision` (their entity tag, for a compare-and-swap
like a skill's head) and writes one outbox event, `discovery_changed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import discovery as db_discovery
from registry.db import skills as db_skills
from registry.domain.arguments import check_text
from registry.domain.model import ANY, ExpectedHead, Scope, check_slug
from registry.errors import HeadConflict, SkillNotFound
from registry.services.context import Context

EVENT_KIND = "discovery_changed"


@dataclass(frozen=True)
class DiscoverySettings:
    """A scope's discovery settings. `revision` 0: its owner never configured discovery."""

    scope: Scope
    everything: bool
    public: bool
    revision: int
    skills: tuple[str, ...]
    updated_at: datetime | None
    updated_by: str | None

    @property
    def enabled(self) -> bool:
        """Whether the scope serves an index at all."""
        return self.revision > 0


def _settings(
    scope: Scope, row: db_discovery.SettingsRow | None, skills: Iterable[str]
) -> DiscoverySettings:
    if row is None:
        return DiscoverySettings(
            scope,
            everything=False,
            public=False,
            revision=0,
            skills=tuple(sorted(skills)),
            updated_at=None,
            updated_by=None,
        )
    return DiscoverySettings(
        scope,
        row.everything,
        row.public,
        row.revision,
        tuple(sorted(skills)),
        row.updated_at,
        row.updated_by,
    )


async def read_settings(conn: AsyncConnection, scope: Scope) -> DiscoverySettings:
    """The settings of `scope` in the caller's transaction."""
    row = await db_discovery.settings(conn, scope)
    published = await db_discovery.published_one_by_one(conn, scope)
    return _settings(scope, row, published.values())


async def get_settings(ctx: Context, scope: Scope) -> DiscoverySettings:
    """The settings of `scope` (revision 0 if never configured)."""
    return await ctx.read(lambda conn: read_settings(conn, scope))


def _check_expected(expected: ExpectedHead, revision: int) -> None:
    if expected is ANY:
        return
    current = revision or None
    if expected != current:
        raise HeadConflict(expected if isinstance(expected, int) else None, current)


async def _ids(conn: AsyncConnection, scope: Scope, slugs: Iterable[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for slug in sorted(set(slugs)):
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        found[slug] = skill.id
    return found


async def update_settings(
    ctx: Context,
    scope: Scope,
    *,
    actor: str,
    everything: bool | None = None,
    public: bool | None = None,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    skills: Sequence[str] | None = None,
    expected_revision: ExpectedHead = ANY,
) -> DiscoverySettings:
    """Change what `scope` publishes; unchanged arguments keep their current value.

    `add` and `remove` publish and unpublish skills by slug; `skills` replaces the list.
    `expected_revision`: None, the scope must not be configured yet; an int, its
    revision must be this one (`HeadConflict` otherwise); `ANY`, no check. A slug that
    names no live skill of the scope is `SkillNotFound`, and nothing changes. A change
    that changes nothing writes nothing.
    """
    check_text("actor", actor)
    for slug in (*add, *remove, *(skills or ())):
        check_slug(slug)

    async def work(conn: AsyncConnection) -> DiscoverySettings:
        row = await db_discovery.settings(conn, scope)
        revision = 0 if row is None else row.revision
        _check_expected(expected_revision, revision)
        published = await db_discovery.published_one_by_one(conn, scope)
        named = await _ids(conn, scope, [*add, *remove, *(skills or ())])
        wanted = set(published)
        if skills is not None:
            wanted = {named[s] for s in skills}
        wanted = (wanted | {named[s] for s in add}) - {named[s] for s in remove}
        new_everything = (row.everything if row else False) if everything is None else everything
        new_public = (row.public if row else False) if public is None else public
        unchanged = (
            row is not None
            and wanted == set(published)
            and (new_everything, new_public) == (row.everything, row.public)
        )
        if unchanged:
            return _settings(scope, row, published.values())
        now = ctx.clock.now()
        await db_discovery.save_settings(
            conn,
            scope,
            everything=new_everything,
            public=new_public,
            revision=revision + 1,
            actor=actor,
            now=now,
        )
        await db_discovery.set_published(
            conn, scope, add=wanted - set(published), remove=set(published) - wanted, now=now
        )
        after = await read_settings(conn, scope)
        await db_skills.insert_event(
            conn,
            scope,
            "",
            skill_id=None,
            kind=EVENT_KIND,
            version=None,
            manifest_hash=None,
            payload={
                "actor": actor,
                "revision": after.revision,
                "everything": after.everything,
                "public": after.public,
                "skills": list(after.skills),
            },
            now=now,
        )
        return after

    return await ctx.locked(scope.workspace, work)
