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


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "name", "nth"),
    [
        pytest.param(
            mode,
            name,
            nth,
            id=f"{mode}-{name}#{nth}",
            # As in reconcile's matrix: a kill between file operations (or of the source's
            # disk cache) on one database, the steps next to the database on both.
            marks=() if name in DATABASE_POINTS else pytest.mark.one_database,
        )
        for mode, name, nth in CASES
    ],
)
async def test_a_killed_sync_leaves_old_or_new_and_converges(remote, target, *, mode, name, nth):
    registry = remote.registry
    old = {s: (await publish(registry, s, tag="one")).manifest_hash for s in ("alpha", "beta")}
    old["gamma"] = (await publish(registry, "gamma", tag="one")).manifest_hash
    await remote.once(target, mode=mode)
    new = {s: (await publish(registry, s, tag="two")).manifest_hash for s in ("alpha", "beta")}
    new["delta"] = (await publish(registry, "delta", tag="one")).manifest_hash
    await set_skill(registry, ACME, "gamma", use_paused=True)

    code = await _kill_sync(remote, target, (name, nth))
    assert code == -signal.SIGKILL, f"the sync was not killed at {name}#{nth}"

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
        assert seen in packages, f"{slug} shows a package that was never published"

    report = await remote.once(target)
    assert report.ok, report.failed
    if (mode, name) in GARBAGE:
        assert report.swept >= GARBAGE[mode, name]
    assert not report.repaired, "the sync reported its own crash as drift"
    for slug in ("alpha", "beta", "delta"):
        assert _package(target, slug) == new[slug]
    assert not (target / "gamma").exists()
    assert not list((target / ".skillreg" / "tmp").iterdir())
    assert not list((target / ".skillreg" / "trash").iterdir())
    assert not list((target / ".skillreg" / "blobs" / ".tmp").iterdir())
    if mode == "link":
        trees = target / ".skillreg" / "trees"
        assert sorted(p.name for p in trees.iterdir()) == ["alpha", "beta", "delta"]
        for slug in ("alpha", "beta", "delta"):
            assert [t.name for t in (trees / slug).iterdir()] == [(target / slug).readlink().name]
    assert not (await registry.status("acme")).materialization.pending

    await remote.once(target)  # the records changed since the last fetch: one full answer
    snapshot = tree_snapshot(target)
    again = await remote.once(target)
    assert again.unchanged == ["alpha", "beta", "delta"]
    assert (again.fetched, again.hashed) == (0, 0)
    assert tree_snapshot(target) == snapshot
