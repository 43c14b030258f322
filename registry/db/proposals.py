"""Queries on proposals. Every query filters by workspace; the caller owns the transaction.

Writes (`record`, `stale_open`, `close`, `withdraw_pending`) run inside the workspace-locked
transaction of the action that makes them, next to that action's one outbox event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import SkillRow, in_scope
from registry.db.tables import PENDING_PROPOSAL_STATUSES, Proposal, Skill
from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest
from registry.domain.model import Scope


@dataclass(frozen=True, slots=True)
class ProposalRow:
    """A proposal as the services see it."""

    id: int
    workspace: str
    skill_id: int
    base_version: int
    manifest_id: int
    manifest_hash: str
    file_count: int
    total_size: int
    origin: str
    actor: str
    message: str
    sources: list[str]
    approvals: list[dict[str, Any]]
    baseline: dict[str, Any] | None
    status: str
    kind: str
    suppression_id: int | None
    decision: str | None
    decided_by: str | None
    decided_at: datetime | None
    applied_version: int | None
    write_id: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def pending(self) -> bool:
        """Open or stale: waiting for a decision."""
        return self.status in PENDING_PROPOSAL_STATUSES

    @property
    def baseline_tuple(self) -> tuple[str, int, str] | None:
        """The marketplace baseline the proposal carries, as `WriteRequest.baseline`."""
        if self.baseline is None:
            return None
        b = self.baseline
        return str(b["listing"]), int(b["version"]), str(b["manifest_hash"])

    def approval_values(self) -> tuple[Approval, ...]:
        return tuple(Approval.from_json(a) for a in self.approvals)


_COLUMNS = tuple(getattr(Proposal, f) for f in ProposalRow.__slots__)


def _row(row: sa.Row[Any]) -> ProposalRow:
    return ProposalRow(**row._asdict())


async def get(conn: AsyncConnection, scope: Scope, proposal_id: int) -> ProposalRow | None:
    """The proposal `proposal_id` of a skill in `scope` (deleted skills included)."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS)
            .join(Skill, Skill.id == Proposal.skill_id)
            .where(Proposal.workspace == scope.workspace, in_scope(scope))
            .where(Proposal.id == proposal_id)
        )
    ).first()
    return None if row is None else _row(row)


async def by_write(conn: AsyncConnection, workspace: str, write_id: str) -> ProposalRow | None:
    """The proposal a write recorded, if its commit happened."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Proposal.workspace == workspace, Proposal.write_id == write_id
            )
        )
    ).first()
    return None if row is None else _row(row)


async def pending(conn: AsyncConnection, skill: SkillRow) -> ProposalRow | None:
    """The skill's open or stale proposal, if any (there is at most one)."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Proposal.workspace == skill.workspace,
                Proposal.skill_id == skill.id,
                Proposal.status.in_(PENDING_PROPOSAL_STATUSES),
            )
        )
    ).first()
    return None if row is None else _row(row)


async def _set_status(
    conn: AsyncConnection,
    skill: SkillRow,
    *,
    from_statuses: Sequence[str],
    to_status: str,
    now: datetime,
) -> list[int]:
    result = await conn.execute(
        sa.update(Proposal)
        .where(
            Proposal.workspace == skill.workspace,
            Proposal.skill_id == skill.id,
            Proposal.status.in_(from_statuses),
        )
        .values(status=to_status, updated_at=now)
        .returning(Proposal.id)
    )
    return sorted(int(r.id) for r in result)


async def record(
    conn: AsyncConnection,
    skill: SkillRow,
    *,
    base_version: int,
    status: str,
    manifest_id: int,
    manifest: Manifest,
    origin: str,
    actor: str,
    message: str,
    sources: Sequence[str],
    approvals: Sequence[Approval],
    write_id: str | None,
    now: datetime,
    baseline: tuple[str, int, str] | None = None,
    kind: str = "learning",
    suppression_id: int | None = None,
) -> tuple[int, list[int]]:
    """Record a proposal; the skill's pending one is superseded first. Returns both ids."""
    superseded = await _set_status(
        conn, skill, from_statuses=PENDING_PROPOSAL_STATUSES, to_status="superseded", now=now
    )
    proposal_id = await conn.scalar(
        sa.insert(Proposal)
        .values(
            workspace=skill.workspace,
            skill_id=skill.id,
            base_version=base_version,
            manifest_id=manifest_id,
            manifest_hash=manifest.hash,
            file_count=manifest.file_count,
            total_size=manifest.total_size,
            origin=origin,
            actor=actor,
            message=message,
            sources=list(dict.fromkeys(sources)),
            approvals=[a.as_json() for a in approvals],
            baseline=None
            if baseline is None
            else {"listing": baseline[0], "version": baseline[1], "manifest_hash": baseline[2]},
            status=status,
            kind=kind,
            suppression_id=suppression_id,
            write_id=write_id,
            created_at=now,
            updated_at=now,
        )
        .returning(Proposal.id)
    )
    assert proposal_id is not None
    return int(proposal_id), superseded


async def stale_open(conn: AsyncConnection, skill: SkillRow, now: datetime) -> list[int]:
    """The head moved: the skill's open proposal (made on the old head) becomes stale."""
    return await _set_status(conn, skill, from_statuses=("open",), to_status="stale", now=now)


async def withdraw_pending(conn: AsyncConnection, skill: SkillRow, now: datetime) -> list[int]:
    """The skill is being deleted: its pending proposal is withdrawn."""
    return await _set_status(
        conn, skill, from_statuses=PENDING_PROPOSAL_STATUSES, to_status="withdrawn", now=now
    )


async def close(
    conn: AsyncConnection,
    proposal: ProposalRow,
    *,
    status: str,
    decision: str,
    actor: str,
    now: datetime,
    applied_version: int | None = None,
) -> None:
    """Record the owner's decision on a pending proposal."""
    result = await conn.execute(
        sa.update(Proposal)
        .where(
            Proposal.workspace == proposal.workspace,
            Proposal.id == proposal.id,
            Proposal.status == proposal.status,
        )
        .values(
            status=status,
            decision=decision,
            decided_by=actor,
            decided_at=now,
            applied_version=applied_version,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        msg = f"proposal {proposal.id} changed under the workspace lock"
        raise RuntimeError(msg)


@dataclass(frozen=True, slots=True)
class ListedProposal:
    """A proposal with the slug and head of its skill, for listings."""

    proposal: ProposalRow
    slug: str
    head: int
    skill_state: str
    agent: str


async def in_scope_page(
    conn: AsyncConnection,
    scope: Scope,
    *,
    statuses: Sequence[str] | None,
    limit: int,
    before: int | None,
) -> list[ListedProposal]:
    """Proposals of skills in `scope`, newest first (keyset paging on the id)."""
    return await workspace_page(
        conn,
        scope.workspace,
        agent=scope.agent,
        statuses=statuses,
        limit=limit,
        before=before,
    )


_LISTED = (*_COLUMNS, Skill.slug, Skill.head, Skill.state.label("skill_state"), Skill.agent)


def _listed(row: sa.Row[Any]) -> ListedProposal:
    data = row._asdict()
    slug, head, state = data.pop("slug"), data.pop("head"), data.pop("skill_state")
    agent = data.pop("agent")
    return ListedProposal(ProposalRow(**data), slug, head, state, agent)


async def workspace_page(
    conn: AsyncConnection,
    workspace: str,
    *,
    agent: str | None = None,
    origin: str | None = None,
    kind: str | None = None,
    statuses: Sequence[str] | None,
    limit: int,
    before: int | None,
) -> list[ListedProposal]:
    """Proposals of a workspace's skills (of one agent, origin or kind), newest first."""
    query = (
        sa.select(*_LISTED)
        .join(Skill, Skill.id == Proposal.skill_id)
        .where(Proposal.workspace == workspace, Skill.workspace == workspace)
        .order_by(Proposal.id.desc())
        .limit(limit)
    )
    if agent is not None:
        query = query.where(Skill.agent == agent)
    if origin is not None:
        query = query.where(Proposal.origin == origin)
    if kind is not None:
        query = query.where(Proposal.kind == kind)
    if statuses is not None:
        query = query.where(Proposal.status.in_(statuses))
    if before is not None:
        query = query.where(Proposal.id < before)
    return [_listed(row) for row in await conn.execute(query)]


async def find_in_workspace(
    conn: AsyncConnection, workspace: str, proposal_id: int
) -> ListedProposal | None:
    """The proposal `proposal_id` of any skill of `workspace`, with its skill's scope."""
    row = (
        await conn.execute(
            sa.select(*_LISTED)
            .join(Skill, Skill.id == Proposal.skill_id)
            .where(Proposal.workspace == workspace, Skill.workspace == workspace)
            .where(Proposal.id == proposal_id)
        )
    ).first()
    return None if row is None else _listed(row)


async def find(conn: AsyncConnection, scope: Scope, proposal_id: int) -> ListedProposal | None:
    """The proposal `proposal_id` of a skill in `scope`, with its skill's slug and head."""
    row = (
        await conn.execute(
            sa.select(*_LISTED)
            .join(Skill, Skill.id == Proposal.skill_id)
            .where(Proposal.workspace == scope.workspace, in_scope(scope))
            .where(Proposal.id == proposal_id)
        )
    ).first()
    return None if row is None else _listed(row)
