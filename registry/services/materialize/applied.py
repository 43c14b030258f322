"""The applied state of targets: what the registry records each holds, and the outbox events.

Every change (a target registered or moved, a skill applied, removed or failed) is one
transaction under the workspace's advisory lock: a compare-and-swap on the record the
reconciler read, and one outbox event. A transaction retried after a lost commit finds its
own values already there and changes nothing (no second event).

The direct source calls these for `skillreg reconcile`; the HTTP API calls them for a
remote reconciler (`skillreg sync`), through `record_remote`, which takes the target's
scope and place from its registration rather than from the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import materializations as db_materializations
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain.arguments import check_optional_text, check_text
from registry.domain.model import Scope
from registry.errors import StateConflict, TargetLimitReached, TargetMismatch, TargetNotFound
from registry.services.context import Context
from registry.services.materialize.source import Applied, Change, Place

EVENT_KINDS: Final = {
    "applied": "materialized",
    "removed": "dematerialized",
    "failed": "materialize_failed",
}
TARGET_REGISTERED: Final = "materialize_target_registered"
CONVERGED: Final = "target.converged"


@dataclass(frozen=True)
class TrustSaid:
    """What a target's host says of the desired state it was served (`report_trust`)."""

    state: str
    since: datetime
    detail: str | None
    seq: int | None


async def load(ctx: Context, scope: Scope, target_id: str) -> dict[str, Applied]:
    """What the registry records for every slug of the target."""

    async def work(conn: AsyncConnection) -> list[db_materializations.AppliedRow]:
        return await db_materializations.applied(conn, scope, [target_id])

    return {
        r.slug: Applied(r.slug, r.manifest_hash, r.version, r.outcome, r.error)
        for r in await ctx.read(work)
    }


async def register(ctx: Context, scope: Scope, place: Place) -> bool:
    """Record the target once, and again when it is found at another path or host.

    True if the record changed. A target id registered for another agent of the workspace
    is refused (`TargetMismatch`): a target is bound to one scope; one registered in
    another workspace too (`StateConflict`, which does not say where). Its path and host
    are one-line text (`check_text`); a workspace registers at most `capacity_targets`
    targets (`TargetLimitReached`), counted under its lock.
    """
    check_text("path", place.path)
    check_text("host", place.host)
    now = ctx.clock.now()
    row = db_materializations.TargetRow(
        target_id=place.target_id,
        workspace=scope.workspace,
        agent=scope.agent,
        path=place.path,
        host=place.host,
        mode=place.mode,
        created_at=now,
        updated_at=now,
    )

    async def current(conn: AsyncConnection) -> db_materializations.TargetRow | None:
        return await db_materializations.target(conn, scope.workspace, place.target_id)

    def unchanged(existing: db_materializations.TargetRow | None) -> bool:
        if existing is None:
            return False
        if existing.agent != scope.agent:
            recorded = str(Scope(existing.workspace, existing.agent))
            raise TargetMismatch(place.path, "scope", recorded, str(scope))
        return (existing.path, existing.host, existing.mode) == (row.path, row.host, row.mode)

    if unchanged(await ctx.read(current)):
        return False

    async def work(conn: AsyncConnection) -> bool:
        existing = await current(conn)
        if unchanged(existing):
            return False
        if existing is None:
            await _check_new(conn, scope.workspace, place.target_id, ctx.settings.capacity_targets)
        if not await db_materializations.save_target(conn, row):
            return False
        await db_skills.insert_event(
            conn,
            scope,
            "",
            skill_id=None,
            kind=TARGET_REGISTERED,
            version=None,
            manifest_hash=None,
            payload=place.where(),
            now=now,
        )
        return True

    return await ctx.locked(scope.workspace, work)


async def _check_new(conn: AsyncConnection, workspace: str, target_id: str, limit: int) -> None:
    """Refuse a new target whose id is taken, or one more than `workspace` may register."""
    if await db_materializations.target_id_taken(conn, target_id):
        raise StateConflict(f"register target {target_id}", "its id is taken")
    if await db_materializations.target_count(conn, workspace) >= limit:
        raise TargetLimitReached(limit)


async def record(
    ctx: Context,
    scope: Scope,
    place: Place,
    slug: str,
    *,
    expected: Applied | None,
    new: Applied,
    change: Change,
    trust: TrustSaid | None = None,
) -> bool:
    """Compare-and-swap the record of `slug` on the target from `expected` to `new`.

    True if it changed (with one event); False if it already was `new`; `StateConflict`
    if another reconciler recorded something else meanwhile. The new error is text a
    client sets (`check_text`, line breaks allowed); the expected record is compared, not
    stored, so it is taken as it was read. `trust`, the host's report of its state, is
    kept in the same transaction (no event, as `report_trust`), whether the record
    changed or already said so; not if the compare-and-swap fails.
    """
    check_optional_text("error", new.error, multiline=True)
    now = ctx.clock.now()

    async def work(conn: AsyncConnection) -> bool:
        changed = await db_materializations.record(
            conn,
            scope,
            place.target_id,
            slug,
            expected=None if expected is None else _row(place.target_id, expected, now),
            manifest_hash=new.manifest_hash,
            version=new.version,
            outcome=new.outcome,
            error=new.error,
            now=now,
        )
        if trust is not None:
            await _save_trust(conn, scope.workspace, place.target_id, trust)
        if changed:
            skill = await db_skills.live_skill(conn, scope, slug)
            await db_skills.insert_event(
                conn,
                scope,
                slug,
                skill_id=None if skill is None else skill.id,
                kind=EVENT_KINDS[new.outcome],
                version=new.version,
                manifest_hash=new.manifest_hash,
                payload={**place.where(), **change.payload()},
                now=now,
            )
            if skill is not None:
                await _converged(
                    conn,
                    scope,
                    place,
                    skill_id=skill.id,
                    slug=slug,
                    expected=expected,
                    new=new,
                    now=now,
                )
        return changed

    return await ctx.locked(scope.workspace, work)


async def _converged(
    conn: AsyncConnection,
    scope: Scope,
    place: Place,
    *,
    skill_id: int,
    slug: str,
    expected: Applied | None,
    new: Applied,
    now: datetime,
) -> None:
    """One `target.converged` event if the target no longer holds a revoked version.

    In the record's transaction: the record moved off a version with a revocation in
    force (another version applied, or the skill removed). The event says which target,
    which revocation, what it holds now and how long it took since the yank.
    """
    if expected is None or expected.version is None or expected.outcome != "applied":
        return
    if new.outcome == "applied" and new.version == expected.version:
        return
    if new.outcome == "failed":
        return  # a failed attempt leaves the old package in place
    revoked = await db_revocations.of_version(conn, scope.workspace, skill_id, expected.version)
    if revoked is None:
        return
    await db_skills.insert_event(
        conn,
        scope,
        slug,
        skill_id=skill_id,
        kind=CONVERGED,
        version=expected.version,
        manifest_hash=revoked.manifest_hash,
        payload={
            **place.where(),
            "revocation": revoked.id,
            "kind": revoked.kind,
            "revoked_version": expected.version,
            "holds": new.version if new.outcome == "applied" else None,
            "revoked_at": revoked.revoked_at.isoformat(),
            "seconds": round((now - revoked.revoked_at).total_seconds(), 3),
        },
        now=now,
    )


async def record_remote(
    ctx: Context,
    workspace: str,
    target_id: str,
    slug: str,
    *,
    expected: Applied | None,
    new: Applied,
    change: Change,
    trust: TrustSaid | None = None,
) -> bool:
    """`record` for a target registered in `workspace` (`TargetNotFound` if it is not)."""

    async def work(conn: AsyncConnection) -> db_materializations.TargetRow | None:
        return await db_materializations.target(conn, workspace, target_id)

    found = await ctx.read(work)
    if found is None:
        raise TargetNotFound(target_id)
    scope = Scope(found.workspace, found.agent)
    place = Place(found.target_id, found.path, found.host, found.mode)
    return await record(
        ctx, scope, place, slug, expected=expected, new=new, change=change, trust=trust
    )


async def report_trust(ctx: Context, workspace: str, target_id: str, said: TrustSaid) -> None:
    """Record what a target's host says of its desired state (`TargetNotFound` if unknown).

    No event: it is a host's report about itself, kept for `status`, not a change. A host
    that records a skill in the same run sends it with that record instead (`record`).
    """
    if not await ctx.write(lambda conn: _save_trust(conn, workspace, target_id, said)):
        raise TargetNotFound(target_id)


async def _save_trust(
    conn: AsyncConnection, workspace: str, target_id: str, said: TrustSaid
) -> bool:
    return await db_materializations.save_trust(
        conn,
        workspace,
        target_id,
        state=said.state,
        since=said.since,
        detail=said.detail,
        seq=said.seq,
    )


def _row(target_id: str, applied: Applied, now: datetime) -> db_materializations.AppliedRow:
    """The row `db_materializations.record` compares with (its time is not compared)."""
    return db_materializations.AppliedRow(
        target_id,
        applied.slug,
        applied.manifest_hash,
        applied.version,
        applied.outcome,
        applied.error,
        now,
    )
