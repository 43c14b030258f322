"""Learning writes are guests: the owner's rules, applied inside the one write path.

An automated write (origin `learning`, no owner decision) goes through the write path like
any other; these functions are where it is treated as a guest (docs/history.md, "Learning
writes"). Outside the lock:

- `check_package`: its `SKILL.md` must carry Steps and a concrete Verification
  (`LearningIncomplete`), before anything is stored;
- `screening`: the `SKILL.md` triggers to index, and the sketches of its text files, to be
  compared with suppressions under the lock (computed only for learning writes).

Under the workspace lock, in the publish transaction:

- `route` decides what the write becomes: a version; a proposal (an owner's draft kept
  after a lost compare-and-swap, a marketplace update of an edited copy, a learning write
  that would bring back a suppressed behaviour, or one to a skill whose automatic
  improvements are off or whose learning is paused); or a pending write (a learning write
  that needs a saved slot the scope does not have, or that would overtake one waiting);
- `record` writes the proposal or the pending write (instead of a version), or answers
  the same write already waiting (a retry) with that one;
- `version_added` runs after a version's rows: closes the pending write it applies,
  lifts the suppression of an applied `suppressed` proposal, records a restore's
  suppression, and moves an installed copy a learned version lands on into the saved
  budget.

An ordinary write pays nothing here: `route` reads suppressions and pending writes only for
learning writes, and every other hook acts only on a field the write sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import learning as db_learning
from registry.db import pending as db_pending
from registry.db import publication as db_publication
from registry.db import skills as db_skills
from registry.db import suppressions as db_suppressions
from registry.domain.approvals import Approval, Verdict
from registry.domain.learned import check_learned
from registry.domain.manifest import Manifest
from registry.domain.model import Origin, PackageFile, Publication
from registry.domain.package import ValidatedPackage
from registry.domain.paths import SKILL_MD
from registry.domain.similarity import CandidateFile, Sketch, reapplies, sketch
from registry.errors import CapacityExceeded, SkillExists, SkillNotFound, StateConflict
from registry.services.context import Context, offloaded
from registry.services.write import diversion, rootchecks
from registry.services.write.request import Screening, WriteRequest

PUBLISH: Final = "publish"
PROPOSE: Final = "propose"
PEND: Final = "pend"


class StillWaiting(Exception):
    """A pending write being applied still finds no saved slot: it keeps waiting."""


class AlreadyApplied(Exception):
    """A pending write being applied finds its package at its skill's head already."""

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(f"the package is already version {version}")


class UndoneMoved(Exception):
    """A restore's head moved after it computed what it undoes: compute it again."""


@dataclass(frozen=True, slots=True)
class Route:
    """What a write becomes (decided under the lock).

    `target` is the skill a proposal is recorded on: the live skill, or the deleted skill
    whose suppression a learning write to its slug matched.
    """

    action: str
    target: db_skills.SkillRow | None = None
    kind: str = "learning"
    suppression: int | None = None
    base: int | None = None


_PUBLISH: Final = Route(PUBLISH)


# ---------------------------------------------------------------- outside the lock


def check_package(request: WriteRequest, package: ValidatedPackage) -> None:
    """Refuse a learning write whose `SKILL.md` lacks Steps or a concrete Verification."""
    if request.origin is Origin.LEARNING:
        check_learned(package.frontmatter.body)


def sketches(files: Mapping[str, PackageFile]) -> tuple[tuple[str, Sketch], ...]:
    """The sketches of the text files among `files` (binary and large ones have none)."""
    out = []
    for path in sorted(files):
        made = sketch(files[path].data)
        if made is not None:
            out.append((path, made))
    return tuple(out)


async def screening(
    request: WriteRequest, package: ValidatedPackage, manifest: Manifest, verdict: Verdict
) -> Screening:
    """The write's screening: the content check's, its `SKILL.md` triggers, its sketches."""
    digest = next(e.digest for e in manifest.entries if e.path == SKILL_MD)
    made: tuple[tuple[str, Sketch], ...] = ()
    if request.automated:
        made = await offloaded(package.total_size, sketches, package.files)
    return replace(
        Screening.of(verdict), document=(digest, package.frontmatter.triggers), sketches=made
    )


# ---------------------------------------------------------------- under the lock


async def route(  # noqa: PLR0917 - the publish transaction's state, passed on as it is
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    manifest: Manifest,
    screening: Screening,
    *,
    draft_base: int | None,
    known: db_publication.WriteContext | None = None,
) -> Route:
    """What the write becomes; checks capacity and quota for a write that publishes.

    `known` is the write context, whose capacity and quota figures spare their reads.

    Raises `StillWaiting` for a pending write applied without room, `AlreadyApplied` for
    one whose package its skill's head already is (a duplicate recorded before retries
    were merged: no second version), `UndoneMoved` for a restore whose head moved since
    it read it.
    """
    undoes = request.undoes
    if undoes is not None and skill is not None and skill.head != undoes.version:
        raise UndoneMoved
    if request.applies_pending is not None:
        await _check_pending_skill(conn, request, skill)
        if skill is not None and known is not None and known.head_hash == manifest.hash:
            raise AlreadyApplied(skill.head)
    if draft_base is not None:
        assert skill is not None
        return Route(PROPOSE, skill, "draft", base=draft_base)
    if skill is not None and request.decides is None and request.propose:
        return Route(PROPOSE, skill, "update", base=skill.head)
    if request.automated:
        guarded = await _guest_route(conn, request, skill, manifest, screening)
        if guarded is not None:
            return guarded
    if not await _admitted(ctx, conn, request, skill, manifest, known=known):
        return Route(PEND, skill)
    return _PUBLISH


async def _check_pending_skill(
    conn: AsyncConnection, request: WriteRequest, skill: db_skills.SkillRow | None
) -> None:
    """A waiting write applies only to the skill it was made for (or to no skill).

    Its expected head may match another skill's (the copy was deleted and the slug got a
    new skill at the same number), or be `any` (a write recorded before heads were
    pinned): the skill's id decides. The refusal closes it as `failed`.
    """
    assert request.applies_pending is not None
    pending = await db_pending.get(conn, request.scope.workspace, request.applies_pending)
    if pending is None or pending.status != "waiting":
        # The owner dropped it between the read and the lock: nothing to apply.
        raise StateConflict("apply pending write", "dropped" if pending else "missing")
    if skill is None:
        if pending.skill_id is not None:
            raise SkillNotFound(request.scope.workspace, request.scope.agent, request.slug)
    elif skill.id != pending.skill_id:
        raise SkillExists(request.slug, skill.head)


async def _guest_route(
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    manifest: Manifest,
    screening: Screening,
) -> Route | None:
    """A learning write's proposal, if the owner's rules make it one."""
    matched = await _suppression(conn, request, manifest, screening)
    if matched is not None:
        target = skill or await db_skills.skill_by_id(
            conn, request.scope.workspace, matched.skill_id
        )
        assert target is not None
        return Route(PROPOSE, target, "suppressed", matched.id, base=target.head)
    if skill is not None and (not skill.auto_improve or skill.learning_paused):
        return Route(PROPOSE, skill, "learning", base=skill.head)
    return None


async def _suppression(
    conn: AsyncConnection, request: WriteRequest, manifest: Manifest, screening: Screening
) -> db_suppressions.SuppressionRow | None:
    """The newest active suppression of the slug that this package would bring back."""
    found = await db_suppressions.active_for(conn, request.scope, request.slug)
    if not found:
        return None
    made = dict(screening.sketches)
    candidate = {e.path: CandidateFile(e.digest, made.get(e.path)) for e in manifest.entries}
    for row in found:
        if row.undone_hash == manifest.hash or reapplies(row.changed_files(), candidate):
            return row
    return None


async def _admitted(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    manifest: Manifest,
    *,
    known: db_publication.WriteContext | None,
) -> bool:
    """Capacity and quota; False: an automated write must wait for a saved slot."""
    waits = request.automated and rootchecks.slot_needed(request, skill) == "saved"
    if not waits:
        await rootchecks.check_capacity_and_quota(ctx, conn, request, skill, manifest, known=known)
        return True
    # In order: a learning write does not overtake one that waits for a slot.
    if await db_pending.waiting_before(conn, request.scope, request.applies_pending):
        admitted = False
    else:
        try:
            await rootchecks.check_capacity_and_quota(
                ctx, conn, request, skill, manifest, known=known
            )
        except CapacityExceeded:
            admitted = False
        else:
            admitted = True
    if not admitted and request.applies_pending is not None:
        raise StillWaiting
    return admitted


async def record(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    chosen: Route,
    *,
    approvals: Sequence[Approval],
    manifest: Manifest,
    manifest_id: int,
    write_id: str,
    now: datetime,
) -> Publication:
    """Record the proposal or the pending write the route chose (instead of a version)."""
    if chosen.action == PROPOSE:
        assert chosen.target is not None
        assert chosen.base is not None
        published = await diversion.propose(
            ctx,
            conn,
            request,
            chosen.target,
            approvals=approvals,
            manifest=manifest,
            manifest_id=manifest_id,
            base=chosen.base,
            write_id=write_id,
            now=now,
            kind=chosen.kind,
            suppression=chosen.suppression,
        )
        if request.applies_pending is not None and published.proposal is not None:
            await _close_pending(conn, request, "proposed", {"proposal": published.proposal}, now)
        return published
    return await _record_pending(
        ctx,
        conn,
        request,
        chosen.target,
        approvals=approvals,
        manifest=manifest,
        manifest_id=manifest_id,
        write_id=write_id,
        now=now,
    )


def expected_text(skill: db_skills.SkillRow | None) -> str:
    """The head a pending write expects: what its lock saw, `new` (no skill) or `N`.

    Never `any`: a waiting write belongs to the skill it was made for (or to no skill),
    whatever the write expected.
    """
    return "new" if skill is None else str(skill.head)


async def _record_pending(
    ctx: Context,
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    *,
    approvals: Sequence[Approval],
    manifest: Manifest,
    manifest_id: int,
    write_id: str,
    now: datetime,
) -> Publication:
    skill_id, expected = (None if skill is None else skill.id), expected_text(skill)
    repeated = await db_pending.waiting_same(
        conn,
        request.scope,
        request.slug,
        skill_id=skill_id,
        expected=expected,
        manifest_hash=manifest.hash,
    )
    if repeated is not None:
        # The same write again (a retry after a lost reply): the one already waiting.
        return _pending_publication(skill, manifest, repeated, now)
    pending_id = await db_pending.record(
        conn,
        request.scope,
        request.slug,
        skill_id=skill_id,
        expected=expected,
        manifest_id=manifest_id,
        manifest=manifest,
        origin=request.origin.value,
        actor=request.actor,
        message=request.message,
        sources=request.sources,
        approvals=approvals,
        write_id=write_id,
        now=now,
    )
    await ctx.hit("publish.pending_rows")
    await db_skills.insert_event(
        conn,
        request.scope,
        request.slug,
        skill_id=skill_id,
        kind="write_pending",
        version=None if skill is None else skill.head,
        manifest_hash=manifest.hash,
        payload={
            "pending": pending_id,
            "origin": request.origin.value,
            "actor": request.actor,
            "reason": "capacity",
            "files": manifest.file_count,
            "bytes": manifest.total_size,
        },
        now=now,
    )
    return _pending_publication(skill, manifest, pending_id, now)


def _pending_publication(
    skill: db_skills.SkillRow | None, manifest: Manifest, pending_id: int, now: datetime
) -> Publication:
    return Publication(
        version=0 if skill is None else skill.head,
        manifest_hash=manifest.hash,
        created=False,
        retired=None,
        unchanged=False,
        committed_at=now,
        pending=pending_id,
    )


async def _close_pending(
    conn: AsyncConnection,
    request: WriteRequest,
    status: str,
    outcome: dict[str, object],
    now: datetime,
) -> None:
    assert request.applies_pending is not None
    pending = await db_pending.get(conn, request.scope.workspace, request.applies_pending)
    if pending is None or pending.status != "waiting":
        # The owner dropped it between the read and the lock: nothing to apply.
        raise StateConflict("apply pending write", "dropped" if pending else "missing")
    await db_pending.close(conn, pending, status=status, outcome=dict(outcome), now=now)


async def version_added(
    conn: AsyncConnection,
    request: WriteRequest,
    skill: db_skills.SkillRow | None,
    *,
    skill_id: int,
    number: int,
    decided_suppression: int | None,
    now: datetime,
) -> None:
    """The learning bookkeeping of a new version (see the module docstring)."""
    if request.applies_pending is not None:
        await _close_pending(conn, request, "applied", {"version": number}, now)
    if decided_suppression is not None:
        await db_suppressions.lift(
            conn,
            request.scope.workspace,
            decided_suppression,
            actor=request.decides.actor if request.decides else request.actor,
            now=now,
        )
    if request.revives is not None:
        # The owner took the delete back: its suppression no longer says what they want.
        await db_suppressions.lift_deleted(
            conn, request.scope.workspace, skill_id, actor=request.actor, now=now
        )
    if request.undoes is not None and not request.repair:
        await db_suppressions.record(
            conn,
            request.scope,
            request.slug,
            skill_id=skill_id,
            cause="restore",
            undone_version=request.undoes.version,
            undone_hash=request.undoes.manifest_hash,
            change=request.undoes.change,
            actor=request.actor,
            now=now,
        )
    if skill is not None and skill.kind == "installed" and request.origin is Origin.LEARNING:
        await db_learning.move_to_saved(conn, skill, now)
