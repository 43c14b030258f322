"""The skill state machine: states, actions, and which action each state allows.

A live skill's state is derived from its flags and its proposals; several conditions can
hold at once (learning paused while a proposal waits, say), and the *state* reported is the
first that holds in this order:

    blocked          the head fails the current content check (an approval can clear it)
    needs_decision   a proposal is pending (open or stale)
    paused_use       use stopped: runtimes do not load the skill
    paused_learning  learning paused: automated writes become proposals
    ready            none of the above

`deleted` is the skill row's own state after `delete` (its slug is free again), and every
version of a deleted skill is listed as `archived`. An action on a slug with no live skill
is `SkillNotFound`, like an action in another workspace.

`check(action, conditions)` raises `StateConflict(action, state)` for a transition the table
below does not allow. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from registry.errors import StateConflict


class SkillState(StrEnum):
    """The states of the state machine (docs/history.md)."""

    READY = "ready"
    NEEDS_DECISION = "needs_decision"
    BLOCKED = "blocked"
    PAUSED_LEARNING = "paused_learning"
    PAUSED_USE = "paused_use"
    ARCHIVED = "archived"
    DELETED = "deleted"


class Action(StrEnum):
    """The owner actions the state machine governs."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP_USING = "stop_using"
    RESUME_USE = "resume_use"
    AUTO_IMPROVE_ON = "auto_improve_on"
    AUTO_IMPROVE_OFF = "auto_improve_off"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Conditions:
    """What holds for a live skill. `blocked` is None when it was not evaluated."""

    learning_paused: bool
    use_paused: bool
    auto_improve: bool
    pending_proposal: bool
    blocked: bool | None = None

    @property
    def states(self) -> list[SkillState]:
        """Every state that holds, in reporting order (`ready` if none does)."""
        held = [
            (bool(self.blocked), SkillState.BLOCKED),
            (self.pending_proposal, SkillState.NEEDS_DECISION),
            (self.use_paused, SkillState.PAUSED_USE),
            (self.learning_paused, SkillState.PAUSED_LEARNING),
        ]
        return [state for holds, state in held if holds] or [SkillState.READY]

    @property
    def state(self) -> SkillState:
        """The state reported for the skill."""
        return self.states[0]


# action -> (the condition that refuses it, the state the refusal names); None names the
# skill's reported state.
_REFUSED: dict[Action, tuple[Callable[[Conditions], bool], SkillState | None]] = {
    Action.PAUSE: (lambda c: c.learning_paused, SkillState.PAUSED_LEARNING),
    Action.RESUME: (lambda c: not c.learning_paused, None),
    Action.STOP_USING: (lambda c: c.use_paused, SkillState.PAUSED_USE),
    Action.RESUME_USE: (lambda c: not c.use_paused, None),
    Action.AUTO_IMPROVE_ON: (lambda c: c.auto_improve, None),
    Action.AUTO_IMPROVE_OFF: (lambda c: not c.auto_improve, None),
}


def check(action: Action, conditions: Conditions) -> None:
    """Raise `StateConflict` if `action` is not allowed under `conditions`.

    `resume_use` is also refused while the head is blocked by the content check (the
    caller evaluates `blocked` for it): a blocked package must not be loaded again.
    """
    if action is Action.RESUME_USE and conditions.blocked:
        raise StateConflict(action.value, SkillState.BLOCKED.value)
    refused = _REFUSED.get(action)
    if refused is None:
        return
    refuses, named = refused
    if refuses(conditions):
        raise StateConflict(action.value, (named or conditions.state).value)
