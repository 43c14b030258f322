"""Proposals: automated writes to human-controlled skills, supersession, staleness, decisions."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry import Origin, ProposalRef, Scope
from registry.db.tables import Manifest, ManifestEntry, Proposal
from registry.errors import DraftKept, ProposalNotFound, ProposalStale, StateConflict
from tests.support.faults import InstrumentedStore, ScriptedFailpoints
from tests.support.history import event_count, events
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import blob_rows, db_state, live_claims


async def owned(registry):
    """A skill an owner edited: automatic improvements are off, head 2."""
    await registry.write_package(ACME, SLUG, package(SLUG, tag="1"), expected_head=None, actor="u")
    await registry.edit(ACME, SLUG, package(SLUG, tag="2"), base_version=1, actor="owner")


async def learn(registry, tag, expected=2, sources=("job:1",)):
    return await registry.write_package(
        ACME,
        SLUG,
        package(SLUG, tag=tag),
        expected_head=expected,
        origin=Origin.LEARNING,
        actor="learner",
        sources=sources,
    )


async def test_learning_publishes_while_automatic_improvements_are_on(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, tag="1"), expected_head=None, actor="u")
    pub = await learn(registry, "auto", expected=1)
    assert (pub.version, pub.created, pub.proposal) == (2, True, None)


async def test_learning_on_a_human_controlled_skill_records_a_proposal(registry):
    await owned(registry)
    count = await event_count(registry)
    pub = await learn(registry, "idea")
    assert pub.proposal is not None
    assert (pub.version, pub.created, pub.unchanged, pub.retired) == (2, False, False, None)
    assert (await registry.skill_status(ACME, SLUG)).head == 2
    assert await event_count(registry) == count + 1
    assert (await events(registry))[-1] == ("acme", SLUG, "proposed")
    # Its manifest rows (a real FK from the proposal) keep its blobs referenced and live.
    async with registry.engine.connect() as conn:
        digests = (
            (
                await conn.execute(
                    sa.select(ManifestEntry.digest)
                    .join(Manifest, Manifest.id == ManifestEntry.manifest_id)
                    .join(Proposal, Proposal.manifest_id == Manifest.id)
                    .where(Proposal.id == pub.proposal)
                )
            )
            .scalars()
            .all()
        )
    rows = await blob_rows(registry)
    assert digests
    assert all(rows[d] == "live" for d in digests)
    assert await live_claims(registry) == 0
    assert as_bytes(await registry.read_proposal(ACME, pub.proposal)) == as_bytes(
        package(SLUG, tag="idea")
    )
    status = await registry.skill_status(ACME, SLUG)
    assert (status.state, status.proposal, status.proposal_status) == (
        "needs_decision",
        pub.proposal,
        "open",
    )


async def test_learning_while_paused_records_a_proposal_even_with_auto_improve_on(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, tag="1"), expected_head=None, actor="u")
    await registry.pause_learning(ACME, SLUG, actor="owner")
    pub = await learn(registry, "idea", expected=1)
    assert pub.proposal is not None
    assert (await registry.skill_status(ACME, SLUG)).head == 1


async def test_a_newer_proposal_supersedes_the_older_and_a_repeat_is_a_no_op(registry):
    await owned(registry)
    first = await learn(registry, "one")
    second = await learn(registry, "two")
    assert second.proposal != first.proposal
    old = await registry.proposal(ACME, first.proposal)
    assert old.summary.status == "superseded"
    listed = await registry.list_proposals(ACME)
    assert [p.id for p in listed.items] == [second.proposal]
    before = await db_state(registry, ("proposals", "events"))
    again = await learn(registry, "two")
    assert again.proposal == second.proposal
    assert await db_state(registry, ("proposals", "events")) == before
    everything = await registry.list_proposals(ACME, pending_only=False)
    assert [(p.id, p.status) for p in everything.items] == [
        (second.proposal, "open"),
        (first.proposal, "superseded"),
    ]


async def test_a_learning_write_does_not_supersede_the_owners_kept_draft(registry):
    await owned(registry)
    with pytest.raises(DraftKept) as kept:
        await registry.edit(
            ACME, SLUG, package(SLUG, tag="draft"), base_version=1, actor="owner", keep_draft=True
        )
    draft = kept.value.proposal
    before = await db_state(registry, ("proposals", "versions", "events"))
    with pytest.raises(StateConflict) as refused:
        await learn(registry, "idea")
    assert (refused.value.action, refused.value.state) == (
        "learning write",
        f"draft proposal {draft} pending",
    )
    # Nothing was recorded: the draft is still the one pending decision, byte for byte.
    assert await db_state(registry, ("proposals", "versions", "events")) == before
    assert [(p.id, p.kind) for p in (await registry.list_proposals(ACME)).items] == [
        (draft, "draft")
    ]
    assert as_bytes(await registry.read_proposal(ACME, draft)) == as_bytes(
        package(SLUG, tag="draft")
    )
    await registry.decide(ACME, draft, "keep_current", actor="owner")
    # Once the owner has decided, learning proposes again.
    assert (await learn(registry, "idea")).proposal_kind == "learning"


async def test_apply_publishes_the_proposal_and_uploads_nothing(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    await owned(registry)
    proposed = await learn(registry, "idea", sources=("job:7",))
    puts, count = store.calls["put"], await event_count(registry)
    result = await registry.decide(ACME, proposed.proposal, "apply", actor="owner")
    assert store.calls["put"] == puts
    assert await event_count(registry) == count + 1
    assert (await events(registry))[-1][2] == "proposal_applied"
    assert (result.status, result.publication.version) == ("applied", 3)
    head = await registry.read_package(ACME, SLUG)
    assert as_bytes(head.files) == as_bytes(package(SLUG, tag="idea"))
    newest = (await registry.history(ACME, SLUG)).items[0]
    assert (newest.origin, newest.actor, newest.sources) == ("learning", "learner", ["job:7"])
    decided = (await registry.proposal(ACME, proposed.proposal)).summary
    assert (decided.status, decided.decision, decided.decided_by, decided.applied_version) == (
        "applied",
        "apply",
        "owner",
        3,
    )
    assert (await registry.skill_status(ACME, SLUG)).state == "ready"


async def test_a_proposal_goes_stale_when_the_head_moves_and_apply_is_refused(registry):
    await owned(registry)
    proposed = await learn(registry, "idea")
    count = await event_count(registry)
    await registry.edit(ACME, SLUG, package(SLUG, tag="3"), base_version=2, actor="owner")
    assert await event_count(registry) == count + 1
    summary = (await registry.proposal(ACME, proposed.proposal)).summary
    assert (summary.status, summary.base_version, summary.head) == ("stale", 2, 3)
    before = await db_state(registry, ("skills", "versions", "proposals", "events"))
    with pytest.raises(ProposalStale) as caught:
        await registry.decide(ACME, proposed.proposal, "apply", actor="owner")
    assert (caught.value.proposal, caught.value.expected, caught.value.current) == (
        proposed.proposal,
        2,
        3,
    )
    with pytest.raises(ProposalStale):
        await registry.decide(
            ACME, proposed.proposal, "alternative", actor="owner", files=package(SLUG, tag="x")
        )
    assert await db_state(registry, ("skills", "versions", "proposals", "events")) == before
    # A stale proposal still needs a decision: keeping the current version closes it.
    kept = await registry.decide(ACME, proposed.proposal, "keep_current", actor="owner")
    assert kept.status == "rejected"
    assert (await registry.skill_status(ACME, SLUG)).state == "ready"


async def test_apply_an_edited_alternative(registry):
    await owned(registry)
    proposed = await learn(registry, "idea")
    alternative = package(SLUG, tag="better")
    result = await registry.decide(
        ACME, proposed.proposal, "alternative", actor="owner", files=alternative
    )
    assert result.publication.version == 3
    assert as_bytes((await registry.read_package(ACME, SLUG)).files) == as_bytes(alternative)
    newest = (await registry.history(ACME, SLUG)).items[0]
    assert (newest.origin, newest.actor) == ("edit", "owner")
    summary = (await registry.proposal(ACME, proposed.proposal)).summary
    assert (summary.status, summary.decision) == ("applied", "alternative")


async def test_keep_current_rejects_and_a_decided_proposal_cannot_be_decided_again(registry):
    await owned(registry)
    proposed = await learn(registry, "idea")
    count = await event_count(registry)
    result = await registry.decide(ACME, proposed.proposal, "keep_current", actor="owner")
    assert (result.status, result.publication) == ("rejected", None)
    assert await event_count(registry) == count + 1
    assert (await events(registry))[-1][2] == "proposal_decided"
    assert (await registry.skill_status(ACME, SLUG)).head == 2
    for decision in ("apply", "keep_current"):
        with pytest.raises(StateConflict) as caught:
            await registry.decide(ACME, proposed.proposal, decision, actor="owner")
        assert caught.value.state == "proposal rejected"


async def test_proposals_are_listed_with_diffs_against_base_and_head(registry):
    await owned(registry)
    files = package(SLUG, tag="2")
    files["references/new.md"] = b"a new reference\n"
    del files["references/part-002.md"]
    proposed = await registry.write_package(
        ACME, SLUG, files, expected_head=2, origin=Origin.LEARNING, actor="learner"
    )
    (item,) = (await registry.list_proposals(ACME)).items
    assert item.id == proposed.proposal
    assert (item.against_base.added, item.against_base.removed, item.against_base.changed) == (
        ["references/new.md"],
        ["references/part-002.md"],
        [],
    )
    assert item.against_head == item.against_base
    await registry.edit(ACME, SLUG, package(SLUG, tag="3"), base_version=2, actor="owner")
    (stale,) = (await registry.list_proposals(ACME)).items
    assert stale.status == "stale"
    assert "SKILL.md" in stale.against_head.changed
    detail = await registry.proposal(ACME, proposed.proposal)
    assert {f.path for f in detail.diff_base} == {"references/new.md", "references/part-002.md"}
    added = next(f for f in detail.diff_base if f.path == "references/new.md")
    assert added.lines[-1] == "+a new reference"
    diff = await registry.diff(ACME, SLUG, 2, ProposalRef(proposed.proposal))
    assert (diff.b.kind, diff.count("added"), diff.count("removed")) == ("proposal", 1, 1)


async def test_proposals_across_workspaces_are_not_found(registry):
    await owned(registry)
    proposed = await learn(registry, "idea")
    other = Scope("other-co")
    with pytest.raises(ProposalNotFound):
        await registry.proposal(other, proposed.proposal)
    with pytest.raises(ProposalNotFound):
        await registry.read_proposal(other, proposed.proposal)
    with pytest.raises(ProposalNotFound):
        await registry.decide(other, proposed.proposal, "apply", actor="x")
    with pytest.raises(ProposalNotFound):
        await registry.decide(Scope("acme", "helper"), proposed.proposal, "keep_current", actor="x")
    assert (await registry.list_proposals(other)).items == []


async def test_delete_withdraws_the_pending_proposal(registry):
    await owned(registry)
    proposed = await learn(registry, "idea")
    await registry.delete(ACME, SLUG, actor="owner")
    assert (await registry.proposal(ACME, proposed.proposal)).summary.status == "withdrawn"
    with pytest.raises(StateConflict):
        await registry.decide(ACME, proposed.proposal, "apply", actor="owner")


async def test_a_diverted_write_whose_reply_was_lost_reports_its_proposal(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await owned(registry)
    failpoints.fail("publish.committed", nth=failpoints.hits["publish.committed"] + 1)
    pub = await learn(registry, "idea")
    assert pub.proposal is not None
    assert [p.id for p in (await registry.list_proposals(ACME)).items] == [pub.proposal]
    assert await live_claims(registry) == 0
    failpoints.fail("publish.committed", nth=failpoints.hits["publish.committed"] + 1)
    with pytest.raises(DraftKept) as caught:
        await registry.edit(
            ACME, SLUG, package(SLUG, tag="draft"), base_version=1, actor="o", keep_draft=True
        )
    assert caught.value.proposal == (await registry.list_proposals(ACME)).items[0].id
