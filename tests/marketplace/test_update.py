"""Update jobs on both databases: unedited copies fast-forward, owner edits are never lost."""

from __future__ import annotations

import asyncio

import pytest

from blobstore import BlobStoreUnavailable
from registry import PackageFile
from registry.errors import HeadConflict, NotInstalled, SkillNotFound, StorageUnavailable
from registry.services.marketplace import install as marketplace
from registry.settings import Settings
from tests.marketplace.support import (
    LISTING,
    ManualClock,
    baseline,
    events,
    listing_files,
    publish_listing,
    versions,
)
from tests.support.faults import InjectedFault, InstrumentedStore, ScriptedFailpoints
from tests.support.packages import as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state, live_claims

OWNER_RUN = PackageFile(b"print('the owner was here')\n", executable=True)


async def _installed(registry, version=1):
    listed = await publish_listing(registry, version)
    outcome = await registry.marketplace.install(ACME, LISTING, version)
    assert outcome.succeeded, outcome.job.last_error
    return listed


async def _owner_edit(registry, files=None, expected=1):
    if files is None:
        files = listing_files()
        files["scripts/run.py"] = OWNER_RUN
    return await registry.write_package(ACME, LISTING, files, expected_head=expected, actor="o")


async def test_an_unedited_copy_fast_forwards_and_moves_its_baseline(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    await _installed(registry)
    second = await publish_listing(registry, 2)
    puts = store.calls["put"]
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.succeeded, outcome.job.last_error
    result = outcome.job.result
    assert (result["outcome"], result["from_version"], result["listing_version"]) == (
        "fast_forward",
        1,
        2,
    )
    assert store.calls["put"] == puts
    copy = await registry.read_package(ACME, LISTING)
    assert copy.manifest_hash == second.manifest_hash
    assert as_bytes(copy.files) == as_bytes(listing_files(version=2))
    assert await versions(registry, ACME, LISTING) == [
        (1, "marketplace_install"),
        (2, "marketplace_update"),
    ]
    assert await baseline(registry, ACME, LISTING) == (
        "installed",
        LISTING,
        2,
        second.manifest_hash,
    )
    assert await events(registry, "acme") == [("published", LISTING, 1), ("published", LISTING, 2)]


async def test_an_up_to_date_copy_is_left_alone(registry):
    await _installed(registry)
    before = await db_state(registry)
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.job.result["outcome"] == "up_to_date"
    assert await db_state(registry) == before


async def test_an_edited_copy_merges_upstream_changes_and_keeps_the_owners(registry):
    await _installed(registry)
    await _owner_edit(registry)
    await publish_listing(registry, 2)
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.succeeded, outcome.job.last_error
    result = outcome.job.result
    assert result["outcome"] == "merged"
    assert result["kept"] == ["scripts/run.py"]
    assert result["taken"] == ["SKILL.md", "references/guide.md"]
    assert result["conflicts"] == []
    expected = listing_files(version=2)
    expected["scripts/run.py"] = OWNER_RUN
    copy = await registry.read_package(ACME, LISTING)
    assert as_bytes(copy.files) == as_bytes(expected)
    assert copy.origin == "marketplace_update"
    assert "merged (kept 1 owner changes)" in copy.message
    assert await versions(registry, ACME, LISTING) == [
        (1, "marketplace_install"),
        (2, "edit"),
        (3, "marketplace_update"),
    ]
    listing = await registry.marketplace.listing(LISTING)
    assert await baseline(registry, ACME, LISTING) == (
        "installed",
        LISTING,
        2,
        listing.manifest_hash,
    )


async def test_an_owner_removal_and_an_upstream_addition_both_survive(registry):
    await _installed(registry)
    files = listing_files()
    del files["references/notes.md"]
    await _owner_edit(registry, files)
    await publish_listing(registry, 2, extra={"references/new.md": b"# New upstream file\n"})
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.job.result["outcome"] == "merged"
    copy = await registry.read_package(ACME, LISTING)
    assert "references/notes.md" not in copy.files
    assert copy.files["references/new.md"].data == b"# New upstream file\n"


async def test_a_copy_that_already_has_the_upstream_change_only_moves_its_baseline(registry):
    await _installed(registry)
    files = listing_files(version=2)  # the owner made upstream's change, and one of their own
    files["scripts/run.py"] = OWNER_RUN
    await _owner_edit(registry, files)
    second = await publish_listing(registry, 2)
    before = await versions(registry, ACME, LISTING)
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.job.result["outcome"] == "baseline_moved"
    assert await versions(registry, ACME, LISTING) == before
    assert (await baseline(registry, ACME, LISTING))[2:] == (2, second.manifest_hash)
    assert (await events(registry, "acme"))[-1] == ("baseline_moved", LISTING, 2)
    again = await registry.marketplace.update(ACME, LISTING, key="again")
    assert again.job.result["outcome"] == "up_to_date"
    assert (await events(registry, "acme"))[-1] == ("baseline_moved", LISTING, 2)


async def test_updating_an_owner_saved_skill_or_a_missing_one_is_refused(registry):
    await publish_listing(registry)
    await registry.write_package(ACME, LISTING, package(LISTING), expected_head=None, actor="o")
    with pytest.raises(NotInstalled):
        await registry.marketplace.enqueue_update(ACME, LISTING)
    with pytest.raises(SkillNotFound):
        await registry.marketplace.enqueue_update(ACME, "nothing-here")


async def test_a_merged_update_whose_blob_store_fails_keeps_the_baseline_and_a_retry_applies(
    make_registry, local_store
):
    store = InstrumentedStore(local_store)
    clock = ManualClock()
    registry = await make_registry(blobs=store, clock=clock)
    await _installed(registry)
    await _owner_edit(registry)
    await publish_listing(registry, 2)
    before = await db_state(registry)
    base_before = await baseline(registry, ACME, LISTING)

    def down(_method):
        raise BlobStoreUnavailable("the store is down")

    store.guard = down
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert isinstance(outcome.error, StorageUnavailable)
    assert (outcome.job.status, outcome.job.attempts) == ("queued", 1)
    assert await db_state(registry) == before
    assert await baseline(registry, ACME, LISTING) == base_before
    assert await live_claims(registry) == 0

    store.guard = None
    clock.advance(3600)
    assert await registry.marketplace.run_jobs(drain=True) == 1
    job = await registry.marketplace.job(outcome.job.id)
    assert (job.status, job.attempts, job.result["outcome"]) == ("succeeded", 2, "merged")
    assert (await baseline(registry, ACME, LISTING))[2] == 2
    assert (await registry.read_package(ACME, LISTING)).files["scripts/run.py"] == OWNER_RUN


async def test_a_fast_forward_failing_in_its_transaction_changes_nothing_and_retries(
    make_registry,
):
    failpoints = ScriptedFailpoints()
    clock = ManualClock()
    registry = await make_registry(failpoints=failpoints, clock=clock)
    await _installed(registry)
    # One upstream version per point: each failed update is retried to a fast-forward, which
    # leaves an unedited copy for the next point.
    points = ["publish.locked", "publish.head_moved", "publish.before_commit"]
    for upstream, point in enumerate(points, start=2):
        await publish_listing(registry, upstream)
        before = await db_state(registry)
        failpoints.fail(point, nth=failpoints.hits[point] + 1)
        outcome = await registry.marketplace.update(ACME, LISTING)
        assert isinstance(outcome.error, InjectedFault), point
        assert outcome.job.status == "queued", point
        assert await db_state(registry) == before, point
        clock.advance(3600)
        assert await registry.marketplace.run_jobs(drain=True) == 1, point
        job = await registry.marketplace.job(outcome.job.id)
        assert job.result["outcome"] == "fast_forward", point
        assert (await baseline(registry, ACME, LISTING))[2] == upstream, point


async def test_an_owner_edit_racing_the_update_is_merged_on_the_retry(make_registry):
    failpoints = ScriptedFailpoints()
    clock = ManualClock()
    registry = await make_registry(
        failpoints=failpoints, clock=clock, settings=Settings(job_backoff_base=1)
    )
    await _installed(registry)
    await publish_listing(registry, 2)
    park = failpoints.park("marketplace.copy_read")
    update = asyncio.create_task(registry.marketplace.update(ACME, LISTING))
    await park.reached.wait()
    # The update read the unedited copy; the owner edits it before the update's transaction.
    await _owner_edit(registry)
    park.release.set()
    outcome = await update
    assert isinstance(outcome.error, HeadConflict)
    assert outcome.job.status == "queued"
    clock.advance(60)
    assert await registry.marketplace.run_jobs(drain=True) == 1
    job = await registry.marketplace.job(outcome.job.id)
    assert job.result["outcome"] == "merged"
    copy = await registry.read_package(ACME, LISTING)
    assert copy.files["scripts/run.py"] == OWNER_RUN
    assert copy.files["references/guide.md"].data == b"# Guide, edition 2\n"


# Proposals: the history feature's, recorded by the update and decided by the owner.

OWNER_GUIDE = b"# Guide, the owner's own edition\n"


async def _conflicting_edit(registry):
    files = listing_files()
    files["references/guide.md"] = OWNER_GUIDE  # upstream changes it in every version
    files["scripts/run.py"] = OWNER_RUN
    return await _owner_edit(registry, files)


async def test_an_edited_copy_with_a_conflict_gets_a_proposal_and_keeps_its_edit(registry):
    await _installed(registry)
    edited = await _conflicting_edit(registry)
    second = await publish_listing(registry, 2)
    base_before = await baseline(registry, ACME, LISTING)
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.succeeded, outcome.job.last_error
    result = outcome.job.result
    assert result["outcome"] == "proposed"
    assert result["conflicts"] == [{"path": "references/guide.md", "kind": "both_changed"}]
    assert (result["version"], result["manifest_hash"]) == (2, edited.manifest_hash)
    # The owner's edit is the head, untouched; the baseline has not moved.
    head = await registry.read_package(ACME, LISTING)
    assert head.version == 2
    assert head.files["references/guide.md"].data == OWNER_GUIDE
    assert await baseline(registry, ACME, LISTING) == base_before
    # The proposal: upstream's side of the conflict, the owner's other change kept.
    proposed = await registry.read_proposal(ACME, result["proposal"])
    expected = listing_files(version=2)
    expected["scripts/run.py"] = OWNER_RUN
    assert as_bytes(proposed) == as_bytes(expected)
    assert (await events(registry, "acme"))[-1] == ("proposed", LISTING, 2)

    # Applying it publishes it and moves the baseline to the listing version it brings.
    decided = await registry.decide(ACME, result["proposal"], "apply", actor="owner")
    assert decided.publication.version == 3
    assert await versions(registry, ACME, LISTING) == [
        (1, "marketplace_install"),
        (2, "edit"),
        (3, "marketplace_update"),
    ]
    assert (await baseline(registry, ACME, LISTING))[2:] == (2, second.manifest_hash)

    # The next listing version merges against the new baseline: no stale conflict.
    await publish_listing(registry, 3)
    after = await registry.marketplace.update(ACME, LISTING)
    assert after.job.result["outcome"] == "merged", after.job.result
    assert after.job.result["kept"] == ["scripts/run.py"]


async def test_the_owner_may_keep_their_version_and_the_baseline_stays(registry):
    await _installed(registry)
    await _conflicting_edit(registry)
    await publish_listing(registry, 2)
    outcome = await registry.marketplace.update(ACME, LISTING)
    before = await baseline(registry, ACME, LISTING)
    await registry.decide(ACME, outcome.job.result["proposal"], "keep_current", actor="owner")
    assert await baseline(registry, ACME, LISTING) == before
    assert (await registry.read_package(ACME, LISTING)).files["references/guide.md"].data == (
        OWNER_GUIDE
    )


async def test_an_alternative_decision_also_moves_the_baseline(registry):
    await _installed(registry)
    await _conflicting_edit(registry)
    second = await publish_listing(registry, 2)
    outcome = await registry.marketplace.update(ACME, LISTING)
    mine = listing_files(version=2)
    mine["references/guide.md"] = b"# Guide: upstream's edition 2 and my own notes\n"
    await registry.decide(
        ACME, outcome.job.result["proposal"], "alternative", actor="owner", files=mine
    )
    assert (await baseline(registry, ACME, LISTING))[2:] == (2, second.manifest_hash)


async def test_the_propose_policy_proposes_even_a_clean_merge(registry):
    await _installed(registry)
    await _owner_edit(registry)
    await publish_listing(registry, 2)
    outcome = await registry.marketplace.update(ACME, LISTING, policy="propose")
    result = outcome.job.result
    assert (result["outcome"], result["conflicts"]) == ("proposed", [])
    assert (await registry.read_package(ACME, LISTING)).version == 2
    page = await registry.list_proposals(ACME)
    assert [p.id for p in page.items] == [result["proposal"]]
    assert page.items[0].origin == "marketplace_update"


async def test_an_update_run_again_after_its_proposal_committed_proposes_once(registry):
    await _installed(registry)
    await _conflicting_edit(registry)
    await publish_listing(registry, 2)
    enqueued = await registry.marketplace.enqueue_update(ACME, LISTING)
    first = await marketplace.run_update(registry.ctx, enqueued.job)
    # A worker that died after the commit: the next run finds the proposal by its source.
    again = await marketplace.run_update(registry.ctx, enqueued.job)
    assert again["recovered"] is True
    assert again["proposal"] == first["proposal"]
    assert [e for e in await events(registry, "acme") if e[0] == "proposed"] == [
        ("proposed", LISTING, 2)
    ]


# An older update never undoes a newer one (the target is decided under the lock).


async def test_an_update_job_to_an_older_version_run_after_a_newer_one_is_superseded(registry):
    await _installed(registry)
    await publish_listing(registry, 2)
    older = await registry.marketplace.enqueue_update(ACME, LISTING)  # to 2, left queued
    third = await publish_listing(registry, 3)
    newer = await registry.marketplace.update(ACME, LISTING)
    assert newer.job.result["outcome"] == "fast_forward"
    before = await db_state(registry)
    assert await registry.marketplace.run_jobs(drain=True) == 1
    job = await registry.marketplace.job(older.job.id)
    assert job.status == "succeeded", job.last_error
    result = job.result
    assert (result["outcome"], result["from_version"], result["listing_version"]) == (
        "superseded",
        3,
        2,
    )
    assert result["version"] == 2
    assert await db_state(registry) == before
    assert (await baseline(registry, ACME, LISTING))[2:] == (3, third.manifest_hash)
    assert (await registry.read_package(ACME, LISTING)).manifest_hash == third.manifest_hash


async def _parked_update(registry, failpoints):
    """An update job that read the copy and its target, held before it writes."""
    park = failpoints.park("marketplace.copy_read")
    task = asyncio.create_task(registry.marketplace.update(ACME, LISTING))
    await park.reached.wait()
    return park, task


async def test_an_older_update_that_read_the_copy_first_never_moves_the_baseline_back(
    make_registry,
):
    # Both updates only move the baseline (the owner's copy already holds both versions'
    # changes): the head never moves, so the head's compare-and-swap alone cannot tell.
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await _installed(registry)
    more = {"references/more.md": b"more\n"}
    mine = listing_files(version=2, extra=more)
    mine["scripts/run.py"] = OWNER_RUN
    await _owner_edit(registry, mine)
    await publish_listing(registry, 2)
    park, older = await _parked_update(registry, failpoints)  # read baseline 1, target 2
    third = await publish_listing(registry, 2, extra=more)
    newer = await registry.marketplace.update(ACME, LISTING, key="newer")
    assert newer.job.result["outcome"] == "baseline_moved"
    before = await db_state(registry)
    park.release.set()
    outcome = await older
    assert outcome.succeeded, outcome.job.last_error
    assert outcome.job.result["outcome"] == "superseded"
    assert await db_state(registry) == before
    assert (await baseline(registry, ACME, LISTING))[2:] == (3, third.manifest_hash)


async def test_an_older_merge_that_read_the_copy_first_never_moves_the_baseline_back(
    make_registry,
):
    # Listing 2 adds a file, listing 3 adds another instead; the owner's copy already has
    # listing 3's, so the newer update only moves the baseline. The older update's merge
    # would bring listing 2's file back and the baseline back to 2 on the same head.
    failpoints = ScriptedFailpoints()
    clock = ManualClock()
    registry = await make_registry(
        failpoints=failpoints, clock=clock, settings=Settings(job_backoff_base=1)
    )
    await _installed(registry)
    two, three = {"references/two.md": b"two\n"}, {"references/three.md": b"three\n"}
    mine = listing_files(extra=three)
    mine["scripts/run.py"] = OWNER_RUN
    edited = await _owner_edit(registry, mine)
    await publish_listing(registry, 1, extra=two)
    park, older = await _parked_update(registry, failpoints)  # read baseline 1, target 2
    third = await publish_listing(registry, 1, extra=three)
    newer = await registry.marketplace.update(ACME, LISTING, key="newer")
    assert newer.job.result["outcome"] == "baseline_moved"
    before = await db_state(registry)
    park.release.set()
    outcome = await older
    assert isinstance(outcome.error, HeadConflict)
    assert outcome.job.status == "queued"
    clock.advance(60)
    assert await registry.marketplace.run_jobs(drain=True) == 1
    job = await registry.marketplace.job(outcome.job.id)
    assert (job.status, job.result["outcome"]) == ("succeeded", "superseded")
    assert await db_state(registry) == before
    assert (await baseline(registry, ACME, LISTING))[2:] == (3, third.manifest_hash)
    copy = await registry.read_package(ACME, LISTING)
    assert copy.manifest_hash == edited.manifest_hash
    assert "references/two.md" not in copy.files


# A copy deleted and installed again is another skill, even at the same head number.


async def _reinstalled(registry, files):
    """Delete the copy, install listing version 1 again and edit it to head 2."""
    await registry.delete(ACME, LISTING, actor="o")
    again = await registry.marketplace.install(ACME, LISTING, 1, key="reinstall")
    assert again.succeeded, again.job.last_error
    return await _owner_edit(registry, files)


@pytest.mark.parametrize("old_edit", ["merged", "baseline_moved"])
async def test_an_update_that_read_a_copy_deleted_and_installed_again_merges_the_new_one(
    make_registry, old_edit
):
    failpoints = ScriptedFailpoints()
    clock = ManualClock()
    registry = await make_registry(
        failpoints=failpoints, clock=clock, settings=Settings(job_backoff_base=1)
    )
    await _installed(registry)
    # The deleted copy's edit: an extra file, or already listing 2 (the merge is the head).
    gone = listing_files(version=2 if old_edit == "baseline_moved" else 1)
    gone["references/gone.md"] = b"an edit of the deleted copy\n"
    await _owner_edit(registry, gone)
    await publish_listing(registry, 2)
    park, update = await _parked_update(registry, failpoints)  # read the old copy's head 2
    mine = listing_files()
    mine["scripts/run.py"] = OWNER_RUN
    await _reinstalled(registry, mine)  # the new copy's head is 2 as well
    park.release.set()
    outcome = await update
    assert isinstance(outcome.error, HeadConflict)
    assert outcome.job.status == "queued"
    assert (await baseline(registry, ACME, LISTING))[2] == 1
    clock.advance(60)
    assert await registry.marketplace.run_jobs(drain=True) == 1
    job = await registry.marketplace.job(outcome.job.id)
    assert (job.status, job.result["outcome"]) == ("succeeded", "merged")
    copy = await registry.read_package(ACME, LISTING)
    assert "references/gone.md" not in copy.files
    assert copy.files["scripts/run.py"] == OWNER_RUN
    assert copy.files["references/guide.md"].data == b"# Guide, edition 2\n"
    assert (await baseline(registry, ACME, LISTING))[2] == 2
