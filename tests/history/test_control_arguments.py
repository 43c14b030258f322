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


Call = Callable[[], Awaitable[Any]]


def malformed_calls(registry: Registry, proposal: int) -> list[tuple[str, Call, str, str]]:
    """(case, call, the argument the refusal names, its rule), for every malformed argument."""
    learning = registry.learning
    lists = {"waiting_only": learning.pending_writes, "active_only": learning.suppressions}
    good = DecisionRequest(proposal, "keep_current")
    cases: list[tuple[str, Call, str, str]] = []
    for value in NOT_FLAGS:
        cases.append(
            (
                f"set_auto_improve(enabled={value!r})",
                lambda v=value: registry.set_auto_improve(ACME, SLUG, enabled=v, actor="o"),
                "enabled",
                "wrong_type",
            )
        )
        for flag, listing in lists.items():
            cases.append(
                (
                    f"{flag}={value!r}",
                    lambda v=value, f=flag, list_=listing: list_(ACME.workspace, **{f: v}),
                    flag,
                    "wrong_type",
                )
            )
    # A plain string is no `Action`: it would skip the action's side work.
    cases.extend(
        (
            f"control({value!r})",
            lambda v=value: registry.control(ACME, SLUG, v, actor="o"),
            "action",
            "wrong_type",
        )
        for value in ("delete", "stop_using", None)
    )
    decide = registry.decide
    cases.extend(
        (
            f"decide({decision!r})",
            lambda d=decision: decide(ACME, proposal, d, actor="o"),
            "decision",
            "not_a_choice",
        )
        for decision in ("APPLY", "reject", "")
    )
    cases += [
        ("decide(None)", lambda: decide(ACME, proposal, None, actor="o"), "decision", "wrong_type"),  # type: ignore[arg-type]
        (
            "decide(keep_auto_improve='no')",
            lambda: decide(ACME, proposal, "apply", actor="o", keep_auto_improve="no"),
            "keep_auto_improve",
            "wrong_type",
        ),
        (
            "decide(files={})",
            lambda: decide(ACME, proposal, "apply", actor="o", files={}),
            "files",
            "wrong_type",
        ),
        (
            "decide('alternative') without files",
            lambda: decide(ACME, proposal, "alternative", actor="o"),
            "files",
            "wrong_type",
        ),
    ]
    # A batch is refused whole, before any decision in it.
    batches: list[tuple[str, object, str, str]] = [
        ("one request, not a sequence", good, "requests", "wrong_type"),
        ("a string", "apply", "requests", "wrong_type"),
        ("an id", [good, proposal], "requests/2", "wrong_type"),
        (
            "a decision",
            [good, DecisionRequest(proposal, "APPLY")],  # type: ignore[arg-type]
            "requests/2.decision",
            "not_a_choice",
        ),
        (
            "a flag",
            [good, DecisionRequest(proposal, "apply", keep_auto_improve="no")],  # type: ignore[arg-type]
            "requests/2.keep_auto_improve",
            "wrong_type",
        ),
        (
            "files",
            [good, DecisionRequest(proposal, "apply", files={})],
            "requests/2.files",
            "wrong_type",
        ),
    ]
    for name, requests, argument, rule in batches:
        cases.append(
            (
                f"decide_many: {name}",
                lambda r=requests: learning.decide_many(ACME.workspace, r, actor="o"),
                argument,
                rule,
            )
        )
    for kind in ("x", "Learning"):
        cases.append(
            (
                f"decisions(kind={kind!r})",
                lambda k=kind: learning.decisions(ACME.workspace, kind=k),
                "kind",
                "not_a_choice",
            )
        )
    market = registry.marketplace
    for policy in ("x", "MERGE", 1):
        rule = "wrong_type" if policy == 1 else "not_a_choice"
        cases += [
            (
                f"enqueue_update(policy={policy!r})",
                lambda p=policy: market.enqueue_update(ACME, SLUG, policy=p),
                "policy",
                rule,
            ),
            (
                f"update(policy={policy!r})",
                lambda p=policy: market.update(ACME, SLUG, policy=p),
                "policy",
                rule,
            ),
        ]
    return cases


async def refusal(call: Call) -> ArgumentInvalid | None:
    try:
        await call()
    except ArgumentInvalid as error:
        return error
    return None


async def test_every_malformed_argument_is_refused_before_any_work(registry):
    proposal = await owned_with_proposal(registry)
    before = await db_state(registry, TABLES)
    for case, call, argument, rule in malformed_calls(registry, proposal):
        refused = await refusal(call)
        assert refused is not None, f"{case} was not refused"
        assert (refused.argument, refused.rule) == (argument, rule), case
        assert await db_state(registry, TABLES) == before, f"{case} changed the database"

    # Nothing ran: the same calls, well formed, work on what the refusals left.
    status = await registry.skill_status(ACME, SLUG)
    assert (status.auto_improve, status.state.value) == (False, "needs_decision")
    assert await registry.learning.pending_writes(ACME.workspace, waiting_only=False) == []
    assert await registry.learning.suppressions(ACME.workspace, active_only=False) == []
    page = await registry.learning.decisions(ACME.workspace, kind="learning")
    assert len(page.items) == 1
    assert (await registry.proposal(ACME, proposal)).summary.status == "open"
    batch = (r for r in [DecisionRequest(proposal, "keep_current")])  # any iterable
    (outcome,) = await registry.learning.decide_many(ACME.workspace, batch, actor="o")
    assert outcome.ok
    # Automatic improvements still off: a learning write is a proposal, not a version.
    again = await learn(registry, learned(text="d"))
    assert (again.version, again.proposal is not None) == (2, True)
    assert again.proposal is not None
    result = await registry.decide(ACME, again.proposal, "keep_current", actor="o")
    assert result.status == "rejected"
    deleted = await registry.control(ACME, SLUG, Action.DELETE, actor="o")
    assert deleted.state.value == "deleted"
