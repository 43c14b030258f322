"""The owner's controls and decisions refuse malformed arguments, on both databases.

A Python caller is outside the HTTP schemas and the CLI's choices. A flag was taken for
its truthiness (`set_auto_improve(enabled="false")` turned automatic improvements ON),
a control given as a plain `str` ran without its side work (`control(..., "delete")`
deleted the skill but recorded no suppression), and a decision, `kind` or `policy` that
is none of its values, or one `DecisionRequest` where a sequence belongs, was a plain
`ValueError` or `TypeError`. Each is now `ArgumentInvalid` naming the argument and the
rule (docs/write-path.md, "Arguments"), before any work: nothing changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from registry.api import Registry
from registry.domain.states import Action
from registry.errors import ArgumentInvalid
from registry.services.history.decisions import DecisionRequest
from tests.support.learning import learn, learned
from tests.support.packages import SLUG
from tests.support.scopes import ACME
from tests.support.state import db_state

NOT_FLAGS = ["false", "no", 0, 1, None]
TABLES = ("skills", "versions", "proposals", "events", "suppressions", "pending_writes", "jobs")


async def owned_with_proposal(registry: Registry) -> int:
    """A skill the owner edited (automatic improvements off) with a learning proposal."""
    await registry.write_package(ACME, SLUG, learned(text="a"), expected_head=None, actor="o")
    await registry.write_package(ACME, SLUG, learned(text="b"), expected_head=1, actor="o")
    pub = await learn(registry, learned(text="c"))
    assert pub.proposal is not None
    return pub.proposal


async def refused(
    registry: Registry, call: Callable[[], Awaitable[Any]], argument: str, rule: str
) -> None:
    before = await db_state(registry, TABLES)
    with pytest.raises(ArgumentInvalid) as caught:
        await call()
    assert (caught.value.argument, caught.value.rule) == (argument, rule)
    assert await db_state(registry, TABLES) == before


@pytest.mark.parametrize("value", NOT_FLAGS)
async def test_set_auto_improve_takes_a_bool_only(registry, value):
    await owned_with_proposal(registry)
    call = lambda: registry.set_auto_improve(ACME, SLUG, enabled=value, actor="o")  # noqa: E731
    await refused(registry, call, "enabled", "wrong_type")
    assert not (await registry.skill_status(ACME, SLUG)).auto_improve
    # Still off: a learning write is a proposal, not a version.
    assert (await learn(registry, learned(text="d"))).version == 2


@pytest.mark.parametrize("value", ["delete", "stop_using", None])
async def test_control_takes_an_action(registry, value):
    await owned_with_proposal(registry)
    call = lambda: registry.control(ACME, SLUG, value, actor="o")  # noqa: E731
    await refused(registry, call, "action", "wrong_type")
    assert (await registry.skill_status(ACME, SLUG)).state.value == "needs_decision"
    deleted = await registry.control(ACME, SLUG, Action.DELETE, actor="o")
    assert deleted.state.value == "deleted"


@pytest.mark.parametrize(
    "argument", ["waiting_only", "active_only"], ids=["pending_writes", "suppressions"]
)
async def test_the_learning_lists_take_bool_flags(registry, argument):
    await owned_with_proposal(registry)
    learning = registry.learning
    listing = learning.pending_writes if argument == "waiting_only" else learning.suppressions
    for value in NOT_FLAGS:
        call = lambda: listing(ACME.workspace, **{argument: value})  # noqa: E731,B023
        await refused(registry, call, argument, "wrong_type")
    assert await listing(ACME.workspace, **{argument: False}) == []


async def test_decide_refuses_an_unknown_decision_and_a_non_bool_flag(registry):
    proposal = await owned_with_proposal(registry)
    for decision in ("APPLY", "reject", ""):
        call = lambda: registry.decide(ACME, proposal, decision, actor="o")  # noqa: E731,B023
        await refused(registry, call, "decision", "not_a_choice")
    call = lambda: registry.decide(ACME, proposal, None, actor="o")  # type: ignore[arg-type]  # noqa: E731
    await refused(registry, call, "decision", "wrong_type")
    call = lambda: registry.decide(  # noqa: E731
        ACME, proposal, "apply", actor="o", keep_auto_improve="no"
    )
    await refused(registry, call, "keep_auto_improve", "wrong_type")
    call = lambda: registry.decide(ACME, proposal, "apply", actor="o", files={})  # noqa: E731
    await refused(registry, call, "files", "wrong_type")
    call = lambda: registry.decide(ACME, proposal, "alternative", actor="o")  # noqa: E731
    await refused(registry, call, "files", "wrong_type")
    assert (await registry.proposal(ACME, proposal)).summary.status == "open"
    result = await registry.decide(ACME, proposal, "keep_current", actor="o")
    assert result.status == "rejected"


async def test_decide_many_refuses_the_whole_batch_before_any_decision(registry):
    proposal = await owned_with_proposal(registry)
    decide_many = registry.learning.decide_many
    good = DecisionRequest(proposal, "keep_current")
    cases: list[tuple[object, str, str]] = [
        (good, "requests", "wrong_type"),  # one request, not a sequence of them
        ("apply", "requests", "wrong_type"),
        ([good, proposal], "requests/2", "wrong_type"),
        ([good, DecisionRequest(proposal, "APPLY")], "requests/2.decision", "not_a_choice"),  # type: ignore[arg-type]
        (
            [good, DecisionRequest(proposal, "apply", keep_auto_improve="no")],  # type: ignore[arg-type]
            "requests/2.keep_auto_improve",
            "wrong_type",
        ),
        ([good, DecisionRequest(proposal, "apply", files={})], "requests/2.files", "wrong_type"),
    ]
    for requests, argument, rule in cases:
        call = lambda: decide_many(ACME.workspace, requests, actor="o")  # noqa: E731,B023
        await refused(registry, call, argument, rule)
    (outcome,) = await decide_many(ACME.workspace, (r for r in [good]), actor="o")
    assert outcome.ok


async def test_decisions_refuses_an_unknown_kind(registry):
    await owned_with_proposal(registry)
    for kind in ("x", "Learning"):
        call = lambda: registry.learning.decisions(ACME.workspace, kind=kind)  # noqa: E731,B023
        await refused(registry, call, "kind", "not_a_choice")
    page = await registry.learning.decisions(ACME.workspace, kind="learning")
    assert len(page.items) == 1


@pytest.mark.parametrize("policy", ["x", "MERGE", 1])
async def test_an_update_refuses_an_unknown_policy(registry, policy):
    await owned_with_proposal(registry)
    rule = "wrong_type" if policy == 1 else "not_a_choice"
    for call in (
        lambda: registry.marketplace.enqueue_update(ACME, SLUG, policy=policy),
        lambda: registry.marketplace.update(ACME, SLUG, policy=policy),
    ):
        await refused(registry, call, "policy", rule)
