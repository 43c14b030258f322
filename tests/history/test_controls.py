"""Owner controls: the state machine's transitions, one event per action, isolation."""

from __future__ import annotations

import pytest

from registry import Origin, Scope
from registry.errors import SkillNotFound, StateConflict
from tests.support.history import event_count, events
from tests.support.packages import SLUG, package
from tests.support.scopes import ACME, OTHER
from tests.support.state import db_state


async def create(registry, scope=ACME):
    await registry.write_package(scope, SLUG, package(SLUG), expected_head=None, actor="u")


async def test_pause_and_resume_learning(registry):
    await create(registry)
    paused = await registry.pause_learning(ACME, SLUG, actor="owner", reason="noisy")
    assert (paused.state, paused.learning_paused, paused.pause_reason) == (
        "paused_learning",
        True,
        "noisy",
    )
    resumed = await registry.resume_learning(ACME, SLUG, actor="owner")
    assert (resumed.state, resumed.learning_paused, resumed.pause_reason) == ("ready", False, None)


async def test_stop_using_and_resume_use_keep_history(registry):
    await create(registry)
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    stopped = await registry.stop_using(ACME, SLUG, actor="owner")
    assert (stopped.state, stopped.use_paused) == ("paused_use", True)
    assert [v.number for v in (await registry.history(ACME, SLUG)).items] == [2, 1]
    summary = (await registry.list_skills(ACME)).items[0]
    assert summary.use_paused
    resumed = await registry.resume_use(ACME, SLUG, actor="owner")
    assert (resumed.state, resumed.use_paused, resumed.blocked) == ("ready", False, False)


async def test_automatic_improvements_can_be_turned_back_on(registry):
    await create(registry)
    await registry.edit(ACME, SLUG, package(SLUG, tag="e"), base_version=1, actor="owner")
    status = await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="owner")
    assert status.auto_improve
    pub = await registry.write_package(
        ACME, SLUG, package(SLUG, tag="l"), expected_head=2, origin=Origin.LEARNING, actor="job"
    )
    assert (pub.version, pub.proposal) == (3, None)


async def test_states_combine_and_report_in_order(registry):
    await create(registry)
    await registry.edit(ACME, SLUG, package(SLUG, tag="e"), base_version=1, actor="owner")
    await registry.pause_learning(ACME, SLUG, actor="owner")
    await registry.stop_using(ACME, SLUG, actor="owner")
    await registry.write_package(
        ACME, SLUG, package(SLUG, tag="l"), expected_head=2, origin=Origin.LEARNING, actor="job"
    )
    status = await registry.skill_status(ACME, SLUG)
    assert status.states == ["needs_decision", "paused_use", "paused_learning"]
    assert status.state == "needs_decision"


async def pause(registry, slug):
    await registry.pause_learning(ACME, slug, actor="o")


async def stop(registry, slug):
    await registry.stop_using(ACME, slug, actor="o")


async def auto_off(registry, slug):
    await registry.set_auto_improve(ACME, slug, enabled=False, actor="o")


async def nothing(registry, slug):
    return None


DISALLOWED = [
    # (setup, action, the state the refusal names)
    (pause, lambda r, s: r.pause_learning(ACME, s, actor="o"), "paused_learning"),
    (nothing, lambda r, s: r.resume_learning(ACME, s, actor="o"), "ready"),
    (stop, lambda r, s: r.stop_using(ACME, s, actor="o"), "paused_use"),
    (nothing, lambda r, s: r.resume_use(ACME, s, actor="o"), "ready"),
    (pause, lambda r, s: r.resume_use(ACME, s, actor="o"), "paused_learning"),
    (stop, lambda r, s: r.resume_learning(ACME, s, actor="o"), "paused_use"),
    (nothing, lambda r, s: r.set_auto_improve(ACME, s, enabled=True, actor="o"), "ready"),
    (auto_off, lambda r, s: r.set_auto_improve(ACME, s, enabled=False, actor="o"), "ready"),
]


async def test_every_disallowed_transition_is_refused_and_changes_nothing(registry):
    # One skill per case, all set up first: each refusal must leave every one of them as it was.
    slugs = [f"skill-{i}" for i in range(len(DISALLOWED))]
    for slug, (setup, _, _) in zip(slugs, DISALLOWED, strict=True):
        await registry.write_package(ACME, slug, package(slug), expected_head=None, actor="u")
        await setup(registry, slug)
    before = await db_state(registry)
    for slug, (setup, action, state) in zip(slugs, DISALLOWED, strict=True):
        case = f"{setup.__name__} then refused on {slug}"
        with pytest.raises(StateConflict) as caught:
            await action(registry, slug)
        assert caught.value.state == state, case
        assert await db_state(registry) == before, case


async def test_actions_on_a_deleted_skill_are_not_found(registry):
    await create(registry)
    await registry.delete(ACME, SLUG, actor="o")
    for action in (
        lambda: registry.delete(ACME, SLUG, actor="o"),
        lambda: registry.pause_learning(ACME, SLUG, actor="o"),
        lambda: registry.stop_using(ACME, SLUG, actor="o"),
        lambda: registry.restore(ACME, SLUG, 1, expected_head=1, actor="o"),
        lambda: registry.edit(ACME, SLUG, package(SLUG), base_version=1, actor="o"),
        lambda: registry.skill_status(ACME, SLUG),
    ):
        with pytest.raises(SkillNotFound):
            await action()


# In this order, each action is allowed after the ones before it (head 2 at the start).
ACTIONS = {
    "pause": lambda r, s: r.pause_learning(s, SLUG, actor="o"),
    "resume": lambda r, s: r.resume_learning(s, SLUG, actor="o"),
    "stop_using": lambda r, s: r.stop_using(s, SLUG, actor="o"),
    "resume_use": lambda r, s: r.resume_use(s, SLUG, actor="o"),
    "edit": lambda r, s: r.edit(s, SLUG, package(SLUG, tag="e"), base_version=2, actor="o"),
    "learn": lambda r, s: r.write_package(
        s, SLUG, package(SLUG, tag="l"), expected_head=3, origin=Origin.LEARNING, actor="j"
    ),
    "auto_improve_on": lambda r, s: r.set_auto_improve(s, SLUG, enabled=True, actor="o"),
    "auto_improve_off": lambda r, s: r.set_auto_improve(s, SLUG, enabled=False, actor="o"),
    "restore": lambda r, s: r.restore(s, SLUG, 1, expected_head=3, actor="o"),
    "delete": lambda r, s: r.delete(s, SLUG, actor="o"),
}
EXPECTED_EVENTS = {
    "pause": "learning_paused",
    "resume": "learning_resumed",
    "stop_using": "use_paused",
    "resume_use": "use_resumed",
    "edit": "published",
    "learn": "proposed",
    "auto_improve_on": "auto_improve_on",
    "auto_improve_off": "auto_improve_off",
    "restore": "restored",
    "delete": "deleted",
}


async def test_every_action_writes_exactly_one_event(registry):
    await create(registry)
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    for name, action in ACTIONS.items():
        count = await event_count(registry)
        await action(registry, ACME)
        assert await event_count(registry) == count + 1, name
        assert (await events(registry))[-1] == ("acme", SLUG, EXPECTED_EVENTS[name]), name


async def test_every_action_across_workspaces_behaves_as_not_found(registry):
    await create(registry)
    await registry.write_package(ACME, SLUG, package(SLUG, tag="2"), expected_head=1, actor="u")
    await registry.stop_using(ACME, SLUG, actor="o")
    await registry.pause_learning(ACME, SLUG, actor="o")
    before = await db_state(registry)
    for scope in (OTHER, Scope("acme", "helper")):
        for name, action in ACTIONS.items():
            with pytest.raises(SkillNotFound):
                await action(registry, scope)
            assert await db_state(registry) == before, name
        for call in (
            lambda s: registry.history(s, SLUG),
            lambda s: registry.skill_status(s, SLUG),
            lambda s: registry.diff(s, SLUG, 1, 2),
            lambda s: registry.read_package(s, SLUG, 1),
        ):
            with pytest.raises(SkillNotFound):
                await call(scope)
