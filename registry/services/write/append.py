"""The version a publish appends: its rows, the head's move, the event, the bookkeeping.

`version` runs under the workspace lock, after the write's root checks and routing, once
the blobs are checked and the manifest is stored (`publish._apply`; docs/write-path.md).
The head moves by the compare-and-swap of `registry/db/heads.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import heads as db_heads
from registry.db import proposals as db_proposals
from registry.db import publication as db_publication
from registry.db import skills as db_skills
from registry.domain.approvals import Approval
from registry.domain.manifest import Manifest
from registry.domain.model import Publication
from registry.services.context import Context
from registry.services.trust import attest
from registry.services.write import diversion, learning, revoke
from registry.services.write.request import WriteRequest


class BlobsRaced(Exception):
    """A referenced blob was found missing or being deleted inside the publish transaction."""

    def __init__(self, digests: tuple[str, ...]) -> None:
        self.digests = digests
        super().__init__(f"{len(digests)} referenced blobs are not live")


async def version(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    found: db_publication.WriteContext,
    *,
    approvals: Sequence[Approval],
    manifest: Manifest,
    manifest_id: int,
    decided: db_proposals.ProposalRow | None,
    write_id: str,
    now: datetime,
) -> Publication:
    """Insert the version and its signed attestation, move the head, write the event."""
    scope, skill = request.scope, found.skill
    if skill is None:
        skill_id = await db_publication.insert_skill(
            conn,
            scope,
            request.slug,
            skeleton=found.skeleton,
            kind=request.kind,
            size=manifest.total_size,
            now=now,
            baseline=request.baseline,
            auto_improve=request.changes.new_skill_auto_improve,
        )
        number, parent = 1, None
    else:
        skill_id, number, parent = skill.id, skill.head + 1, skill.head
    version_id = await db_publication.insert_version(
        conn,
        skill_id,
        scope.workspace,
        number=number,
        parent=parent,
        origin=request.origin.value,
        actor=request.actor,
        principal=ctx.principal,
        message=request.message,
        restored_from=request.restored_from,
        manifest_id=manifest_id,
        manifest=manifest,
        sources=request.sources,
        write_id=write_id,
        now=now,
    )
    decides = request.decides
    sealed = await attest.record(
        conn,
        ctx.signing,
        version_id,
        attest.Facts(
            scope=scope,
            slug=request.slug,
            version=number,
            parent=parent,
            origin=request.origin.value,
            restored_from=request.restored_from,
            principal=ctx.principal,
            declared_actor=request.actor,
            message=request.message,
            sources=request.sources,
            proposal=None if decides is None else decides.proposal,
            decided_by=None if decides is None else decides.actor,
            approvals=approvals,
            manifest=manifest,
            time=now,
        ),
    )
    await db_approvals.replace(
        conn,
        scope.workspace,
        version_id,
        approvals,
        actor=request.actor,
        now=now,
        fresh=True,
    )
    await ctx.hit("publish.version_rows")
    if skill is not None:
        await db_heads.swap(
            conn,
            skill,
            new_head=number,
            size=manifest.total_size,
            now=now,
            auto_improve=request.changes.auto_improve,
            baseline=_baseline(request, decided, skill),
            revive=request.revives is not None,
        )
    if request.revokes is not None:
        assert skill is not None, "a yank moves an existing head"
        await revoke.record(
            ctx, conn, scope, skill, request.revokes, head=number, use_stopped=False, now=now
        )
    staled = await _proposals_follow(conn, request, found, decided=decided, number=number, now=now)
    await learning.version_added(
        conn,
        request,
        skill,
        skill_id=skill_id,
        number=number,
        decided_suppression=_lifted_suppression(request, decided),
        now=now,
    )
    await ctx.hit("publish.head_moved")
    await db_skills.insert_event(
        conn,
        scope,
        request.slug,
        skill_id=skill_id,
        kind=diversion.event_kind(request),
        version=number,
        manifest_hash=manifest.hash,
        payload=_event_payload(
            request, manifest, parent=parent, staled=staled, principal=ctx.principal, sealed=sealed
        ),
        now=now,
    )
    return Publication(
        version=number,
        manifest_hash=manifest.hash,
        created=True,
        retired=parent,
        unchanged=False,
        committed_at=now,
    )


def _event_payload(
    request: WriteRequest,
    manifest: Manifest,
    *,
    parent: int | None,
    staled: list[int],
    principal: str,
    sealed: str,
) -> dict[str, object]:
    decides = request.decides
    return {
        "origin": request.origin.value,
        "principal": principal,
        "actor": request.actor,
        "attestation": sealed,
        "parent": parent,
        "restored_from": request.restored_from,
        "files": manifest.file_count,
        "bytes": manifest.total_size,
        "proposal": None if decides is None else decides.proposal,
        "decided_by": None if decides is None else decides.actor,
        "pending": request.applies_pending,
        "repair": request.repair,
        "revived": request.revives is not None,
        "staled_proposals": staled,
    }


def _lifted_suppression(
    request: WriteRequest, decided: db_proposals.ProposalRow | None
) -> int | None:
    """The suppression this write lifts: only `apply` of a `suppressed` proposal does.

    `alternative` publishes the owner's own package, not the change the owner undid, so
    the suppression stays in force (docs/history.md, "Suppression").
    """
    if decided is None or request.decides is None or request.decides.decision != "apply":
        return None
    return decided.suppression_id


def _baseline(
    request: WriteRequest,
    decided: db_proposals.ProposalRow | None,
    skill: db_skills.SkillRow | None,
) -> tuple[str, int, str] | None:
    """The marketplace baseline the new head records, if it changes.

    A decided marketplace proposal moves an existing copy's baseline as its update would
    have; a new skill takes only the request's.
    """
    if skill is None or decided is None:
        return request.baseline
    return request.baseline or decided.baseline_tuple


async def _proposals_follow(
    conn: AsyncConnection,
    request: WriteRequest,
    found: db_publication.WriteContext,
    *,
    decided: db_proposals.ProposalRow | None,
    number: int,
    now: datetime,
) -> list[int]:
    """The proposal bookkeeping of a new version; the ids of the proposals made stale.

    A moved head closes the decided proposal and makes the open one stale; a created skill
    closes the decided proposal of the deleted skill whose slug it took.
    """
    if found.skill is None:
        await diversion.skill_created(conn, request, decided=decided, number=number, now=now)
        return []
    return await diversion.head_moved(
        conn,
        request,
        found.skill,
        decided=decided,
        number=number,
        now=now,
        pending=found.has_pending_proposal,
    )
