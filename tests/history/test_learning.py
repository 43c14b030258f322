"""The owner's rules over learning writes, through the library (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from registry import Origin
from registry.errors import (
    CapacityExceeded,
    FrontmatterInvalid,
    LearningIncomplete,
    StateConflict,
    VersionNotFound,
)
from registry.services.history.decisions import DecisionRequest
from registry.settings import Settings
from tests.corpus.archives import LISTING, good_zip
from tests.marketplace.support import LISTING as MARKET_LISTING
from tests.marketplace.support import publish_listing
from tests.support.history import events
from tests.support.learning import learn, learned, learned_md, prose
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import WRITE_TABLES, db_state, store_digests

# ---------------------------------------------------------------- rule 1: human edits


async def test_a_human_write_turns_automatic_improvements_off_unless_kept(registry):
    for keep in (False, True):
        slug = f"kept-{str(keep).lower()}"
        await registry.write_package(
            ACME, slug, learned(slug, text="a"), expected_head=None, actor="u"
        )
        assert (await registry.skill_status(ACME, slug)).auto_improve, slug  # a new skill: on
        await registry.write_package(
            ACME,
            slug,
            learned(slug, text="b"),
            expected_head=1,
            actor="owner",
            keep_auto_improve=keep,
        )
        assert (await registry.skill_status(ACME, slug)).auto_improve is keep, slug
        pub = await learn(registry, learned(slug, text="c"), slug=slug)
        assert (pub.proposal is None) is keep, slug
        if not keep:
            assert pub.proposal_kind == "learning"


async def test_saves_and_learning_leave_the_controls_alone(registry):
    await registry.write_package(ACME, SLUG, learned(text="a"), expected_head=None, actor="u")
    await registry.write_package(
        ACME, SLUG, learned(text="b"), expected_head=1, actor="agent", origin=Origin.SAVE
    )
    pub = await learn(registry, learned(text="c"))
    assert (pub.version, pub.created) == (3, True)
    assert (await registry.skill_status(ACME, SLUG)).auto_improve


# ---------------------------------------------------------------- rule 2: imports, installs


async def test_a_learning_write_to_an_imported_skill_is_a_proposal(registry):
    await registry.write_package(
        ACME, SLUG, learned(text="a"), expected_head=None, actor="u", origin=Origin.IMPORT
    )
    assert not (await registry.skill_status(ACME, SLUG)).auto_improve
    pub = await learn(registry, learned(text="b"))
    assert (pub.proposal is not None, pub.version) == (True, 1)
    await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="owner")
    assert (await learn(registry, learned(text="c"))).version == 2


# ---------------------------------------------------------------- rule 5: Steps, Verification


INCOMPLETE = [
    # (the sections of SKILL.md, the one the refusal names)
    ("", "Steps"),
    ("## Steps\n\n1. Run it.\n", "Verification"),
    ("## Steps\n\n\n## Verification\n\nThe file exists and is complete.\n", "Steps"),
    ("## Steps\n\n1. Run it.\n\n## Verification\n\nTODO: write the checks here\n", "Verification"),
    ("## Steps\n\n1. Run it.\n\n## Verification\n\nLooks fine.\n", "Verification"),
    ("```\n## Steps\n```\n## Verification\n\nThe file exists and is complete.\n", "Steps"),
]


async def test_a_learning_write_without_steps_or_verification_is_refused_storing_nothing(
    registry, local_store
):
    before = await db_state(registry, WRITE_TABLES)
    stored = await store_digests(local_store)
    packages = {}
    for i, (sections, missing) in enumerate(INCOMPLETE):
        slug = f"incomplete-{i}"
        packages[slug] = files = {"SKILL.md": learned_md(slug, sections=sections)}
        with pytest.raises(LearningIncomplete) as info:
            await learn(registry, files, slug=slug, expected=None)
        assert info.value.section == missing, sections
        assert await db_state(registry, WRITE_TABLES) == before, sections
        assert await store_digests(local_store) == stored, sections
    # Other origins are not affected.
    for slug, files in packages.items():
        await registry.write_package(ACME, slug, files, expected_head=None, actor="u")


async def test_a_command_in_a_code_block_is_a_concrete_verification(registry):
    sections = "## Steps\n\n1. Run it.\n\n### Verification:\n\n```sh\npytest -q\n```\n"
    pub = await learn(registry, {"SKILL.md": learned_md(sections=sections)}, expected=None)
    assert pub.version == 1


# ---------------------------------------------------------------- rule 3: suppression


async def _learned_twice(registry):
    """v1 by a person (improvements kept on), v2 learned on top of it."""
    await registry.write_package(ACME, SLUG, learned(text=prose(1)), expected_head=None, actor="u")
    pub = await learn(registry, learned(text=prose(1) + " " + prose(2, 20), script=b"print(2)\n"))
    assert pub.version == 2


async def test_a_restore_suppresses_the_change_it_undid(registry):
    await _learned_twice(registry)
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    (suppression,) = await registry.learning.suppressions(ACME.workspace)
    assert (suppression.cause, suppression.undone_version, suppression.paths) == (
        "restore",
        2,
        ["SKILL.md", "scripts/run.py"],
    )
    await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="owner")
    # The same package again, and a near-identical one (one word changed): suppressed.
    again = await learn(registry, learned(text=prose(1) + " " + prose(2, 20), script=b"print(2)\n"))
    assert (again.proposal_kind, again.version) == ("suppressed", 3)
    near = await learn(
        registry, learned(text=prose(1) + " " + prose(2, 20) + " more", script=b"print(2)\n")
    )
    assert near.proposal_kind == "suppressed"
    decision = (await registry.learning.decisions(ACME.workspace, kind="suppressed")).items
    assert [(d.id, d.suppression) for d in decision] == [(near.proposal, suppression.id)]
    # A genuinely different change publishes.
    other = await learn(registry, learned(text=prose(7), script=b"print(7)\n"))
    assert (other.version, other.proposal) == (4, None)


async def test_keeping_the_restored_text_is_not_a_reapplication(registry):
    await _learned_twice(registry)
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="owner")
    # The restored SKILL.md (close to the undone one) with a new script: not suppressed.
    pub = await learn(registry, learned(text=prose(1), script=b"print('new')\n"))
    assert pub.proposal is None


async def test_applying_a_suppressed_proposal_lifts_its_suppression(registry):
    await _learned_twice(registry)
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    again = await learn(registry, learned(text=prose(1) + " " + prose(2, 20), script=b"print(2)\n"))
    result = await registry.decide(ACME, again.proposal, "apply", actor="owner")
    assert result.publication.version == 4
    assert await registry.learning.suppressions(ACME.workspace) == []


async def test_an_alternative_to_a_suppressed_proposal_keeps_its_suppression(registry):
    await _learned_twice(registry)
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    (suppression,) = await registry.learning.suppressions(ACME.workspace)
    undone = learned(text=prose(1) + " " + prose(2, 20), script=b"print(2)\n")
    again = await learn(registry, undone)
    assert again.proposal_kind == "suppressed"
    # The owner publishes their own package instead of the learned one.
    result = await registry.decide(
        ACME,
        again.proposal,
        "alternative",
        actor="owner",
        files=learned(text=prose(1) + " " + prose(9, 20)),
    )
    assert result.publication.version == 4
    assert [s.id for s in await registry.learning.suppressions(ACME.workspace)] == [suppression.id]
    # The change the owner restored away still needs their decision.
    await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="owner")
    back = await learn(registry, undone)
    assert (back.proposal_kind, back.version) == ("suppressed", 4)


async def test_a_fallback_restore_after_a_source_exclusion_does_not_suppress(registry):
    await registry.write_package(ACME, SLUG, learned(text="a"), expected_head=None, actor="u")
    await learn(registry, learned(text="b"), sources=["chat:bad"])
    report = await registry.exclude_source(ACME, "chat:bad", actor="owner")
    assert report.repairs
    assert await registry.learning.suppressions(ACME.workspace) == []


async def test_a_deleted_skill_comes_back_only_through_the_owner(registry):
    await registry.write_package(ACME, SLUG, learned(text=prose(3)), expected_head=None, actor="u")
    await registry.delete(ACME, SLUG, actor="owner")
    (suppression,) = await registry.learning.suppressions(ACME.workspace)
    assert suppression.cause == "delete"
    pub = await learn(registry, learned(text=prose(3) + " again"))
    assert (pub.proposal_kind, pub.version) == ("suppressed", 0)
    with pytest.raises(Exception, match="not found"):
        await registry.read_package(ACME, SLUG)
    (item,) = (await registry.learning.decisions(ACME.workspace)).items
    assert (item.id, item.kind, item.against_head) == (pub.proposal, "suppressed", None)
    with pytest.raises(StateConflict):
        await registry.decide(ACME, pub.proposal, "alternative", actor="o", files=learned())
    result = await registry.decide(ACME, pub.proposal, "apply", actor="owner")
    assert result.publication.version == 1
    head = await registry.read_package(ACME, SLUG)
    assert as_bytes(head.files) == as_bytes(learned(text=prose(3) + " again"))


async def test_a_different_skill_under_a_deleted_slug_starts_a_new_history(registry):
    await registry.write_package(ACME, SLUG, learned(text=prose(3)), expected_head=None, actor="u")
    await registry.delete(ACME, SLUG, actor="owner")
    pub = await learn(registry, learned(text=prose(9), script=b"print(9)\n"))
    assert (pub.version, pub.created, pub.proposal) == (1, True, None)
    assert (await registry.skill_status(ACME, SLUG)).auto_improve


# ---------------------------------------------------------------- rule 4: capacity


async def test_at_the_limit_a_new_learned_skill_waits_and_is_applied_after_a_delete(
    make_registry,
):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    with pytest.raises(CapacityExceeded):
        await registry.write_package(ACME, "other", package("other"), expected_head=None, actor="u")
    first = await learn(registry, learned("first"), slug="first", expected=None)
    second = await learn(registry, learned("second"), slug="second", expected=None)
    assert (first.pending is not None, first.version, first.created) == (True, 0, False)
    waiting = await registry.learning.pending_writes(ACME.workspace)
    assert [(w.id, w.slug, w.status) for w in waiting] == [
        (first.pending, "first", "waiting"),
        (second.pending, "second", "waiting"),
    ]
    with pytest.raises(Exception, match="not found"):
        await registry.read_package(ACME, "first")
    # Improvements to skills already saved continue.
    assert (await learn(registry, learned("kept"), slug="kept")).version == 2
    await registry.delete(ACME, "kept", actor="owner")
    assert (await registry.read_package(ACME, "first")).version == 1
    with pytest.raises(Exception, match="not found"):
        await registry.read_package(ACME, "second")
    closed = await registry.learning.pending_writes(ACME.workspace, waiting_only=False)
    assert [(w.slug, w.status, w.outcome) for w in closed] == [
        ("first", "applied", {"version": 1}),
        ("second", "waiting", None),
    ]
    kinds = [k for _, _, k in await events(registry)]
    assert kinds.count("write_pending") == 2


async def test_a_capacity_change_applies_waiting_writes_in_order(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    first = await learn(registry, learned("first"), slug="first", expected=None)
    second = await learn(registry, learned("second"), slug="second", expected=None)
    bigger = await make_registry(settings=Settings(capacity_saved=2))
    applied = await bigger.learning.apply_pending_writes(ACME.workspace)
    assert [(w.id, w.status) for w in applied] == [(first.pending, "applied")]
    assert (await bigger.learning.pending_writes(ACME.workspace))[0].id == second.pending


async def test_the_owner_drops_a_pending_write(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.write_package(ACME, "kept", package("kept"), expected_head=None, actor="u")
    waiting = await learn(registry, learned("first"), slug="first", expected=None)
    dropped = await registry.learning.drop_pending_write(ACME.workspace, waiting.pending, actor="o")
    assert (dropped.status, dropped.outcome) == ("dropped", {"dropped_by": "o"})
    with pytest.raises(StateConflict):
        await registry.learning.drop_pending_write(ACME.workspace, waiting.pending, actor="o")
    await registry.delete(ACME, "kept", actor="owner")
    with pytest.raises(Exception, match="not found"):
        await registry.read_package(ACME, "first")


# ---------------------------------------------------------------- rule 6: triggers


async def test_triggers_are_returned_in_reads_listings_and_status(registry):
    md = (
        b"---\nname: caf\xc3\xa9-notes\ndescription: Notes.\nmetadata:\n  triggers: |\n"
        b"    take notes in a cafe\n    summarise my notes\n---\n\nbody\n"
    )
    await registry.write_package(
        ACME, "café-notes", {"SKILL.md": md}, expected_head=None, actor="u"
    )
    triggers = ("take notes in a cafe", "summarise my notes")
    assert (await registry.package_info(ACME, "café-notes")).triggers == triggers
    assert (await registry.read_package(ACME, "café-notes", 1)).triggers == triggers
    assert [i.triggers for i in (await registry.list_skills(ACME)).items] == [triggers]
    assert (await registry.skill_status(ACME, "café-notes")).triggers == triggers


async def test_a_top_level_triggers_field_is_refused_naming_the_accepted_form(registry):
    md = b"---\nname: pdf-report\ndescription: d\ntriggers: make a pdf\n---\n"
    with pytest.raises(FrontmatterInvalid, match="under 'metadata'") as info:
        await registry.write_package(ACME, SLUG, {"SKILL.md": md}, expected_head=None, actor="u")
    assert info.value.rule == "unknown_field"


# ---------------------------------------------------------------- rule 7: one decision list


async def test_one_decision_list_across_agents_and_batch_decisions(registry):
    alpha, beta = ACME, type(ACME)(ACME.workspace, "beta")
    proposals = {}
    for scope in (alpha, beta):
        await registry.write_package(scope, SLUG, learned(text="a"), expected_head=None, actor="u")
        await registry.pause_learning(scope, SLUG, actor="owner")
        proposals[scope.agent] = (await learn(registry, learned(text="b"), scope=scope)).proposal
    listed = await registry.learning.decisions(ACME.workspace)
    assert {(i.agent, i.id, i.kind) for i in listed.items} == {
        ("personal", proposals["personal"], "learning"),
        ("beta", proposals["beta"], "learning"),
    }
    only_beta = await registry.learning.decisions(ACME.workspace, agent="beta")
    assert [i.id for i in only_beta.items] == [proposals["beta"]]
    assert (await registry.learning.decisions(ACME.workspace, kind="update")).items == []
    # The personal proposal goes stale: it fails alone.
    await registry.edit(alpha, SLUG, learned(text="c"), base_version=1, actor="owner")
    outcomes = await registry.learning.decide_many(
        ACME.workspace,
        [
            DecisionRequest(proposals["personal"], "apply"),
            DecisionRequest(proposals["beta"], "apply"),
            DecisionRequest(999_999, "keep_current"),
        ],
        actor="owner",
    )
    assert [(o.ok, (o.error or {}).get("code")) for o in outcomes] == [
        (False, "proposal_stale"),
        (True, None),
        (False, "proposal_not_found"),
    ]
    assert (await registry.read_package(beta, SLUG)).version == 2


# ---------------------------------------------------------------- rule 9: status


async def test_the_learning_status_of_a_workspace(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.write_package(ACME, SLUG, learned(text="a"), expected_head=None, actor="u")
    await learn(registry, learned(text="b"))
    await registry.pause_learning(ACME, SLUG, actor="owner")
    await learn(registry, learned(text="c"))
    waiting = await learn(registry, learned("new"), slug="new", expected=None)
    status = await registry.learning.status(ACME.workspace)
    assert (status.pending_writes, status.decisions["learning"], status.suppressions) == (1, 1, 0)
    assert status.oldest_pending_at is not None
    assert (status.last_learned.slug, status.last_learned.version) == (SLUG, 2)
    assert [(p.agent, p.slug) for p in status.learning_paused] == [("personal", SLUG)]
    assert waiting.pending is not None
    whole = await registry.status(ACME.workspace)
    assert whole.learning == (status,)


# ---------------------------------------------------------------- rule 10: loads


async def test_a_load_is_recorded_and_its_version_outlives_retention(make_registry):
    registry = await make_registry()
    await registry.write_package(ACME, SLUG, learned(text="a"), expected_head=None, actor="u")
    load = await registry.record_load(ACME, SLUG, 1, "conv-1")
    again = await registry.record_load(ACME, SLUG, 1, "conv-1")
    assert (load.created, again.created, load.version) == (True, False, 1)
    for n in (2, 3):
        await registry.write_package(
            ACME, SLUG, learned(text=str(n)), expected_head=n - 1, actor="u"
        )
    await registry.gc.prune(keep_versions=1)
    assert (await registry.read_package(ACME, SLUG, 1)).version == 1
    with pytest.raises(VersionNotFound):  # retention did run: the unloaded one is gone
        await registry.read_package(ACME, SLUG, 2)
    assert [(r.slug, r.version) for r in await registry.loads(ACME.workspace, "conv-1")] == [
        (SLUG, 1)
    ]


# ---------------------------------------------------------------- installed copies


async def test_a_learned_version_moves_an_installed_copy_into_the_saved_budget(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    # Installed: automatic improvements start off, so learning proposes.
    proposed = await learn(registry, learned(LISTING), slug=LISTING)
    assert proposed.proposal_kind == "learning"
    await registry.set_auto_improve(ACME, LISTING, enabled=True, actor="owner")
    await registry.write_package(ACME, "mine", package("mine"), expected_head=None, actor="u")
    # The saved budget is full: the learned version waits, the copy stays installed.
    waiting = await learn(registry, learned(LISTING, text="w"), slug=LISTING, expected=1)
    assert (waiting.pending is not None, waiting.version) == (True, 1)
    assert [s.kind for s in (await registry.list_skills(ACME)).items] == ["installed", "saved"]
    await registry.delete(ACME, "mine", actor="owner")
    (copy,) = (await registry.list_skills(ACME)).items
    assert (copy.slug, copy.kind, copy.head) == (LISTING, "saved", 2)


async def test_a_learning_write_does_not_supersede_a_pending_marketplace_update(registry):
    await publish_listing(registry, 1)
    assert (await registry.marketplace.install(ACME, MARKET_LISTING)).succeeded
    files = (await registry.read_package(ACME, MARKET_LISTING)).files
    files["references/notes.md"] = b"# Notes\n\nthe owner's notes\n"
    await registry.write_package(ACME, MARKET_LISTING, files, expected_head=1, actor="owner")
    await publish_listing(registry, 2)
    outcome = await registry.marketplace.update(ACME, MARKET_LISTING, policy="propose")
    update = outcome.job.result["proposal"]
    with pytest.raises(StateConflict) as refused:
        await learn(registry, learned(MARKET_LISTING), slug=MARKET_LISTING)
    assert refused.value.state == f"update proposal {update} pending"
    decisions = (await registry.learning.decisions(ACME.workspace)).items
    assert [(d.id, d.kind, d.status) for d in decisions] == [(update, "update", "open")]
