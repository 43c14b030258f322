"""Root checks of a write: exists / not found, ownership, compare-and-swap, capacity, quota.

They run twice: early, against the head read before any upload, so a doomed write stores
nothing; and again under the workspace lock, where they decide. A refused root touches
nothing (docs/write-path.md). Each rule is written once: the compare-and-swap is
`registry/db/heads.py`'s (`compare` here, `swap` when the head moves), capacity is
`check_capacity`, the quota `check_quota`; the figures they compare come from the usage
counters (`registry/db/skills.py`), read with the write context under the lock.

A write that brings a deleted skill back (`WriteRequest.revives`, docs/history.md "Deleted
skills") has its own root check: the slug must have no live skill (`SlugTaken`), and under
the lock `reopen` puts the deleted skill where the live one would be, so the
compare-and-swap, capacity (a slot of its budget again) and quota (its whole package)
follow the same rules.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import heads as db_heads
from registry.db import proposals as db_proposals
from registry.db import publication as db_publication
from registry.db import skills as db_skills
from registry.domain.manifest import Manifest
from registry.domain.model import AnyHead, Origin
from registry.errors import (
    ArchivedSkillNotFound,
    CapacityExceeded,
    HeadConflict,
    OwnershipConflict,
    QuotaExceeded,
    SkillExists,
    SkillNotFound,
    SlugLookAlike,
    SlugTaken,
)
from registry.services.context import Context
from registry.services.write.request import WriteRequest


def early_checks(request: WriteRequest, head: db_skills.SkillRow | None) -> None:
    """Refuse a write that cannot succeed before uploading anything for it.

    The same checks run again under the lock; these only save a doomed write its uploads.
    A write that keeps its draft on a conflict must upload it, so its head is not checked.
    """
    check_root(request, head, cas=not request.keep_draft)


def check_root(
    request: WriteRequest, skill: db_skills.SkillRow | None, *, cas: bool = True
) -> None:
    if request.revives is not None:
        _check_revival(request, skill, cas=cas)
        return
    expected = request.expected_head
    if skill is None:
        if isinstance(expected, int):
            raise SkillNotFound(request.scope.workspace, request.scope.agent, request.slug)
        return
    # Ownership first: an install (expected head None) onto an owner-saved skill is
    # refused as what it is, not as a plain "exists".
    if request.kind == "installed" and skill.kind == "saved":
        raise OwnershipConflict(request.slug, "saved")
    if expected is None:
        raise SkillExists(request.slug, skill.head)
    if not _same_skill(request, skill):
        # The skill the writer read was deleted and the slug taken again: its head number
        # may match, its history does not (the row is in hand: no statement).
        raise HeadConflict(expected if isinstance(expected, int) else None, skill.head)
    if cas and not isinstance(expected, AnyHead):
        db_heads.compare(expected, skill.head)
    if _moves_baseline_back(request, skill):
        # A marketplace write made from an older read: the copy follows a newer listing
        # version since (its baseline moved without a new head). Never back.
        raise HeadConflict(expected if isinstance(expected, int) else None, skill.head)


def _check_revival(request: WriteRequest, skill: db_skills.SkillRow | None, *, cas: bool) -> None:
    """The root check of a write that brings a deleted skill back (`WriteRequest.revives`).

    `skill` is the slug's live skill as the write read it (None: the slug is free), or,
    under the lock, the deleted skill itself once `reopen` put it in place.
    """
    if skill is None:
        return
    expected = request.expected_head
    if skill.id != request.revives:
        assert request.revives is not None
        raise SlugTaken(request.slug, request.revives, skill.id, skill.head)
    if skill.state != "deleted":
        # Another restore brought it back since it was read: its head has moved on.
        raise HeadConflict(expected if isinstance(expected, int) else None, skill.head)
    if cas and isinstance(expected, int):
        db_heads.compare(expected, skill.head)


async def reopen(
    conn: AsyncConnection, request: WriteRequest, found: db_publication.WriteContext
) -> db_publication.WriteContext:
    """Under the lock, the write context of a revival: the deleted skill in the live one's place.

    If the slug has a live skill, `found` is returned as it is and the root check refuses
    it (`SlugTaken`, or `HeadConflict` if it is this very skill, brought back meanwhile).
    Otherwise the deleted skill must still be one of the slug's (`ArchivedSkillNotFound`)
    and its slug must not look like a live skill's (`SlugLookAlike`, checked here, while
    the context still says the slug has no live skill). Costs three statements, only for
    a revival.
    """
    if found.skill is not None or request.revives is None:
        return found
    scope = request.scope
    rows = await db_skills.deleted_skills(conn, scope, request.slug, skill_id=request.revives)
    if not rows:
        raise ArchivedSkillNotFound(scope.workspace, scope.agent, request.slug, request.revives)
    check_look_alike(request, found)
    skill = rows[0]
    head = await db_skills.version(conn, skill, skill.head)
    pending = await db_proposals.pending(conn, skill)
    return replace(
        found,
        skill=skill,
        head_hash=None if head is None else head.manifest_hash,
        has_pending_proposal=pending is not None,
    )


def check_look_alike(request: WriteRequest, found: db_publication.WriteContext) -> None:
    """A new skill whose slug looks like a live skill's of its scope is `SlugLookAlike`.

    Under the lock, so two writers of look-alike slugs cannot both pass; the unique index
    on the skeleton (`uq_skills_live_skeleton`) would refuse the second insert anyway.
    """
    if found.skill is None and found.look_alike is not None:
        raise SlugLookAlike(request.slug, found.look_alike)


def _same_skill(request: WriteRequest, skill: db_skills.SkillRow) -> bool:
    return request.expected_skill is None or skill.id == request.expected_skill


def _moves_baseline_back(request: WriteRequest, skill: db_skills.SkillRow) -> bool:
    """True if the write would move the copy's baseline to an older version of its listing."""
    if request.baseline is None or skill.baseline_version is None:
        return False
    listing, version, _ = request.baseline
    return skill.baseline_listing == listing and skill.baseline_version > version


def check_root_or_keep_draft(request: WriteRequest, skill: db_skills.SkillRow | None) -> int | None:
    """Run the root checks; return the draft's base if a lost CAS keeps the draft.

    Only a moved head keeps the draft: not another skill under the slug.
    """
    try:
        check_root(request, skill)
    except HeadConflict:
        expected = request.expected_head
        if (
            request.keep_draft
            and skill is not None
            and isinstance(expected, int)
            and skill.head != expected
            and _same_skill(request, skill)
        ):
            return expected
        raise
    return None


def slot_needed(request: WriteRequest, skill: db_skills.SkillRow | None) -> str | None:
    """The capacity budget a write takes a new slot in, if it does.

    A new skill takes one in its own budget. A learned version on an installed copy makes
    it the agent's own: it moves into the saved budget (docs/history.md, "Capacity for
    learning").
    """
    if skill is None:
        return request.kind
    if request.revives is not None:
        return skill.kind  # a deleted skill coming back takes a slot of its budget again
    if request.origin is Origin.LEARNING and skill.kind == "installed":
        return "saved"
    return None


async def check_capacity_and_quota(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    manifest: Manifest,
    *,
    known: db_publication.WriteContext | None = None,
) -> None:
    """Refuse a write that needs a slot its budget lacks, or bytes beyond the quota.

    `known` (the write context, read under the same lock) supplies the figures it read,
    so that only a figure it did not read costs a statement here.
    """
    await check_capacity(ctx, conn, request, skill, known=known)
    await check_quota(ctx, conn, request, skill, manifest, known=known)


async def check_capacity(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    *,
    known: db_publication.WriteContext | None = None,
) -> None:
    """Refuse a write that needs a slot in a budget whose scope is full (`CapacityExceeded`)."""
    budget = slot_needed(request, skill)
    if budget is None:
        return
    settings = ctx.settings
    limit = settings.capacity_installed if budget == "installed" else settings.capacity_saved
    live = None
    if known is not None and skill is None and budget == request.kind:
        live = known.live_of_kind
    if live is None:
        live = await db_skills.count_live(conn, request.scope, budget)
    if live >= limit:
        raise CapacityExceeded(limit, budget)


async def check_quota(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    manifest: Manifest,
    *,
    known: db_publication.WriteContext | None = None,
) -> None:
    """Refuse a write that takes the workspace past its quota (`QuotaExceeded`).

    The growth is net of the package the write replaces.
    """
    # A deleted skill's package is not counted: one coming back adds all of its bytes.
    replaced = 0 if skill is None or request.revives is not None else skill.head_size
    growth = manifest.total_size - replaced
    if growth <= 0:
        return
    quota = ctx.settings.workspace_quota_bytes
    used = None if known is None else known.usage
    if used is None:
        used = await db_skills.workspace_usage(conn, request.scope.workspace)
    if used + growth > quota:
        raise QuotaExceeded(quota, used, growth)
