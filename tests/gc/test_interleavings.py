"""GC against writers, interleaved step by step with failpoints and a driven clock.

No sleeps decide an order: writers and GC are parked at named failpoints and released in
the order each test spells out. In every case no committed version loses a blob: each
test ends by reading every version back (verified) and by `fsck --verify-content`.
Every test runs on SQLite and PostgreSQL, with a local and an S3 blob store.
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from blobstore import compute_digest
from registry import ANY
from registry.settings import Settings
from tests.gc.helpers import HOUR, gc_settings, referenced_digests
from tests.support.faults import InjectedFault
from tests.support.packages import package, publish
from tests.support.scopes import ACME
from tests.support.state import blob_rows, store_digests

SHARED = b"# Shared notes\n\nThe same bytes in more than one package.\n"
SHARED_DIGEST = compute_digest(SHARED)


def with_shared(slug: str, tag: str = "") -> dict:
    files = package(slug, files=2, tag=tag)
    files["references/shared.md"] = SHARED
    return files


async def settle(env, *tasks):
    """Wait for the tasks; return their results or exceptions."""
    return await asyncio.gather(*tasks, return_exceptions=True)


async def wait_for_lock_waiter(env):
    """PostgreSQL: return once some session waits for a row lock.

    SQLite's writer blocks inside the driver's busy handler, where nothing can observe
    it; there the test's outcome is the same in either order, which is what it checks.
    """
    engine = env.registry.engine
    if engine.dialect.name != "postgresql":
        return
    async with engine.connect() as conn:
        for _ in range(2000):
            waiting = await conn.scalar(sa.text("SELECT count(*) FROM pg_locks WHERE NOT granted"))
            await conn.commit()
            if waiting:
                return
            await asyncio.sleep(0.005)
    raise AssertionError("no session ever waited for the lock")


async def assert_nothing_lost(env, *versions):
    """Every version named reads back verified; fsck reads every referenced blob clean."""
    for slug, number in versions:
        await env.registry.read_package(ACME, slug, number)
    report = await env.registry.gc.fsck(verify_content=True)
    assert report.clean, report.problems


async def orphan_shared(env):
    """Leave SHARED stored, unreferenced and unclaimed, past the grace period."""
    env.failpoints.fail("publish.before_commit")
    with pytest.raises(InjectedFault):
        await publish(env.registry, "donor", files=with_shared("donor"))
    assert SHARED_DIGEST in await store_digests(env.raw)
    env.clock.advance(2 * HOUR)


@pytest.mark.parametrize("writer_park", [None, "write.claimed"])
async def test_a_writer_claims_a_digest_gc_has_marked(env, writer_park):
    """tx1 marked X `deleting`; a writer's claim resurrects it; tx2 leaves it alone."""
    await orphan_shared(env)
    gc_parked = env.failpoints.park("gc.marked")
    gc = asyncio.create_task(env.registry.gc.collect())
    await gc_parked.reached.wait()
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "deleting"

    writer_parked = env.failpoints.park(writer_park) if writer_park else None
    writer = asyncio.create_task(publish(env.registry, "taker", files=with_shared("taker")))
    if writer_parked is not None:
        # Claimed (resurrected to `pending`), not yet uploaded: let GC finish first.
        await writer_parked.reached.wait()
        assert (await blob_rows(env.registry))[SHARED_DIGEST] == "pending"
        gc_parked.release.set()
        report = await gc
        writer_parked.release.set()
        pub = await writer
    else:
        pub = await writer
        gc_parked.release.set()
        report = await gc
    assert report.skipped >= 1
    assert SHARED_DIGEST in await store_digests(env.raw)
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "live"
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_a_writer_claims_while_gc_holds_the_row_lock(env):
    """tx2 holds X's row lock: the claim waits, then inserts a fresh row and uploads again."""
    await orphan_shared(env)
    gc_parked = env.failpoints.park("gc.locked")
    gc = asyncio.create_task(env.registry.gc.collect())
    await gc_parked.reached.wait()

    puts = env.store.calls["put"]
    writer = asyncio.create_task(publish(env.registry, "taker", files=with_shared("taker")))
    await wait_for_lock_waiter(env)
    gc_parked.release.set()
    report, pub = await settle(env, gc, writer)
    assert not isinstance(report, BaseException), report
    assert not isinstance(pub, BaseException), pub
    # GC deleted X and the writer stored it again; either way the version has its bytes.
    assert env.store.calls["put"] > puts
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_writer_a_uploads_and_fails_while_writer_b_reuses_the_digest(env):
    """I3: A's failure (and GC after it) must not take X from B, who commits a version naming it."""
    fp = env.failpoints
    a_uploaded = fp.park("write.uploaded")
    fp.fail("write.uploaded", nth=1)
    a = asyncio.create_task(publish(env.registry, "writer-a", files=with_shared("writer-a")))
    await a_uploaded.reached.wait()
    assert SHARED_DIGEST in await store_digests(env.raw)

    b_claimed = fp.park("write.claimed")
    b = asyncio.create_task(publish(env.registry, "writer-b", files=with_shared("writer-b")))
    await b_claimed.reached.wait()
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "pending"

    a_uploaded.release.set()
    with pytest.raises(InjectedFault):
        await a
    # A released its claims; B's claim on X remains. GC, past every grace period but
    # within the claim's lifetime, reclaims A's own blobs and keeps X.
    env.clock.advance(HOUR / 2)
    report = await env.registry.gc.collect(grace=0)
    assert report.blobs_reclaimed == 3  # A's SKILL.md and its two files
    assert SHARED_DIGEST in await store_digests(env.raw)

    b_claimed.release.set()
    pub = await b
    env.clock.advance(2 * HOUR)
    await env.registry.gc.collect(grace=0)
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("writer-b", pub.version))


async def test_gc_between_a_commit_and_its_lost_reply(env):
    """The reply is lost after the commit: GC runs meanwhile; the retry finds the version."""
    fp = env.failpoints
    committed = fp.park("publish.committed")
    fp.fail("publish.committed", nth=1)
    writer = asyncio.create_task(publish(env.registry))
    await committed.reached.wait()
    env.clock.advance(2 * HOUR)
    report = await env.registry.gc.collect(grace=0)
    assert report.blobs_reclaimed == 0
    committed.release.set()
    pub = await writer  # settled by finding its own version: reported as published
    assert (pub.version, pub.created) == (1, True)
    await assert_nothing_lost(env, ("pdf-report", 1))


async def test_gc_reclaims_a_failed_write_then_its_retry_stores_again(env):
    """The write failed before its commit; GC takes its blobs; the caller's retry succeeds."""
    env.failpoints.fail("publish.before_commit")
    with pytest.raises(InjectedFault):
        await publish(env.registry)
    env.clock.advance(2 * HOUR)
    assert (await env.registry.gc.collect()).blobs_reclaimed == 4
    assert await store_digests(env.raw) == set()

    retry_claimed = env.failpoints.park("write.claimed")
    retry = asyncio.create_task(publish(env.registry))
    await retry_claimed.reached.wait()
    # GC again while the retry holds fresh claims: nothing of it is touched.
    env.clock.advance(2 * HOUR)
    assert (await env.registry.gc.collect(grace=0)).blobs_reclaimed == 0
    retry_claimed.release.set()
    pub = await retry
    assert pub.version == 1
    await assert_nothing_lost(env, ("pdf-report", 1))


async def test_a_writer_stalled_past_its_claim_uploads_again(env):
    """The hole `confirm` closes: a stale writer must not confirm another writer's `pending`.

    W uploads its blobs and stalls past its claims' expiry; GC deletes them (objects and
    rows); W2, saving the same package, claims them afresh (`pending`) and stalls before
    uploading. The rows alone cannot tell W2's `pending` from W's: W's publish finds its
    own claims gone, so it claims and uploads again instead of marking the rows `live`
    over missing objects. W2 then fails: the bytes must still be there.
    """
    fp = env.failpoints
    files = with_shared("stalled")
    w_uploaded = fp.park("write.uploaded")
    w = asyncio.create_task(publish(env.registry, "stalled", files=files))
    await w_uploaded.reached.wait()
    digests = await store_digests(env.raw)

    env.clock.advance(HOUR + 1)  # past claim_ttl and the grace period
    report = await env.registry.gc.collect()
    assert report.claims_expired == 4
    assert await store_digests(env.raw) == set()

    w2_claimed = fp.park("write.claimed")
    fp.fail("write.claimed", nth=2)
    w2 = asyncio.create_task(publish(env.registry, "stalled", files=files))
    await w2_claimed.reached.wait()
    assert await blob_rows(env.registry) == dict.fromkeys(digests, "pending")

    w_uploaded.release.set()
    pub = await w
    w2_claimed.release.set()
    with pytest.raises(InjectedFault):
        await w2
    assert await store_digests(env.raw) == digests
    await assert_nothing_lost(env, ("stalled", pub.version))


async def test_a_writer_claims_an_untracked_object_gc_adopted(env):
    """GC inserted a `deleting` row for an object without one; a writer claims it back."""
    await env.raw.put(SHARED_DIGEST, SHARED)
    env.clock.advance(2 * HOUR)
    gc_parked = env.failpoints.park("gc.untracked_marked")
    gc = asyncio.create_task(env.registry.gc.collect())
    await gc_parked.reached.wait()
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "deleting"

    pub = await publish(env.registry, "taker", files=with_shared("taker"))
    gc_parked.release.set()
    report = await gc
    assert report.untracked_reclaimed == 0
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_a_write_deduplicated_against_a_pruned_head_stores_the_blob_again(make_env):
    """W skipped X (its head had it); the head moved, retention pruned it and GC took X."""
    env = await make_env(gc_settings(retention_keep_versions=1))
    first = with_shared("pdf-report", tag="one")
    await publish(env.registry, files=first)
    w_uploaded = env.failpoints.park("write.uploaded")
    edited = dict(first) | {"references/new.md": b"W adds a file, keeps shared.md\n"}
    w = asyncio.create_task(publish(env.registry, files=edited, expected=ANY))
    await w_uploaded.reached.wait()

    # Meanwhile the head moves to a package without X, and v1 is pruned and collected.
    await publish(env.registry, files=package("pdf-report", tag="two"), expected=1)
    pruned = await env.registry.gc.prune()
    assert pruned.versions_pruned == 1
    env.clock.advance(2 * HOUR)
    await env.registry.gc.collect()
    assert SHARED_DIGEST not in await store_digests(env.raw)

    w_uploaded.release.set()
    pub = await w
    assert pub.version == 3
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("pdf-report", 3))


async def test_two_gc_runs_at_once_delete_each_orphan_once(env):
    await publish(env.registry)
    env.failpoints.fail("publish.before_commit", nth=2)
    with pytest.raises(InjectedFault):
        await publish(env.registry, "csv-cleaner")
    env.clock.advance(2 * HOUR)
    first, second = await asyncio.gather(env.registry.gc.collect(), env.registry.gc.collect())
    assert first.blobs_reclaimed + second.blobs_reclaimed == 4
    assert await store_digests(env.raw) == await referenced_digests(env.registry)
    await assert_nothing_lost(env, ("pdf-report", 1))


async def test_settings_default_to_a_one_hour_grace_and_claims():
    settings = Settings()
    assert (settings.gc_grace, settings.claim_ttl) == (HOUR, HOUR)
    assert settings.retention_keep_versions is None
    assert settings.retention_keep_days is None
