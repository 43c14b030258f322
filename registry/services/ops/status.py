"""`skillreg status`: what an operator needs to know about the registry, one section each.

`Status` has one field per section so that sections can be added as features land
without changing the ones already there: materialisation (below), storage (the GC
figures of `registry/services/gc/figures.py`) and learning, one per workspace
(`registry/services/learning/status.py`).

Materialisation: every registered target, and every skill pending on it: a skill in use
whose head manifest is not the one recorded as applied there (including new skills and
failed attempts), or a skill recorded there that is no longer in use. A target reconciled
from a lock file shows the skills whose head moved past the pinned version as pending.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import materializations as db_materializations
from registry.domain.model import Scope
from registry.services.context import Context
from registry.services.gc.figures import GcFigures, gc_figures
from registry.services.learning.status import LearningStatus, learning_status


@dataclass(frozen=True)
class PendingMaterialization:
    """A skill whose desired state is not (yet) what a target holds.

    `action`: `write` (the head is not on the target yet) or `remove` (the skill is no
    longer in use but still on the target). `error` is the last attempt's failure, if any.
    """

    target_id: str
    target: str
    host: str
    workspace: str
    agent: str
    slug: str
    action: str
    desired_version: int | None
    desired_hash: str | None
    applied_version: int | None
    applied_hash: str | None
    error: str | None
    since: datetime | None


@dataclass(frozen=True)
class TargetTrust:
    """What a syncing host last said of the desired state it was served (docs/trust.md).

    `state`: `verified` (it checked and applied state `seq`), `stale` (it keeps its last
    good state, expired at `since`) or `refused` (`detail` names the rule).
    """

    state: str
    since: datetime | None
    detail: str | None
    seq: int | None


@dataclass(frozen=True)
class TargetSummary:
    """One registered target: where it is, and how many skills it holds and lacks.

    `trust` is None for a target whose host never reported (a local `reconcile`).
    """

    target_id: str
    path: str
    host: str
    mode: str
    workspace: str
    agent: str
    applied: int
    pending: int
    failed: int
    last_change: datetime | None
    trust: TargetTrust | None = None


@dataclass(frozen=True)
class MaterializationStatus:
    """Targets and pending materialisations."""

    targets: tuple[TargetSummary, ...]
    pending: tuple[PendingMaterialization, ...]


@dataclass(frozen=True)
class Status:
    """The registry's status, one field per section."""

    materialization: MaterializationStatus
    storage: GcFigures
    learning: tuple[LearningStatus, ...] = ()


async def status(ctx: Context, workspace: str | None = None, agent: str | None = None) -> Status:
    """The status of one workspace (and agent), or of every workspace."""
    return Status(
        materialization=await materialization_status(ctx, workspace, agent),
        storage=await gc_figures(ctx),
        learning=await learning_status(ctx, workspace, agent),
    )


async def materialization_status(
    ctx: Context, workspace: str | None = None, agent: str | None = None
) -> MaterializationStatus:
    """Registered targets and what is pending on each."""

    async def work(conn: AsyncConnection) -> MaterializationStatus:
        targets = await db_materializations.targets(conn, workspace, agent)
        by_scope: dict[Scope, list[db_materializations.TargetRow]] = defaultdict(list)
        for row in targets:
            by_scope[Scope(row.workspace, row.agent)].append(row)
        summaries: list[TargetSummary] = []
        pending: list[PendingMaterialization] = []
        for scope, rows in by_scope.items():
            heads = {h.slug: h for h in await db_materializations.heads(conn, scope) if h.in_use}
            applied: dict[str, dict[str, db_materializations.AppliedRow]] = defaultdict(dict)
            for a in await db_materializations.applied(conn, scope, [t.target_id for t in rows]):
                applied[a.target_id][a.slug] = a
            for target in rows:
                mine = _pending(target, heads, applied[target.target_id])
                pending.extend(mine)
                summaries.append(_summary(target, applied[target.target_id], len(mine)))
        return MaterializationStatus(tuple(summaries), tuple(pending))

    return await ctx.read(work)


def _pending(
    target: db_materializations.TargetRow,
    heads: dict[str, db_materializations.HeadRow],
    applied: dict[str, db_materializations.AppliedRow],
) -> list[PendingMaterialization]:
    out: list[PendingMaterialization] = []
    for slug in sorted({*heads, *applied}):
        head, row = heads.get(slug), applied.get(slug)
        held = None if row is None else row.manifest_hash
        if head is not None and head.manifest_hash == held:
            continue
        if head is None and held is None:
            continue
        out.append(
            PendingMaterialization(
                target_id=target.target_id,
                target=target.path,
                host=target.host,
                workspace=target.workspace,
                agent=target.agent,
                slug=slug,
                action="write" if head is not None else "remove",
                desired_version=None if head is None else head.version,
                desired_hash=None if head is None else head.manifest_hash,
                applied_version=None if row is None else row.version,
                applied_hash=held,
                error=None if row is None else row.error,
                since=None if row is None else row.updated_at,
            )
        )
    return out


def _summary(
    target: db_materializations.TargetRow,
    applied: dict[str, db_materializations.AppliedRow],
    pending: int,
) -> TargetSummary:
    changes = [a.updated_at for a in applied.values()]
    return TargetSummary(
        target_id=target.target_id,
        path=target.path,
        host=target.host,
        mode=target.mode,
        workspace=target.workspace,
        agent=target.agent,
        applied=sum(a.manifest_hash is not None for a in applied.values()),
        pending=pending,
        failed=sum(a.outcome == "failed" for a in applied.values()),
        last_change=max(changes, default=target.updated_at),
        trust=None
        if target.trust_state is None
        else TargetTrust(
            target.trust_state, target.trust_since, target.trust_detail, target.trust_seq
        ),
    )
