"""Owner controls and the skill's state.

The controls: pause/resume learning, stop/resume use, automatic improvements on/off and
delete; `status` reports the state machine's state.

Each action is one transaction under the workspace lock: it reads the live skill, checks the
transition against the state machine (`registry.domain.states`; a disallowed one raises
`StateConflict`), updates the skill row and writes exactly one outbox event. No action here
moves the head or touches a version: history is kept as it is (delete included: the
versions stay, listed as archived, and the slug is free for a new skill).

A delete also records a **suppression** of the deleted head's package in its transaction
(docs/history.md, "Suppression"): a later learning write that would bring the skill back
under its slug becomes a proposal marked `suppressed`. Its files are read and sketched
before the lock; if the head moved meanwhile, the delete reads it again. Once the delete
has committed, the scope's pending writes are applied while there is room (its slot is
free now).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import exclusions as db_exclusions
from registry.db import proposals as db_proposals
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.db import suppressions as db_suppressions
from registry.domain.arguments import check_text
from registry.domain.model import Scope, check_slug
from registry.domain.similarity import ChangedFile
from registry.domain.states import Action, Conditions, SkillState, check
from registry.errors import (
    ContentBlocked,
    HeadConflict,
    SkillNotFound,
    VersionRevoked,
    VersionUnavailable,
)
from registry.services.context import Context
from registry.services.learning import pending
from registry.services.read import triggers_of
from registry.services.write import content, suppression

T = TypeVar("T")

# A `resume_use` checks the head it evaluated is still the head under the lock; a write
# that moved it in between makes it evaluate again, at most this often.
_HEAD_RACE_ATTEMPTS: Final = 3

EVENTS: Final = {
    Action.PAUSE: "learning_paused",
    Action.RESUME: "learning_resumed",
    Action.STOP_USING: "use_paused",
    Action.RESUME_USE: "use_resumed",
    Action.AUTO_IMPROVE_ON: "auto_improve_on",
    Action.AUTO_IMPROVE_OFF: "auto_improve_off",
    Action.DELETE: "deleted",
}


@dataclass(frozen=True)
class SkillStatus:
    """A skill's controls and its state in the state machine.

    `blocked` is None when the content check was not evaluated (the result of an action
    other than `resume_use`); `blocked_by` names the first blocking finding (path, pattern
    class, ordinal; never the value). `unavailable_because` names the excluded source that
    makes the head unreadable (docs/history.md), if one does.
    """

    scope: Scope
    slug: str
    head: int
    state: SkillState
    states: list[SkillState]
    auto_improve: bool
    learning_paused: bool
    use_paused: bool
    pause_reason: str | None
    proposal: int | None
    proposal_status: str | None
    blocked: bool | None
    blocked_by: dict[str, object] | None = None
    unavailable_because: str | None = None
    triggers: tuple[str, ...] = ()


async def live_skill(conn: AsyncConnection, scope: Scope, slug: str) -> db_skills.SkillRow:
    skill = await db_skills.live_skill(conn, scope, slug)
    if skill is None:
        raise SkillNotFound(scope.workspace, scope.agent, slug)
    return skill


async def conditions(
    conn: AsyncConnection, skill: db_skills.SkillRow, *, blocked: bool | None = None
) -> tuple[Conditions, db_proposals.ProposalRow | None]:
    pending = await db_proposals.pending(conn, skill)
    return (
        Conditions(
            learning_paused=skill.learning_paused,
            use_paused=skill.use_paused,
            auto_improve=skill.auto_improve,
            pending_proposal=pending is not None,
            blocked=blocked,
        ),
        pending,
    )


def _status(
    scope: Scope,
    skill: db_skills.SkillRow,
    found: Conditions,
    pending: db_proposals.ProposalRow | None,
    checked: HeadCheck | None = None,
) -> SkillStatus:
    blocked_by = None if checked is None else checked.blocked_by
    deleted = skill.state == "deleted"
    return SkillStatus(
        scope=scope,
        slug=skill.slug,
        head=skill.head,
        state=SkillState.DELETED if deleted else found.state,
        states=[SkillState.DELETED] if deleted else found.states,
        auto_improve=skill.auto_improve,
        learning_paused=skill.learning_paused,
        use_paused=skill.use_paused,
        pause_reason=skill.pause_reason,
        proposal=None if pending is None else pending.id,
        proposal_status=None if pending is None else pending.status,
        blocked=found.blocked,
        blocked_by=None if blocked_by is None else blocked_by.details(),
        unavailable_because=None if checked is None else checked.unavailable_because,
    )


@dataclass(frozen=True)
class HeadCheck:
    """The content check of a head: the first blocking finding, or why it cannot be read."""

    head: int
    blocked_by: ContentBlocked | None
    unavailable_because: str | None
    manifest_hash: str = ""
    revoked: VersionRevoked | None = None


async def head_check(ctx: Context, scope: Scope, slug: str) -> HeadCheck:
    """Check the live skill's head under its approvals (not scanned if it is unavailable)."""

    async def work(conn: AsyncConnection) -> tuple[int, Any, Any, str | None, Any]:
        skill = await live_skill(conn, scope, slug)
        row = await db_skills.version(conn, skill, skill.head)
        assert row is not None
        excluded = await db_exclusions.unavailable(conn, scope.workspace, [row.id])
        manifest = await db_skills.manifest_entries(conn, scope.workspace, row.manifest_id)
        approvals = await db_approvals.for_version(conn, scope.workspace, row.id)
        revoked = await db_revocations.of_version(conn, scope.workspace, skill.id, row.number)
        return row.number, manifest, approvals, excluded.get(row.id), revoked

    number, manifest, approvals, unavailable, found = await ctx.read(work)
    revoked = None if found is None else VersionRevoked(slug, number, found.kind, found.reason)
    if unavailable is not None:
        return HeadCheck(number, None, unavailable, manifest.hash, revoked)
    result = await content.verdict(ctx, manifest, None, allowed=approvals)
    return HeadCheck(number, result.blocked, None, manifest.hash, revoked)


async def _status_of(
    conn: AsyncConnection, *, scope: Scope, slug: str, checked: HeadCheck
) -> SkillStatus:
    skill = await live_skill(conn, scope, slug)
    found, pending = await conditions(conn, skill, blocked=checked.blocked_by is not None)
    return _status(scope, skill, found, pending, checked)


async def status(ctx: Context, scope: Scope, slug: str) -> SkillStatus:
    """The skill's controls and state, the content check of its head included."""
    check_slug(slug)
    for _ in range(_HEAD_RACE_ATTEMPTS):
        checked = await head_check(ctx, scope, slug)
        current = await ctx.read(
            functools.partial(_status_of, scope=scope, slug=slug, checked=checked)
        )
        # A write moved the head after it was checked: check the new head.
        if current.head == checked.head:
            break
    found = await triggers_of(ctx, scope.workspace, {checked.manifest_hash: slug})
    return replace(current, triggers=found.get(checked.manifest_hash, ()))


def _pause_reason(reason: str, skill: db_skills.SkillRow, *, still_paused: bool) -> str | None:
    # One reason is kept while either pause holds; the newest pause's reason wins.
    if reason:
        return reason
    return skill.pause_reason if still_paused else None


_CHANGES: Final[dict[Action, Callable[[db_skills.SkillRow, str], dict[str, Any]]]] = {
    Action.PAUSE: lambda skill, reason: {
        "learning_paused": True,
        "pause_reason": _pause_reason(reason, skill, still_paused=True),
    },
    Action.RESUME: lambda skill, _: {
        "learning_paused": False,
        "pause_reason": _pause_reason("", skill, still_paused=skill.use_paused),
    },
    Action.STOP_USING: lambda skill, reason: {
        "use_paused": True,
        "pause_reason": _pause_reason(reason, skill, still_paused=True),
    },
    Action.RESUME_USE: lambda skill, _: {
        "use_paused": False,
        "pause_reason": _pause_reason("", skill, still_paused=skill.learning_paused),
    },
    Action.AUTO_IMPROVE_ON: lambda _skill, _: {"auto_improve": True},
    Action.AUTO_IMPROVE_OFF: lambda _skill, _: {"auto_improve": False},
    Action.DELETE: lambda _skill, _: {"state": "deleted"},
}
"""The skill-row update each action makes."""


def control_changes(action: Action, skill: db_skills.SkillRow, reason: str = "") -> dict[str, Any]:
    """The skill-row update `action` makes (for a service that takes it in its own transaction)."""
    return _CHANGES[action](skill, reason)


class _HeadMoved(Exception):
    """The head changed between the content check and the locked transaction."""

    def __init__(self, checked: int, current: int) -> None:
        super().__init__(checked, current)
        self.checked = checked
        self.current = current


async def act(
    ctx: Context,
    scope: Scope,
    slug: str,
    action: Action,
    *,
    actor: str,
    reason: str = "",
    expected_head: int | None = None,
) -> SkillStatus:
    """Apply an owner control `action` to the live skill `slug` (see the module docstring).

    With `expected_head`, the action is a compare-and-swap on the head: under the lock,
    a head other than `expected_head` raises `HeadConflict` and changes nothing (the
    HTTP API's `If-Match`). `actor` and `reason` follow the rule for text a client sets
    (`check_text`; a reason may hold line breaks).
    """
    check_slug(slug)
    check_text("actor", actor)
    check_text("reason", reason, multiline=True)
    moved = None
    for _ in range(_HEAD_RACE_ATTEMPTS):
        checked = None
        undone = None
        if action is Action.RESUME_USE:
            checked = await head_check(ctx, scope, slug)
            if checked.unavailable_because is not None:
                # Runtimes would load a package that may not be read.
                raise VersionUnavailable(slug, checked.head, checked.unavailable_because)
            if checked.revoked is not None:
                raise checked.revoked  # nor one that was revoked (docs/revocation.md)
        try:
            if action is Action.DELETE:
                undone = await _deleted_behaviour(ctx, scope, slug, expected_head)
            work = functools.partial(
                _act,
                ctx,
                scope=scope,
                slug=slug,
                action=action,
                actor=actor,
                reason=reason,
                checked=checked,
                expected_head=expected_head,
                undone=undone,
            )
            status = await ctx.locked(scope.workspace, work)
        except _HeadMoved as exc:
            moved = exc
            continue
        if action is Action.DELETE:
            await pending.apply_quietly(ctx, scope)
        return status
    assert moved is not None
    raise HeadConflict(moved.checked, moved.current)


@dataclass(frozen=True)
class _Undone:
    """A deleted head's package, as its suppression records it."""

    head: int
    manifest_hash: str
    change: tuple[ChangedFile, ...]


async def _deleted_behaviour(
    ctx: Context, scope: Scope, slug: str, expected_head: int | None
) -> _Undone | None:
    head = await suppression.head_manifest(ctx, scope, slug)
    if head is None:
        return None  # no live skill: the locked transaction says so
    number, manifest = head

    async def vanished() -> None:
        # A blob of the head read is missing: in a snapshot of its own, a head that moved
        # (and whose old blobs GC took) is what the locked check would say, not damage.
        current = await ctx.read(lambda conn: db_skills.live_skill(conn, scope, slug))
        if current is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        if current.head != number:
            if expected_head is not None:
                raise HeadConflict(expected_head, current.head)
            raise _HeadMoved(number, current.head)

    change = await suppression.whole_package(ctx, manifest, vanished=vanished)
    return _Undone(number, manifest.hash, change)


async def _act(
    ctx: Context,
    conn: AsyncConnection,
    *,
    scope: Scope,
    slug: str,
    action: Action,
    actor: str,
    reason: str,
    checked: HeadCheck | None,
    expected_head: int | None = None,
    undone: _Undone | None = None,
) -> SkillStatus:
    now = ctx.clock.now()
    skill = await live_skill(conn, scope, slug)
    if expected_head is not None and skill.head != expected_head:
        raise HeadConflict(expected_head, skill.head)
    if checked is not None and checked.head != skill.head:
        raise _HeadMoved(checked.head, skill.head)
    if undone is not None and undone.head != skill.head:
        raise _HeadMoved(undone.head, skill.head)
    found, _ = await conditions(
        conn, skill, blocked=None if checked is None else checked.blocked_by is not None
    )
    check(action, found)
    changes = _CHANGES[action](skill, reason)
    if action is Action.DELETE:
        changes["deleted_at"] = now
    withdrawn = (
        await db_proposals.withdraw_pending(conn, skill, now) if action is Action.DELETE else []
    )
    if undone is not None:
        await db_suppressions.record(
            conn,
            scope,
            slug,
            skill_id=skill.id,
            cause="delete",
            undone_version=undone.head,
            undone_hash=undone.manifest_hash,
            change=undone.change,
            actor=actor,
            now=now,
        )
    await db_skills.set_controls(conn, skill, changes, now=now)
    await db_skills.insert_event(
        conn,
        scope,
        slug,
        skill_id=skill.id,
        kind=EVENTS[action],
        version=skill.head,
        manifest_hash=None,
        payload={"actor": actor, "reason": reason or None, "withdrawn_proposals": withdrawn},
        now=now,
    )
    updated = await db_skills.skill_by_id(conn, scope.workspace, skill.id)
    assert updated is not None
    after, pending_after = await conditions(conn, updated, blocked=found.blocked)
    return _status(scope, updated, after, pending_after, checked)
