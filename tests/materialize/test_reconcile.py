"""Reconcile's contract on SQLite and PostgreSQL: fill, converge, remove, record, refuse."""

from __future__ import annotations

import asyncio
import os

import pytest
import sqlalchemy as sa

from registry import Scope
from registry.errors import EntryInTheWay, TargetBusy, TargetInvalid, TargetMismatch
from tests.materialize.conftest import expected_files, publish
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import package
from tests.support.scopes import ACME
from tests.support.targets import load_skill, rows, set_skill, tree_snapshot


async def test_fills_a_target_with_one_link_per_skill(registry, target):
    for slug in ("alpha", "beta"):
        await publish(registry, slug)
    report = await registry.reconcile(ACME, target)
    assert report.written == ["alpha", "beta"]
    assert report.ok
    for slug in ("alpha", "beta"):
        link = str((target / slug).readlink())
        assert link.startswith(f".skillreg/trees/{slug}/")
        assert load_skill(target, slug) == expected_files(slug)
        assert (target / slug / "scripts" / "run.py").stat().st_mode & 0o777 == 0o755
        assert (target / slug / "SKILL.md").stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in target.iterdir()) == [".skillreg", "alpha", "beta"]


async def test_applied_state_and_one_event_per_change_are_recorded(registry, target):
    pub = await publish(registry, "alpha")
    report = await registry.reconcile(ACME, target)
    [row] = await rows(registry, "materializations")
    assert (row["slug"], row["manifest_hash"], row["version"], row["outcome"]) == (
        "alpha",
        pub.manifest_hash,
        1,
        "applied",
    )
    assert row["target_id"] == report.target_id
    [registered] = await rows(registry, "materialization_targets")
    assert registered["path"] == str(target.resolve())
    kinds = [e["kind"] for e in await rows(registry, "events")]
    assert kinds == ["published", "materialize_target_registered", "materialized"]


@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_second_reconcile_writes_nothing(registry, target, mode):
    for slug in ("alpha", "beta", "gamma"):
        await publish(registry, slug, package(slug, files=5))
    await registry.reconcile(ACME, target, mode=mode)
    disk = tree_snapshot(target)
    db = {t: await rows(registry, t) for t in ("materializations", "events")}
    again = await registry.reconcile(ACME, target)
    assert again.unchanged == ["alpha", "beta", "gamma"]
    assert again.hashed == 0  # the stat cache answered for every file
    assert tree_snapshot(target) == disk
    assert {t: await rows(registry, t) for t in ("materializations", "events")} == db


async def test_a_committed_but_unmaterialised_version_is_completed_by_the_next_reconcile(
    registry, target
):
    await publish(registry, "alpha", tag="one")
    await registry.reconcile(ACME, target)
    second = await publish(registry, "alpha", tag="two")
    await publish(registry, "beta")
    pending = (await registry.status("acme")).materialization.pending
    assert {(p.slug, p.action, p.desired_version, p.applied_version) for p in pending} == {
        ("alpha", "write", 2, 1),
        ("beta", "write", 1, None),
    }
    report = await registry.reconcile(ACME, target)
    assert report.written == ["alpha", "beta"]
    assert report.outcome("alpha").previous_hash != second.manifest_hash
    assert load_skill(target, "alpha") == expected_files("alpha", tag="two")
    status = (await registry.status("acme")).materialization
    assert status.pending == ()
    assert [(t.applied, t.pending, t.failed) for t in status.targets] == [(2, 0, 0)]


async def test_the_old_tree_is_removed_after_the_swap(registry, target):
    await publish(registry, "alpha", tag="one")
    await registry.reconcile(ACME, target)
    await publish(registry, "alpha", tag="two")
    await registry.reconcile(ACME, target)
    trees = list((target / ".skillreg" / "trees" / "alpha").iterdir())
    assert [t.name for t in trees] == [(target / "alpha").readlink().name]
    assert not list((target / ".skillreg" / "tmp").iterdir())


@pytest.mark.parametrize(
    ("column", "value"),
    [("use_paused", True), ("state", "deleted"), ("state", "archived")],
)
async def test_skills_not_in_use_are_removed(registry, target, column, value):
    await publish(registry, "alpha")
    await publish(registry, "beta")
    await registry.reconcile(ACME, target)
    await set_skill(registry, ACME, "alpha", **{column: value})
    report = await registry.reconcile(ACME, target)
    assert report.removed == ["alpha"]
    assert not os.path.lexists(target / "alpha")
    assert not (target / ".skillreg" / "trees" / "alpha").exists()
    assert load_skill(target, "beta") == expected_files("beta")
    alpha = next(r for r in await rows(registry, "materializations") if r["slug"] == "alpha")
    assert (alpha["manifest_hash"], alpha["outcome"]) == (None, "removed")
    assert (await registry.status("acme")).materialization.pending == ()
    again = await registry.reconcile(ACME, target)
    assert again.removed == []


async def test_resumed_use_brings_the_skill_back(registry, target):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    await set_skill(registry, ACME, "alpha", use_paused=True)
    await registry.reconcile(ACME, target)
    pending = (await registry.status("acme")).materialization.pending
    assert pending == ()
    await set_skill(registry, ACME, "alpha", use_paused=False)
    [item] = (await registry.status("acme")).materialization.pending
    assert (item.slug, item.action) == ("alpha", "write")
    report = await registry.reconcile(ACME, target)
    assert report.written == ["alpha"]
    assert load_skill(target, "alpha") == expected_files("alpha")


async def test_a_skill_deleted_then_recreated_under_the_same_slug(registry, target):
    await publish(registry, "alpha", tag="old")
    await registry.reconcile(ACME, target)
    await set_skill(registry, ACME, "alpha", state="deleted")
    await publish(registry, "alpha", tag="new")
    report = await registry.reconcile(ACME, target)
    assert report.written == ["alpha"]
    assert load_skill(target, "alpha") == expected_files("alpha", tag="new")


async def test_an_entry_the_reconciler_did_not_create_is_left_alone(registry, target):
    await publish(registry, "alpha")
    await publish(registry, "beta")
    mine = target / "alpha"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    (target / "unrelated").mkdir()
    report = await registry.reconcile(ACME, target)
    outcome = report.outcome("alpha")
    assert outcome.action == "failed"
    assert isinstance(outcome.error, EntryInTheWay)
    assert (mine / "notes.txt").read_text() == "mine"
    assert report.written == ["beta"]
    assert (target / "unrelated").is_dir()
    [pending] = (await registry.status("acme")).materialization.pending
    assert pending.slug == "alpha"
    assert "entry_in_the_way" in pending.error


async def test_a_target_belongs_to_one_scope_and_one_mode(registry, target):
    await publish(registry, "alpha")
    await registry.reconcile(ACME, target)
    with pytest.raises(TargetMismatch) as caught:
        await registry.reconcile(Scope("other"), target)
    assert caught.value.field == "scope"
    with pytest.raises(TargetMismatch) as caught:
        await registry.reconcile(ACME, target, mode="copy")
    assert caught.value.field == "mode"
    assert (await registry.reconcile(ACME, target, mode="link")).unchanged == ["alpha"]


async def test_a_file_or_a_linked_private_area_is_not_a_usable_target(registry, tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(TargetInvalid):
        await registry.reconcile(ACME, file)
    planted = tmp_path / "planted"
    planted.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (planted / ".skillreg").symlink_to(outside)
    with pytest.raises(TargetInvalid) as caught:
        await registry.reconcile(ACME, planted)
    assert caught.value.rule == "private_area_not_a_directory"
    assert not list(outside.iterdir())


async def test_one_reconciler_per_target(make_registry, target):
    failpoints = ScriptedFailpoints()
    first = await make_registry(failpoints=failpoints)
    second = await make_registry()
    await publish(first, "alpha")
    park = failpoints.park("materialize.swapped")
    running = asyncio.create_task(first.reconcile(ACME, target))
    await park.reached.wait()
    with pytest.raises(TargetBusy, match="another reconciler is running on target"):
        await second.reconcile(ACME, target)
    park.release.set()
    assert (await running).written == ["alpha"]
    assert (await second.reconcile(ACME, target)).unchanged == ["alpha"]


async def test_a_skill_that_waits_does_not_hold_up_the_others(make_registry, target):
    """Skills are materialised side by side: one parked before its swap, another finishes."""
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    for slug in ("alpha", "beta"):
        await publish(registry, slug)
    swapping = failpoints.park("materialize.swapped")
    done = failpoints.park("reconcile.skill_done")
    running = asyncio.create_task(registry.reconcile(ACME, target))
    async with asyncio.timeout(60):  # one skill at a time would never get here
        await swapping.reached.wait()
        await done.reached.wait()
    assert failpoints.hits["materialize.swapped"] == 2  # both skills
    done.release.set()
    swapping.release.set()
    report = await running
    assert report.written == ["alpha", "beta"]
    assert {s: load_skill(target, s) for s in ("alpha", "beta")} == {
        s: expected_files(s) for s in ("alpha", "beta")
    }


async def test_a_second_reconciler_can_wait_for_the_first(make_registry, target):
    first_points = ScriptedFailpoints()
    second_points = ScriptedFailpoints()
    first = await make_registry(failpoints=first_points)
    second = await make_registry(failpoints=second_points)
    await publish(first, "alpha")
    parked = first_points.park("materialize.swapped")
    running = asyncio.create_task(first.reconcile(ACME, target))
    await parked.reached.wait()
    waiting = second_points.park("reconcile.lock_wait")
    waiter = asyncio.create_task(second.reconcile(ACME, target, wait=True))
    await waiting.reached.wait()
    waiting.release.set()  # the waiter now blocks on the lock itself
    parked.release.set()
    assert (await running).written == ["alpha"]
    assert (await waiter).unchanged == ["alpha"]
    assert second_points.hits["reconcile.locked"] == 1


async def test_a_missing_blob_fails_the_skill_and_keeps_the_old_package(
    registry, target, local_store
):
    await publish(registry, "alpha", tag="one")
    await publish(registry, "beta")
    await registry.reconcile(ACME, target)
    await publish(registry, "alpha", tag="two")
    info = await registry.package_info(ACME, "alpha")
    changed = next(e for e in info.manifest.entries if e.path == "SKILL.md")
    await local_store.delete(changed.digest)
    report = await registry.reconcile(ACME, target)
    assert report.failed.keys() == {"alpha"}
    assert report.outcome("alpha").error_code == "integrity_error"
    assert load_skill(target, "alpha") == expected_files("alpha", tag="one")
    [pending] = (await registry.status("acme")).materialization.pending
    assert (pending.slug, pending.applied_version, pending.desired_version) == ("alpha", 1, 2)
    assert pending.error.startswith("integrity_error")
    assert report.unchanged == ["beta"]


async def test_workspaces_do_not_see_each_others_targets(registry, tmp_path):
    other = Scope("other-co")
    await publish(registry, "alpha")
    await publish(registry, "alpha", scope=other)
    await registry.reconcile(ACME, tmp_path / "a")
    await registry.reconcile(other, tmp_path / "b")
    mine = (await registry.status("acme")).materialization
    assert [t.path for t in mine.targets] == [str((tmp_path / "a").resolve())]
    every = (await registry.status()).materialization
    assert len(every.targets) == 2
    async with registry.engine.connect() as conn:
        workspaces = (
            await conn.execute(sa.text("SELECT DISTINCT workspace FROM materializations"))
        ).scalars()
        assert sorted(workspaces) == ["acme", "other-co"]


async def test_a_cancelled_reconcile_finishes_its_step_releases_the_target_and_converges(
    make_registry, target
):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await publish(registry, "alpha", tag="one")
    await registry.reconcile(ACME, target)
    await publish(registry, "alpha", tag="two")
    park = failpoints.park("materialize.file_placed")
    running = asyncio.create_task(registry.reconcile(ACME, target))
    await park.reached.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert load_skill(target, "alpha") == expected_files("alpha", tag="one")
    park.release.set()  # the worker thread finishes its build; then the target is closed
    report = await registry.reconcile(ACME, target, wait=True)
    assert report.written == ["alpha"]
    assert not report.repaired
    assert load_skill(target, "alpha") == expected_files("alpha", tag="two")
    assert len(list((target / ".skillreg" / "trees" / "alpha").iterdir())) == 1


async def test_a_reconcile_cancelled_while_waiting_for_the_lock_does_not_keep_it(
    make_registry, target
):
    first_points, second_points = ScriptedFailpoints(), ScriptedFailpoints()
    first = await make_registry(failpoints=first_points)
    second = await make_registry(failpoints=second_points)
    await publish(first, "alpha")
    parked = first_points.park("materialize.swapped")
    running = asyncio.create_task(first.reconcile(ACME, target))
    await parked.reached.wait()
    waiting = second_points.park("reconcile.lock_wait")
    waiter = asyncio.create_task(second.reconcile(ACME, target, wait=True))
    await waiting.reached.wait()
    waiter.cancel()
    waiting.release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    parked.release.set()
    await running
    third = await make_registry()
    assert (await third.reconcile(ACME, target, wait=True)).unchanged == ["alpha"]
    assert second_points.hits["reconcile.locked"] == 0
