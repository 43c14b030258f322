"""Forget a target: undo its binding to a scope, its records and what the reconciler put there.

A target is bound to one scope for good when it is first reconciled (`target.py`), so a
reconcile run with a misspelt workspace binds the directory to a scope that does not exist,
and every corrected run is refused with `target_mismatch`. Forgetting the target undoes
that, and retires a target that is no longer wanted:

1. the target is opened with its lock held (a reconciler at work is waited for, or
   refused), whatever scope it is bound to;
2. every skill the reconciler materialised there is removed (the entries it made, as its
   stat cache, its trees and the registry's records know them; nothing else is touched);
3. the registry's records of the target (its row and one row per skill) are deleted in one
   transaction under the workspace's lock, with one `materialize_target_forgotten` event;
4. the private area (`.skillreg/`: the binding, the lock, the trees) is removed last, so
   a forget interrupted before it can simply be run again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import materializations as db_materializations
from registry.db import skills as db_skills
from registry.domain.model import Scope
from registry.errors import TargetBusy
from registry.services import fsops
from registry.services.context import Context
from registry.services.fsops import no_step
from registry.services.materialize import swap
from registry.services.materialize.target import PRIVATE, Target, wait_until_free

TARGET_FORGOTTEN: Final = "materialize_target_forgotten"


@dataclass(frozen=True)
class ForgetReport:
    """What forgetting a target did: the scope it was bound to and the skills removed."""

    target: str
    target_id: str
    workspace: str
    agent: str
    removed: tuple[str, ...]
    records: int


async def forget(ctx: Context, path: Path | str, *, wait: bool = False) -> ForgetReport:
    """Forget the target at `path` (see the module docstring)."""
    target = await _open(path, wait=wait)
    try:
        identity = target.identity
        scope = Scope(identity.workspace, identity.agent)

        async def recorded(conn: AsyncConnection) -> list[db_materializations.AppliedRow]:
            return await db_materializations.applied(conn, scope, [identity.target_id])

        rows = await ctx.read(recorded)
        slugs = {r.slug for r in rows if r.manifest_hash is not None}
        slugs |= await asyncio.to_thread(_managed, target)
        removed = [
            slug
            for slug in sorted(slugs)
            if await asyncio.to_thread(swap.remove, target, slug, no_step)
        ]
        now = ctx.clock.now()

        async def work(conn: AsyncConnection) -> int:
            count = await db_materializations.forget_target(
                conn, scope.workspace, identity.target_id
            )
            await db_skills.insert_event(
                conn,
                scope,
                "",
                skill_id=None,
                kind=TARGET_FORGOTTEN,
                version=None,
                manifest_hash=None,
                payload={
                    "target_id": identity.target_id,
                    "target": str(target.path),
                    "host": target.host,
                    "removed": list(removed),
                },
                now=now,
            )
            return count

        records = await ctx.locked(scope.workspace, work)
        await asyncio.to_thread(fsops.remove_entry, PRIVATE, target.root_fd)
        return ForgetReport(
            target=str(target.path),
            target_id=identity.target_id,
            workspace=scope.workspace,
            agent=scope.agent,
            removed=tuple(removed),
            records=records,
        )
    finally:
        target.close()


def _managed(target: Target) -> set[str]:
    """The slugs the target's own files say the reconciler manages (cache and trees)."""
    return target.cached_slugs() | set(fsops.names(target.trees_fd))


async def _open(path: Path | str, *, wait: bool) -> Target:
    while True:
        try:
            return await asyncio.to_thread(Target.open, path, None)
        except TargetBusy:
            if not wait:
                raise
        await asyncio.to_thread(wait_until_free, path)
