"""Pure history domain: approvals matching, text diffs, the state machine table."""

from __future__ import annotations

import pytest

from registry.domain.approvals import Approval, FindingRef, evaluate
from registry.domain.scanner import Finding
from registry.domain.states import Action, Conditions, SkillState, check
from registry.domain.textdiff import is_text, unified
from registry.errors import FindingNotFound, StateConflict

H1, H2 = "a" * 64, "b" * 64


def f(path, ordinal, digest=H1, cls="github_token"):
    return Finding(path, cls, ordinal, ordinal, digest)


def test_no_findings_pass_with_nothing_kept():
    verdict = evaluate([])
    assert (verdict.blocked, verdict.kept) == (None, ())


def test_an_unapproved_finding_blocks_at_its_path_and_ordinal():
    verdict = evaluate([f("b.md", 1), f("a.md", 2)])
    assert (verdict.blocked.path, verdict.blocked.ordinal) == ("a.md", 2)


def test_approving_by_reference_keeps_an_exact_approval():
    verdict = evaluate([f("a.md", 1)], approve=[FindingRef("a.md", 1)])
    assert verdict.blocked is None
    assert verdict.kept == (Approval("a.md", H1, "github_token", 1),)


def test_inherited_approvals_cover_only_the_same_value_path_and_count():
    allowed = [Approval("a.md", H1, "github_token", 1)]
    assert evaluate([f("a.md", 1)], allowed).blocked is None
    assert evaluate([f("c.md", 1)], allowed).blocked.path == "c.md"  # moved
    assert evaluate([f("a.md", 1), f("a.md", 2)], allowed).blocked.ordinal == 2  # duplicated
    assert evaluate([f("a.md", 1, H2)], allowed).blocked is not None  # a new value


def test_kept_approvals_count_only_occurrences_still_present():
    allowed = [Approval("a.md", H1, "github_token", 3), Approval("gone.md", H2, "jwt", 1)]
    verdict = evaluate([f("a.md", 1)], allowed)
    assert verdict.kept == (Approval("a.md", H1, "github_token", 1),)


def test_approving_a_missing_finding_is_refused():
    with pytest.raises(FindingNotFound):
        evaluate([f("a.md", 1)], approve=[FindingRef("a.md", 2)])


def test_text_detection():
    assert is_text(b"plain\n")
    assert not is_text(b"\0\1\2")
    assert not is_text(b"\xff\xfe")


def test_unified_preview_is_cut_with_a_count_of_what_was_left_out():
    old = b"".join(b"%d\n" % i for i in range(50))
    new = b"".join(b"%d!\n" % i for i in range(50))
    preview = unified(old, new, limit=5)
    assert len(preview.lines) == 5
    assert preview.truncated
    assert preview.omitted == preview.total - 5
    assert not unified(old, new, limit=None).truncated


CLEAN = Conditions(
    learning_paused=False, use_paused=False, auto_improve=True, pending_proposal=False
)


def test_states_are_reported_in_order():
    assert CLEAN.state is SkillState.READY
    both = Conditions(
        learning_paused=True, use_paused=True, auto_improve=False, pending_proposal=True
    )
    assert both.states == [
        SkillState.NEEDS_DECISION,
        SkillState.PAUSED_USE,
        SkillState.PAUSED_LEARNING,
    ]
    blocked = Conditions(False, False, True, False, blocked=True)
    assert blocked.state is SkillState.BLOCKED


@pytest.mark.parametrize(
    ("action", "conditions", "state"),
    [
        (Action.PAUSE, Conditions(True, False, True, False), "paused_learning"),
        (Action.RESUME, CLEAN, "ready"),
        (Action.STOP_USING, Conditions(False, True, True, False), "paused_use"),
        (Action.RESUME_USE, CLEAN, "ready"),
        (Action.RESUME_USE, Conditions(False, True, True, False, blocked=True), "blocked"),
        (Action.AUTO_IMPROVE_ON, CLEAN, "ready"),
        (Action.AUTO_IMPROVE_OFF, Conditions(False, False, False, True), "needs_decision"),
    ],
)
def test_disallowed_transitions(action, conditions, state):
    with pytest.raises(StateConflict) as caught:
        check(action, conditions)
    assert (caught.value.action, caught.value.state) == (action.value, state)


@pytest.mark.parametrize(
    ("action", "conditions"),
    [
        (Action.PAUSE, CLEAN),
        (Action.RESUME, Conditions(True, False, True, False)),
        (Action.STOP_USING, CLEAN),
        (Action.RESUME_USE, Conditions(False, True, True, False, blocked=False)),
        (Action.AUTO_IMPROVE_OFF, CLEAN),
        (Action.AUTO_IMPROVE_ON, Conditions(False, False, False, False)),
        (Action.DELETE, Conditions(True, True, False, True, blocked=True)),
    ],
)
def test_allowed_transitions(action, conditions):
    check(action, conditions)
