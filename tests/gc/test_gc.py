"""GC's contract: what it reclaims and when, bounded batches, restarts, runs and figures.

Every test runs on SQLite and PostgreSQL, with a local and an S3 blob store.
"""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import timedelta

import pytest

from blobstore import compute_digest
from registry.db import blobs as db_blobs
from registry.db.engine import write_connection
from tests.gc.helpers import HOUR, PURGE_LEASE, gc_settings, read_all, referenced_digests
from tests.support.cases import naming
from tests.support.faults import InjectedFault
from tests.support.packages import package, publish
from tests.support.scopes import ACME
from tests.support.state import blob_rows, db_state, live_claims, store_digests


async def orphaned_write(env, slug="pdf-report", **kwargs):
    """A write that uploads everything and then fails before its commit; return its digests.

    Its uploads are the digests it put (each caller's package is new to the store); the
    store is not listed around it (on S3 two listings cost more than the write).
    """
    fp = env.failpoints
    fp.fail("publish.before_commit", nth=fp.hits["publish.before_commit"] + 1)
    puts = len(env.store.put_digests)
    with pytest.raises(InjectedFault):
        await publish(env.registry, slug, expected=kwargs.pop("expected", None), **kwargs)
    return set(env.store.put_digests[puts:])


async def assert_converged(env):
    """No orphan is left, every reference resolves and fsck reads everything clean."""
    referenced = await referenced_digests(env.registry)
    assert await store_digests(env.raw) == referenced
    assert await blob_rows(env.registry) == dict.fromkeys(referenced, "live")
    report = await env.registry.gc.fsck(verify_content=True)
    assert report.clean, report.problems
    assert report.orphan_count == 0


async def test_a_failed_writes_blobs_are_kept_for_the_grace_period_referenced_ones_always(env):
    await publish(env.registry)
    orphans = await orphaned_write(env, tag="v2", expected=1)
    assert orphans
    assert (await env.registry.gc.collect()).blobs_reclaimed == 0
    env.clock.advance(HOUR - 1)
    assert (await env.registry.gc.collect()).blobs_reclaimed == 0
    assert orphans <= await store_digests(env.raw)

    env.clock.advance(2)
    report = await env.registry.gc.collect()
    assert report.blobs_reclaimed == len(orphans)
    assert report.bytes_reclaimed == sum(
        len(b) for b in _bytes_of(package("pdf-report", tag="v2"), orphans)
    )
    assert not orphans & await store_digests(env.raw)
    await assert_converged(env)
    await read_all(env.registry)

    # Referenced blobs survive any grace and clock: old versions and heads, a month on.
    await publish(env.registry, tag="two", expected=1)
    await publish(env.registry, "csv-cleaner")
    env.clock.advance(30 * 24 * HOUR)
    assert (await env.registry.gc.collect(grace=0)).blobs_reclaimed == 0
    await assert_converged(env)
    for slug, version in (("pdf-report", 1), ("pdf-report", 2), ("csv-cleaner", 1)):
        await env.registry.read_package(ACME, slug, version)


def _bytes_of(files, digests):
    out = []
    for value in files.values():
        data = getattr(value, "data", value)
        if compute_digest(data) in digests:
            out.append(data)
    return out


async def test_an_unexpired_claim_keeps_its_blob_past_the_grace_period(env):
    """A writer that crashed after claiming: its claim protects the blobs until it expires."""
    data = b"claimed by a writer that died"
    digest = compute_digest(data)
    now = env.clock.now()

    async with env.registry.engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await db_blobs.claim(
                conn,
                write_id="dead-writer",
                workspace="acme",
                sizes={digest: len(data)},
                now=now,
                expires_at=now + timedelta(seconds=HOUR),
            )
    await env.raw.put(digest, data)
    env.clock.advance(HOUR - 1)
    report = await env.registry.gc.collect(grace=0)
    assert (report.blobs_reclaimed, report.claims_expired) == (0, 0)
    assert digest in await store_digests(env.raw)

    env.clock.advance(2)
    report = await env.registry.gc.collect(grace=0)
    assert (report.blobs_reclaimed, report.claims_expired) == (1, 1)
    assert await live_claims(env.registry) == 0
    await assert_converged(env)


async def test_an_object_without_a_row_is_reclaimed_once_past_the_grace_period(env):
    await publish(env.registry)
    data = b"uploaded by a writer that crashed before its claim was recorded"
    digest = compute_digest(data)
    await env.raw.put(digest, data)
    report = await env.registry.gc.fsck()
    assert [(o.digest, o.status) for o in report.orphans] == [(digest, "untracked")]
    assert report.clean

    assert (await env.registry.gc.collect()).blobs_reclaimed == 0
    env.clock.advance(2 * HOUR)
    report = await env.registry.gc.collect()
    assert (report.blobs_reclaimed, report.untracked_reclaimed) == (1, 1)
    assert report.bytes_reclaimed == len(data)
    await assert_converged(env)


async def test_small_batches_reclaim_everything(make_env):
    env = await make_env(gc_settings(gc_batch_size=2, gc_delete_concurrency=2))
    await publish(env.registry)
    orphans = set()
    for i in range(4):
        orphans |= await orphaned_write(env, f"skill-{i}", tag=str(i))
    for i in range(3):
        data = f"stray {i}".encode()
        await env.raw.put(compute_digest(data), data)
    env.clock.advance(2 * HOUR)
    report = await env.registry.gc.collect()
    assert report.blobs_reclaimed == len(orphans) + 3
    # tx1 marked at most a batch at a time, tx2 deleted at most a chunk at a time.
    assert env.failpoints.hits["gc.marked"] >= len(orphans) // 2
    assert env.failpoints.hits["gc.committed"] >= (len(orphans) + 3) // 2
    await assert_converged(env)


GC_POINTS = [
    "gc.claims_expired",
    "gc.marked",
    "gc.locked",
    "gc.fenced",
    "gc.object_deleted",
    "gc.committed",
    "gc.untracked_marked",
]
# Every point on the local store; on S3 the points where GC is talking to the store.
KILLED_AT = {
    "local": GC_POINTS,
    "s3": ["gc.object_deleted", "gc.untracked_marked"],
}


async def test_gc_killed_anywhere_then_restarted_converges(make_env):
    """GC failed and cancelled at each point in turn, on one registry.

    Each case leaves three failed writes and a stray object past the grace period, kills
    a run at its point and restarts GC after the fence expired: the registry converges,
    which is where the next case starts from (a fresh registry per case proved nothing
    more and cost a database each).
    """
    env = await make_env(gc_settings(gc_batch_size=3, gc_delete_concurrency=2))
    await publish(env.registry)
    await publish(env.registry, "csv-cleaner")
    cases = [(p, h) for p in KILLED_AT[env.backend.name] for h in ("fail", "cancel")]
    for finished, (point, how) in enumerate(cases, 1):
        with naming(f"GC killed ({how}) at {point}, {env.backend.name} store"):
            await _kill_and_restart(env, point, how, finished)


async def _kill_and_restart(env, point, how, finished):
    for i in range(3):
        await orphaned_write(env, f"skill-{i}", tag=f"{point}-{how}-{i}")
    stray = f"stray object {point} {how}".encode()
    await env.raw.put(compute_digest(stray), stray)
    env.clock.advance(2 * HOUR)
    # This run's first hit of the point (its second of `gc.object_deleted`).
    nth = env.failpoints.hits[point] + (2 if point == "gc.object_deleted" else 1)
    if how == "fail":
        env.failpoints.fail(point, nth=nth)
        with pytest.raises(InjectedFault):
            await env.registry.gc.collect()
    else:
        env.failpoints.cancel(point, nth=nth)
        with pytest.raises(asyncio.CancelledError):
            await env.registry.gc.collect()

    # Killed mid-sweep: whatever it left (rows marked `deleting`, fenced rows, a fenced
    # row whose object is gone) hides no referenced blob.
    report = await env.registry.gc.fsck(verify_content=True)
    assert report.clean, report.problems
    await read_all(env.registry)

    # A killed run's fence holds its rows until it expires (nothing tells a killed run
    # from a stalled one with a delete in flight); then the next run finishes them.
    env.clock.advance(PURGE_LEASE)
    await env.registry.gc.collect()
    await assert_converged(env)
    figures = await env.registry.gc.figures()
    assert figures.orphan_blobs == 0
    # One finished run per case: each killed run is recorded as failed, not finished.
    assert figures.gc_runs == finished


async def test_figures_a_dry_run_that_changes_nothing_and_the_run_it_predicts(env):
    figures = await env.registry.gc.figures()
    assert (figures.gc_runs, figures.last_gc_at, figures.blobs_stored) == (0, None, 0)
    await publish(env.registry)
    orphans = await orphaned_write(env, "csv-cleaner")
    stray = b"a stray object"
    await env.raw.put(compute_digest(stray), stray)
    figures = await env.registry.gc.figures()
    info = await env.registry.package_info(ACME, "pdf-report")
    assert figures.blobs_referenced == len(info.manifest.entries)
    assert figures.bytes_referenced == info.manifest.total_size
    assert figures.orphan_blobs == len(orphans)  # rows: the stray object has none
    assert figures.reclaimable_blobs == 0  # within the grace period

    env.clock.advance(2 * HOUR)
    assert (await env.registry.gc.figures()).reclaimable_blobs == len(orphans)

    # A dry run changes nothing and predicts the run.
    rows, objects = await db_state(env.registry), await store_digests(env.raw)
    blobs = await blob_rows(env.registry)
    plan = await env.registry.gc.collect(dry_run=True)
    assert plan.dry_run
    assert plan.run_id is None
    assert (plan.blobs_reclaimed, plan.untracked_reclaimed) == (len(orphans) + 1, 1)
    assert await db_state(env.registry) == rows
    assert await store_digests(env.raw) == objects
    assert await blob_rows(env.registry) == blobs
    assert (await env.registry.gc.figures()).gc_runs == 0

    report = await env.registry.gc.collect()
    assert (report.blobs_reclaimed, report.bytes_reclaimed, report.untracked_reclaimed) == (
        plan.blobs_reclaimed,
        plan.bytes_reclaimed,
        plan.untracked_reclaimed,
    )
    figures = await env.registry.gc.figures()
    assert figures.gc_runs == 1
    assert figures.last_gc_at == report.finished_at
    assert figures.last_gc is not None
    assert figures.last_gc.blobs_reclaimed == len(orphans) + 1
    assert figures.blobs_reclaimed_total == len(orphans) + 1
    assert figures.bytes_reclaimed_total == report.bytes_reclaimed
    assert figures.orphan_blobs == 0
    assert figures.bytes_stored == figures.bytes_referenced == info.manifest.total_size
    assert figures.last_gc.store_objects == report.store_objects
    await assert_converged(env)


@pytest.mark.one_database  # the local store's temp files and their locks: no database plays a part
async def test_a_local_stores_abandoned_temp_files_are_swept(make_registry, local_store):
    from tests.gc.helpers import ManualClock  # noqa: PLC0415

    clock = ManualClock()
    registry = await make_registry(clock=clock, settings=gc_settings())
    stale = local_store.root / ".tmp" / "abandoned.tmp"
    stale.write_bytes(b"half an upload")
    old = (clock.current - timedelta(hours=2)).timestamp()
    os.utime(stale, (old, old))
    fresh = local_store.root / ".tmp" / "in-flight.tmp"
    fresh.write_bytes(b"an upload in progress")
    report = await registry.gc.collect()
    assert report.temp_files_removed == 1
    assert not stale.exists()
    assert fresh.exists()


@pytest.mark.one_database  # the local store's temp files and their locks: no database plays a part
async def test_gc_with_no_grace_leaves_an_upload_s_temp_file(
    make_registry, local_store, monkeypatch
):
    """A put parked between writing its temp file and renaming it meets `gc(grace=0)`.

    The sweep used to remove the file (its mtime was past the cutoff), and the rename then
    failed the write with `StorageUnavailable`. The upload holds the file's lock: skipped.
    """
    from tests.gc.helpers import ManualClock  # noqa: PLC0415

    clock = ManualClock()
    registry = await make_registry(clock=clock, settings=gc_settings())
    written, proceed = threading.Event(), threading.Event()
    real_replace = os.replace

    def replace(source, target):
        if not written.is_set():
            written.set()
            proceed.wait()
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    writer = asyncio.create_task(publish(registry))
    try:
        assert await asyncio.to_thread(written.wait, 30)
        clock.advance(60)  # the temp file is older than the run's cutoff
        report = await registry.gc.collect(grace=0)
        assert report.temp_files_removed == 0
    finally:
        proceed.set()
    pub = await writer
    assert (pub.version, pub.created) == (1, True)
    await read_all(registry)
    assert not list((local_store.root / ".tmp").iterdir())


@pytest.mark.one_database  # an argument check: neither the database nor the store plays a part
async def test_negative_grace_is_refused(registry):
    with pytest.raises(ValueError, match="negative"):
        await registry.gc.collect(grace=-1)
