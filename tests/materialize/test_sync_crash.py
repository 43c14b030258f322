"""A sync killed (SIGKILL) at each step of a run, then restarted: reconcile's crash matrix.

The same setup and the same checks as `test_crash.py`, with the registry behind HTTP and the
killed process a `skillreg sync` (served by the test's own loop while the process runs):
every skill shows its old or new package (copy mode: or none), never a mix; a restarted
sync converges without reporting its own crash as drift and leaves no garbage (the blob
cache's temp files included); a run with nothing to do writes nothing. The points: every
step of the remote source, and from reconcile's matrix one per phase of a write in each
mode plus those next to the source (reconcile's own test kills the shared engine at all
of them).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from pathlib import Path

import pytest

from registry.failpoints import MATERIALIZE_POINTS, SYNC_POINTS
from tests.materialize.conftest import publish
from tests.materialize.test_crash import COPY_POINTS, DATABASE_POINTS, GARBAGE, LINK_POINTS
from tests.support import crash
from tests.support.scopes import ACME
from tests.support.targets import load_skill, manifest_of, set_skill, tree_snapshot

# The remote source's own steps: the desired state saved, a blob fetched, then cached.
REMOTE_POINTS = [
    ("sync.state_saved", 1),
    ("sync.blob_fetched", 1),
    ("sync.blob_cached", 1),
    ("sync.blob_cached", 4),
]
# From reconcile's matrix (test_crash.py, which kills the same engine at every one of its
# steps): one point per phase of a write, and every point next to the source (the target
# registered, a record sent over HTTP).
ENGINE_POINTS = {
    "link": [
        ("reconcile.locked", 1),
        ("materialize.intent_saved", 1),
        ("materialize.file_verified", 3),
        ("materialize.link_created", 1),
        ("materialize.swapped", 1),
        ("materialize.cache_saved", 1),
        ("reconcile.recorded", 1),
        ("materialize.unlinked", 1),
    ],
    "copy": [
        ("materialize.skill_md_removed", 1),
        ("materialize.file_placed", 1),
        ("materialize.skill_md_placed", 1),
        ("reconcile.recorded", 1),
        ("materialize.swapped", 1),
    ],
}
CASES = [("link", *p) for p in REMOTE_POINTS] + [
    (mode, *p) for mode, points in ENGINE_POINTS.items() for p in points
]
# As in reconcile's matrix: the steps next to the database on both databases, a kill
# between file operations (or of the source's disk cache) on one; each test takes one
# mode's steps against one served registry, a target per step.
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


def test_every_kill_point_is_a_named_failpoint_of_reconciles_matrix_or_the_source():
    assert {name for _, name, _ in CASES} <= {*MATERIALIZE_POINTS, *SYNC_POINTS}
    for mode, points in (("link", LINK_POINTS), ("copy", COPY_POINTS)):
        assert set(ENGINE_POINTS[mode]) <= set(points)


async def _kill_sync(remote, target: Path, point) -> int | None:
    process = _FORKSERVER.Process(
        target=crash.sync_until_killed,
        args=(remote.url, remote.token, str(target), ACME.workspace, point),
    )
    process.start()
    # The process talks to the server in this loop: join it from a thread.
    await asyncio.to_thread(process.join, 120)
    return process.exitcode


def _package(target: Path, slug: str):
    files = load_skill(target, slug)
    return None if files is None else manifest_of(files).hash


async def _seeded(remote, mode: str, targets: list[Path]):
    """`alpha`, `beta`, `gamma` synced to every target at version 1; then updated, `delta`
    new, `gamma` paused: every target has a write, a new skill and a removal to do."""
    registry = remote.registry
    old = {s: (await publish(registry, s, tag="one")).manifest_hash for s in ("alpha", "beta")}
    old["gamma"] = (await publish(registry, "gamma", tag="one")).manifest_hash
    for target in targets:
        await remote.once(target, mode=mode)
    new = {s: (await publish(registry, s, tag="two")).manifest_hash for s in ("alpha", "beta")}
    new["delta"] = (await publish(registry, "delta", tag="one")).manifest_hash
    await set_skill(registry, ACME, "gamma", use_paused=True)
    return old, new


async def _pending(registry, target: Path) -> list[str]:
    pending = (await registry.status("acme")).materialization.pending
    return [p.slug for p in pending if Path(p.target) == target]


async def _killed_then_converges(remote, target, *, mode, point, old, new):
    registry = remote.registry
    name, nth = point
    case = f"{mode}-{name}#{nth}"
    assert await _pending(registry, target), f"{case}: nothing to do on the target"
    code = await _kill_sync(remote, target, point)
    assert code == -signal.SIGKILL, f"the sync was not killed at {case}"

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

    report = await remote.once(target)
    assert report.ok, (case, report.failed)
    if (mode, name) in GARBAGE:
        assert report.swept >= GARBAGE[mode, name], case
    assert not report.repaired, f"{case}: the sync reported its own crash as drift"
    for slug in ("alpha", "beta", "delta"):
        assert _package(target, slug) == new[slug], (case, slug)
    assert not (target / "gamma").exists(), case
    assert not list((target / ".skillreg" / "tmp").iterdir()), case
    assert not list((target / ".skillreg" / "trash").iterdir()), case
    assert not list((target / ".skillreg" / "blobs" / ".tmp").iterdir()), case
    if mode == "link":
        trees = target / ".skillreg" / "trees"
        assert sorted(p.name for p in trees.iterdir()) == ["alpha", "beta", "delta"], case
        for slug in ("alpha", "beta", "delta"):
            held = [t.name for t in (trees / slug).iterdir()]
            assert held == [(target / slug).readlink().name], (case, slug)
    assert not await _pending(registry, target), case

    await remote.once(target)  # the records changed since the last fetch: one full answer
    snapshot = tree_snapshot(target)
    again = await remote.once(target)
    assert again.unchanged == ["alpha", "beta", "delta"], case
    assert (again.fetched, again.hashed) == (0, 0), case
    assert tree_snapshot(target) == snapshot, case


async def _each_point(remote, tmp_path, mode, points):
    """Kill a sync at each of `points`, each on a target of its own; all converge."""
    targets = [tmp_path / f"target-{i}" for i in range(len(points))]
    old, new = await _seeded(remote, mode, targets)
    for target, point in zip(targets, points, strict=True):
        await _killed_then_converges(remote, target, mode=mode, point=point, old=old, new=new)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_sync_killed_next_to_the_database_leaves_old_or_new_and_converges(
    remote, tmp_path, mode
):
    await _each_point(remote, tmp_path, mode, DATABASE_STEPS[mode])


@pytest.mark.slow
@pytest.mark.one_database
@pytest.mark.parametrize("mode", ["link", "copy"])
async def test_a_sync_killed_at_each_file_step_leaves_old_or_new_and_converges(
    remote, tmp_path, mode
):
    await _each_point(remote, tmp_path, mode, DISK_STEPS[mode])
