"""The desired state of a target: which package each slug of a scope should have on disk.

By default, the head of every skill of the scope that is in use (state `active`, use not
paused). With a lock file, exactly the pinned versions, each checked against its manifest
hash; a pin that cannot be honoured blocks its slug with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import materializations as db_materializations
from registry.db import skills as db_skills
from registry.domain.manifest import Manifest
from registry.domain.model import Scope
from registry.errors import Inconsistency, LockMismatch, NotInUse, RegistryError, SkillNotFound
from registry.services import read
from registry.services.context import Context
from registry.services.materialize.lockfile import LockFile


@dataclass(frozen=True)
class Want:
    """The package one slug should have: a version and its manifest (loaded on demand)."""

    skill_id: int | None
    version: int
    manifest_hash: str
    manifest_id: int | None = None
    manifest: Manifest | None = None


@dataclass(frozen=True)
class Desired:
    """What a target should hold: wanted packages, and pins that cannot be honoured."""

    wants: dict[str, Want]
    blocked: dict[str, RegistryError] = field(default_factory=dict)
    skill_ids: dict[str, int] = field(default_factory=dict)


async def desired(ctx: Context, scope: Scope, lock: LockFile | None) -> Desired:
    """The desired state of `scope`: its heads in use, or the versions `lock` pins."""

    async def work(conn: AsyncConnection) -> list[db_materializations.HeadRow]:
        return await db_materializations.heads(conn, scope)

    heads = {h.slug: h for h in await ctx.read(work)}
    skill_ids = {slug: h.skill_id for slug, h in heads.items()}
    if lock is None:
        wants = {
            slug: Want(h.skill_id, h.version, h.manifest_hash, h.manifest_id)
            for slug, h in heads.items()
            if h.in_use
        }
        return Desired(wants, skill_ids=skill_ids)
    wants, blocked = await _pinned_by(ctx, scope, lock, heads)
    return Desired(wants, blocked, skill_ids)


async def _pinned_by(
    ctx: Context, scope: Scope, lock: LockFile, heads: Mapping[str, db_materializations.HeadRow]
) -> tuple[dict[str, Want], dict[str, RegistryError]]:
    wants: dict[str, Want] = {}
    blocked: dict[str, RegistryError] = {}
    for pin in lock.skills:
        head = heads.get(pin.slug)
        try:
            if head is None:
                raise SkillNotFound(scope.workspace, scope.agent, pin.slug)
            if not head.in_use:
                reason = "its use is paused" if head.use_paused else f"it is {head.state}"
                raise NotInUse(pin.slug, reason)
            want = await pinned(ctx, scope, pin.slug, pin.version, head.skill_id)
            if want.manifest_hash != pin.manifest_hash:
                raise LockMismatch(pin.slug, pin.version, pin.manifest_hash, want.manifest_hash)
        except RegistryError as exc:
            blocked[pin.slug] = exc
        else:
            wants[pin.slug] = want
    return wants, blocked


async def pinned(ctx: Context, scope: Scope, slug: str, version: int, skill_id: int | None) -> Want:
    """The package of one version of a live skill (`VersionNotFound` if it is gone)."""

    async def work(conn: AsyncConnection) -> Want:
        _, row = await read.locate(conn, scope, slug, version)
        return Want(skill_id, row.number, row.manifest_hash, row.manifest_id)

    return await ctx.read(work)


async def manifest(ctx: Context, scope: Scope, want: Want) -> Manifest:
    """The wanted manifest, read from its rows and checked against its hash."""
    if want.manifest is not None:
        return want.manifest
    manifest_id = want.manifest_id
    assert manifest_id is not None

    async def work(conn: AsyncConnection) -> Manifest:
        return await db_skills.manifest_entries(conn, scope.workspace, manifest_id)

    found = await ctx.read(work)
    if found.hash != want.manifest_hash:
        raise Inconsistency(f"manifest {want.manifest_hash[:16]} does not match its rows")
    return found
