"""Restore and owner edits: byte-exact, nothing uploaded, compare-and-swap, drafts kept."""

from __future__ import annotations

import asyncio

import pytest

from registry import Origin, Scope
from registry.errors import DraftKept, HeadConflict, SkillNotFound, VersionNotFound
from tests.support.faults import InstrumentedStore, ScriptedFailpoints
from tests.support.history import event_count, events
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state, live_claims


async def three_versions(registry, slug=SLUG):
    files = [package(slug, files=4, tag=f"v{i}") for i in (1, 2, 3)]
    await registry.write_package(ACME, slug, files[0], expected_head=None, actor="u1")
    await registry.write_package(ACME, slug, files[1], expected_head=1, actor="u1")
    await registry.write_package(ACME, slug, files[2], expected_head=2, actor="u1")
    return files


async def test_restore_is_byte_exact_and_uploads_nothing(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    files = await three_versions(registry)
    before = dict(store.calls)
    pub = await registry.restore(ACME, SLUG, 1, expected_head=3, actor="owner")
    assert (pub.version, pub.created, pub.retired, pub.uploaded) == (4, True, 3, 0)
    assert store.calls["put"] == before.get("put", 0)
    assert store.calls["exists"] == before.get("exists", 0)
    restored = await registry.read_package(ACME, SLUG)
    assert as_bytes(restored.files) == as_bytes(files[0])
    assert restored.manifest.hash == (await registry.package_info(ACME, SLUG, 1)).manifest.hash
    assert await live_claims(registry) == 0


async def test_restore_records_origin_parent_sources_and_turns_auto_improve_off(registry):
    await registry.write_package(
        ACME, SLUG, package(SLUG, tag="a"), expected_head=None, actor="u1", sources=["chat:1"]
    )
    await registry.write_package(
        ACME,
        SLUG,
        package(SLUG, tag="b"),
        expected_head=1,
        actor="u1",
        sources=["chat:2"],
        keep_auto_improve=True,
    )
    assert (await registry.skill_status(ACME, SLUG)).auto_improve
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner", message="undo")
    page = await registry.history(ACME, SLUG)
    newest = page.items[0]
    assert (newest.number, newest.origin, newest.actor, newest.message) == (
        3,
        "restore",
        "owner",
        "undo",
    )
    assert (newest.parent, newest.restored_from, newest.sources) == (2, 1, ["chat:1"])
    assert not (await registry.skill_status(ACME, SLUG)).auto_improve
    assert (await events(registry))[-1] == ("acme", SLUG, "restored")


async def test_restore_brings_back_files_that_were_removed_later(registry):
    files = package(SLUG, files=5)
    await registry.write_package(ACME, SLUG, files, expected_head=None, actor="u1")
    smaller = {k: v for k, v in files.items() if not k.startswith("references/")}
    await registry.write_package(ACME, SLUG, smaller, expected_head=1, actor="u1")
    assert set((await registry.read_package(ACME, SLUG)).files) == set(smaller)
    await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    assert as_bytes((await registry.read_package(ACME, SLUG)).files) == as_bytes(files)


async def test_restore_of_the_heads_own_package_is_a_no_op(registry):
    await three_versions(registry)
    await registry.restore(ACME, SLUG, 1, expected_head=3, actor="owner")
    before = await db_state(registry)
    again = await registry.restore(ACME, SLUG, 1, expected_head=4, actor="owner")
    assert (again.version, again.created, again.unchanged) == (4, False, True)
    assert await db_state(registry) == before


async def test_restore_with_a_stale_expected_head_changes_nothing(registry):
    await three_versions(registry)
    before = await db_state(registry)
    with pytest.raises(HeadConflict) as caught:
        await registry.restore(ACME, SLUG, 1, expected_head=2, actor="owner")
    assert (caught.value.expected, caught.value.current) == (2, 3)
    assert await db_state(registry) == before


async def test_restore_of_a_missing_version_or_skill_is_not_found(registry):
    await three_versions(registry)
    with pytest.raises(VersionNotFound):
        await registry.restore(ACME, SLUG, 9, expected_head=3, actor="owner")
    with pytest.raises(SkillNotFound):
        await registry.restore(ACME, "other", 1, expected_head=3, actor="owner")
    with pytest.raises(SkillNotFound):
        await registry.restore(Scope("other-co"), SLUG, 1, expected_head=3, actor="owner")


async def test_concurrent_restore_and_edit_on_one_base_exactly_one_wins(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    for first in ("restore", "edit"):  # each order on a skill of its own
        slug = f"{first}-first"
        await three_versions(registry, slug)
        edited = package(slug, files=4, tag="edited")

        async def restore(slug=slug):
            return await registry.restore(ACME, slug, 1, expected_head=3, actor="owner")

        async def edit(slug=slug, edited=edited):
            return await registry.edit(ACME, slug, edited, base_version=3, actor="owner")

        # The first writer is held after its early checks (both see head 3), before
        # storing; the second runs to completion; then the first is released and must
        # lose its CAS.
        park = failpoints.park("write.checked")
        held = asyncio.create_task(restore() if first == "restore" else edit())
        await park.reached.wait()
        winner = await (edit() if first == "restore" else restore())
        park.release.set()
        with pytest.raises(HeadConflict) as caught:
            await held
        assert winner.version == 4, first
        assert (caught.value.expected, caught.value.current) == (3, 4), first
        page = await registry.history(ACME, slug)
        assert [v.number for v in page.items] == [4, 3, 2, 1], first
        assert page.items[0].origin == ("edit" if first == "restore" else "restore"), first
        assert await live_claims(registry) == 0, first


async def test_edit_turns_auto_improve_off_unless_kept(registry):
    await three_versions(registry)  # edits: automatic improvements are off now
    assert not (await registry.skill_status(ACME, SLUG)).auto_improve
    await registry.set_auto_improve(ACME, SLUG, enabled=True, actor="o")
    await registry.edit(
        ACME, SLUG, package(SLUG, tag="k"), base_version=3, actor="o", keep_auto_improve=True
    )
    assert (await registry.skill_status(ACME, SLUG)).auto_improve
    await registry.edit(ACME, SLUG, package(SLUG, tag="e"), base_version=4, actor="o")
    status = await registry.skill_status(ACME, SLUG)
    assert (status.head, status.auto_improve) == (5, False)
    assert (await registry.history(ACME, SLUG)).items[0].origin == Origin.EDIT.value


async def test_edit_on_a_moved_head_fails_and_leaves_everything_as_it_was(registry):
    await three_versions(registry)
    before = await db_state(registry)
    with pytest.raises(HeadConflict) as caught:
        await registry.edit(ACME, SLUG, package(SLUG, tag="late"), base_version=2, actor="o")
    assert not isinstance(caught.value, DraftKept)
    assert await db_state(registry) == before


async def test_edit_on_a_moved_head_keeps_the_draft_as_a_proposal_when_asked(registry):
    await three_versions(registry)
    draft = package(SLUG, tag="draft")
    count = await event_count(registry)
    with pytest.raises(DraftKept) as caught:
        await registry.edit(ACME, SLUG, draft, base_version=2, actor="o", keep_draft=True)
    assert isinstance(caught.value, HeadConflict)
    assert (caught.value.expected, caught.value.current) == (2, 3)
    proposal = caught.value.proposal
    assert as_bytes(await registry.read_proposal(ACME, proposal)) == as_bytes(draft)
    detail = await registry.proposal(ACME, proposal)
    assert (detail.summary.status, detail.summary.base_version) == ("stale", 2)
    assert (await registry.skill_status(ACME, SLUG)).head == 3
    assert await event_count(registry) == count + 1
    assert (await events(registry))[-1][2] == "proposed"
    assert await live_claims(registry) == 0
