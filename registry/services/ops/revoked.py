"""`skillreg status --revoked`: which targets still hold each revoked version (docs/revocation.md).

For every revocation in force, every target of its scope is one of:

    holding    its record says it holds the revoked version; with when its host was last
               seen (it asked for its desired state)
    converged  it held the version when it was revoked and no longer does: with what it
               holds now and how long it took (its `target.converged` event)
    clear      it never held the version (or held it before the yank and moved on)

A target whose host has been silent longer than a desired state lasts
(`SKILLREG_STATE_VALIDITY`) is marked `stale`: its host keeps what it has, and cannot
have learned of the revocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import revocations as db_revocations
from registry.services.context import Context


@dataclass(frozen=True)
class TargetHold:
    """One target of a revoked version's scope, and where it stands."""

    target_id: str
    path: str
    host: str
    state: str  # holding, converged or clear
    last_seen: datetime | None
    stale: bool
    holds: int | None  # the version it holds now (None: the skill is not on it)
    seconds: float | None = None  # converged: how long after the yank


@dataclass(frozen=True)
class RevokedVersion:
    """A revocation in force and its targets."""

    workspace: str
    agent: str
    slug: str
    version: int
    kind: str
    reason: str
    actor: str
    revoked_at: datetime
    targets: tuple[TargetHold, ...]

    @property
    def holding(self) -> int:
        return sum(t.state == "holding" for t in self.targets)

    @property
    def slowest(self) -> float | None:
        """The longest time a target took to converge, in seconds."""
        return max((t.seconds for t in self.targets if t.seconds is not None), default=None)


async def revoked_status(ctx: Context, workspace: str | None = None) -> tuple[RevokedVersion, ...]:
    """Every revocation in force (of `workspace`, or of all), with its targets."""
    now = ctx.clock.now()
    silent = timedelta(seconds=ctx.settings.state_validity)

    async def work(conn: AsyncConnection) -> tuple[RevokedVersion, ...]:
        out = []
        for revocation in await db_revocations.listed(conn, workspace):
            holders = await db_revocations.holders(conn, revocation)
            events = await db_revocations.converged(conn, revocation)
            targets = tuple(_hold(revocation, h, events, now - silent) for h in holders)
            out.append(
                RevokedVersion(
                    workspace=revocation.workspace,
                    agent=revocation.agent,
                    slug=revocation.slug,
                    version=revocation.version,
                    kind=revocation.kind,
                    reason=revocation.reason,
                    actor=revocation.actor,
                    revoked_at=revocation.revoked_at,
                    targets=targets,
                )
            )
        return tuple(out)

    return await ctx.read(work)


def _hold(
    revocation: db_revocations.RevocationRow,
    holder: db_revocations.HolderRow,
    events: dict[str, tuple[datetime, dict[str, object]]],
    silent_since: datetime,
) -> TargetHold:
    holds = holder.version if holder.outcome == "applied" else None
    converged = events.get(holder.target_id)
    if holds == revocation.version:
        state, seconds = "holding", None
    elif converged is not None:
        state, seconds = "converged", (converged[0] - revocation.revoked_at).total_seconds()
    else:
        state, seconds = "clear", None
    return TargetHold(
        target_id=holder.target_id,
        path=holder.path,
        host=holder.host,
        state=state,
        last_seen=holder.seen_at,
        stale=holder.seen_at is None or holder.seen_at < silent_since,
        holds=holds,
        seconds=seconds,
    )
