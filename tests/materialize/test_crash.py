"""A reconciler killed (SIGKILL) at each step of a reconcile, then restarted.

Setup: `alpha` and `beta` materialised at version 1 and then updated, `delta` new, `gamma`
paused (to be removed). A real reconciler process is killed at one step; then the target
must show, for every skill, the old package or the new one (copy mode: or no `SKILL.md`,
which a loader skips), never a mix. A restarted reconcile converges without reporting its
own crash as drift, and a third writes nothing.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from pathlib import Path

import pytest

from registry.failpoints import MATERIALIZE_POINTS
from tests.materialize.conftest import publish
from tests.support import crash
from tests.support.scopes import ACME
from tests.support.targets import load_skill, manifest_of, set_skill, tree_snapshot

LINK_POINTS = [
    ("reconcile.locked", 1),
    ("materialize.intent_saved", 1),
    ("materialize.tree_created", 1),
    ("materialize.file_written", 1),
    ("materialize.file_placed", 1),
    ("materialize.file_verified", 3),
    ("materialize.tree_synced", 1),
    ("materialize.link_created", 1),
    ("materialize.swapped", 1),
    ("materialize.cache_saved", 1),
    ("reconcile.recorded", 1),
    ("materialize.old_removed", 1),
    ("reconcile.skill_done", 1),
    ("materialize.swapped", 2),
    ("materialize.swapped", 3),
    ("materialize.unlinked", 1),
]
COPY_POINTS = [
    ("materialize.intent_saved", 1),
    ("materialize.skill_md_removed", 1),
    ("materialize.pruned", 1),
    ("materialize.file_written", 1),
    ("materialize.file_placed", 1),
    ("materialize.file_verified", 2),
    ("materialize.skill_md_placed", 1),
    ("materialize.cache_saved", 1),
    ("reconcile.recorded", 1),
    ("reconcile.skill_done", 1),
    ("materialize.skill_md_removed", 2),
    ("materialize.tree_created", 1),
    ("materialize.swapped", 1),
    ("materialize.unlinked", 1),
]
# Steps after which a killed run leaves entries under .skillreg/ that the next one sweeps.
GARBAGE = {("link", "materialize.tree_synced"): 1, ("link", "materialize.link_created"): 2}
CASES = [("link", *p) for p in LINK_POINTS] + [("copy", *p) for p in COPY_POINTS]
# A kill between two file operations is a property of the disk: those steps run on one
# database. The steps next to the database run on both: the target locked before the
# desired state is read, the cache saved before the record is sent, the record sent. Each
# test takes one mode's steps against one registry, a target per step.
DATABASE_POINTS = {"reconcile.locked", "materialize.cache_saved", "reconcile.recorded"}
DATABASE_STEPS = {
    mode: [(n, i) for m, n, i in CASES if m == mode and n in DATABASE_POINTS]
    for mode in ("link", "copy")
}
DISK_STEPS = {
    mode: [(n, i) for m, n, i in CASES if m == mode and n not in DATABASE_POINTS]
    for mode in ("link", "copy")
}

_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["tests.support.crash"])


def test_every_kill_point_is_a_named_failpoint():
    assert {name for _, name, _ in CASES} <= set(MATERIALIZE_POINTS)


async def _kill_reconciler(database_url: str, blobs: Path, target: Path, point) -> int | None:
    process = _FORKSERVER.Process(
        target=crash.reconcile_until_killed,
        args=(database_url, str(blobs), str(target), ACME.workspace, point),
    )
    process.start()
    await asyncio.to_thread(process.join, 120)
    return process.exitcode


def _package(target: Path, slug: str):
    files = load_skill(target, slug)
    return None if files is None else manifest_of(files).hash


async def _seeded(registry, mode: str, targets: list[Path]):
    """`alpha`, `beta`, `gamma` on every target at version 1; then updated, `delta` new,
    `gamma` paused: every target has a write, a new skill and a removal to do."""
    old = {s: (await publish(registry, s, tag="one")).manifest_hash for s in ("alpha", "beta")}
    old["gamma"] = (await publish(registry, "gamma", tag="one")).manifest_hash
    for target in targets:
        await registry.reconcile(ACME, target, mode=mode)
    new = {s: (await publish(registry, s, tag="two")).manifest_hash for s in ("alpha", "beta")}
    new["delta"] = (await publish(registry, "delta", tag="one")).manifest_hash
    await set_skill(registry, ACME, "gamma", use_paused=True)
    return old, new


async def _pending(registry, target: Path) -> list[str]:
    pending = (await registry.status("acme")).materialization.pending
    return [p.slug for p in pending if Path(p.target) == target]


async def _killed_then_converges(registry, target, *, blobs, database_url, mode, point, old, new):
    name, nth = point
    case = f"{mode}-{name}#{nth}"
    assert await _pending(registry, target), f"{case}: nothing to do on the target"
    code = await _kill_reconciler(database_url, blobs, target, point)
    assert code == -signal.SIGKILL, f"the reconciler was not killed at {case}"

    allowed = {
        "alpha": {old["alpha"], new["alpha"]},
        "beta": {old["beta"], new["beta"]},
        "gamma": {old["gamma"], None},
        "delta": {new["delta"], None},
    }
    for slug, packages in allowed.items():
        seen = _package(target, slug)
        if mode == "copy":
            packages = packages | {None}  # noqa: PLW2901 - copy mode may hide SKILL.md
        assert seen in packages, f"{case}: {slug} shows a package that was never published"

    report = await registry.reconcile(ACME, target)
    assert report.ok, (case, report.failed)
    if (mode, name) in GARBAGE:
        assert report.swept >= GARBAGE[mode, name], case  # the crashed run's tree, temp link
    assert not report.repaired, f"{case}: the reconciler reported its own crash as drift"
    for slug in ("alpha", "beta", "delta"):
        assert _package(target, slug) == new[slug], (case, slug)
    assert not (target / "gamma").exists(), case
    assert not list((target / ".skillreg" / "tmp").iterdir()), case
    assert not list((target / ".skillreg" / "trash").iterdir()), case
    if mode == "link":
        trees = target / ".skillreg" / "trees"
        assert sorted(p.name for p in trees.iterdir()) == ["alpha", "beta", "delta"], case
        for slug in ("alpha", "beta", "delta"):
            held = [t.name for t in (trees / slug).iterdir()]
            assert held == [(target / slug).readlink().name], (case, slug)
    assert not await _pending(registry, target), case

    snapshot = tree_snapshot(target)
    again = await registry.reconcile(ACME, target)
    assert again.unchanged == ["alpha", "beta", "delta"], case
    assert tree_snapshot(target) == snapshot, case


async def _each_point(registry, tmp_path, *, blobs, database_url, mode, points):
    """Kill a reconciler at each of `points`, each on a target of its own; all converge."""
    targets = [tmp_path / f"target-{i}" for i in range(len(points))]
    old, new = await _seeded(registry, mode, targets)
    for target, point in zip(targets, points, strict=True):
        await _killed_then_converges(
            registry,
            target,
            blobs=blobs,
            database_url=database_url,
            mode=mode,
            point=point,
            old=old,
            new=new,
        )


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_reconciler_killed_next_to_the_database_leaves_old_or_new_and_converges(
    registry, tmp_path, local_store, database_url, mode
):
    await _each_point(
        registry,
        tmp_path,
        blobs=local_store.root,
        database_url=database_url,
        mode=mode,
        points=DATABASE_STEPS[mode],
    )


@pytest.mark.slow
@pytest.mark.one_database
@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_reconciler_killed_at_each_file_step_leaves_old_or_new_and_converges(
    registry, tmp_path, local_store, database_url, mode
):
    await _each_point(
        registry,
        tmp_path,
        blobs=local_store.root,
        database_url=database_url,
        mode=mode,
        points=DISK_STEPS[mode],
    )
