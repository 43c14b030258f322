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
from registry.errors import StorageUnavailable
from registry.settings import Settings
from tests.gc.helpers import HOUR, PURGE_LEASE, gc_settings, referenced_digests
from tests.support.cases import naming
from tests.support.faults import InjectedFault, Park
from tests.support.packages import package, publish
from tests.support.scopes import ACME, GLOBEX
from tests.support.state import blob_rows, store_digests

SHARED = b"# Shared notes\n\nThe same bytes in more than one package.\n"
SHARED_DIGEST = compute_digest(SHARED)


def with_shared(slug: str, tag: str = "", shared: bytes = SHARED) -> dict:
    files = package(slug, files=2, tag=tag)
    files["references/shared.md"] = shared
    return files


def variants(cases):
    """Each case of a test with its own shared bytes, on one registry: (case, bytes, digest).

    A case ends with the registry converged (the donor's blobs reclaimed, the taker's
    version holding its shared blob), which is where the next starts from.
    """
    for n, case in enumerate(cases):
        shared = SHARED if n == 0 else SHARED + f"(case {n})\n".encode()
        yield case, shared, compute_digest(shared)


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
    """Every version named reads back verified; fsck reads every referenced blob clean.

    A version is `(slug, number)` in ACME, or `(scope, slug, number)`.
    """
    for version in versions:
        scope, slug, number = version if len(version) == 3 else (ACME, *version)
        await env.registry.read_package(scope, slug, number)
    report = await env.registry.gc.fsck(verify_content=True)
    assert report.clean, report.problems


async def reached(park, task):
    """Wait until `task` is held at `park`; if it ends first, raise what it raised."""
    waiting = asyncio.ensure_future(park.reached.wait())
    done, _ = await asyncio.wait({waiting, task}, return_when=asyncio.FIRST_COMPLETED)
    if waiting not in done:
        waiting.cancel()
        task.result()
        raise AssertionError("the task finished without reaching its park")


def park_delete(env, digest, *, after=False):
    """Hold GC's delete of `digest` before it reaches the store (or after it returned)."""
    park = Park()

    async def hook(deleting):
        if deleting == digest and not park.reached.is_set():
            park.reached.set()
            await park.release.wait()

    if after:
        env.store.after_delete = hook
    else:
        env.store.before_delete = hook
    return park


async def claims_on(env, digest):
    async with env.registry.engine.connect() as conn:
        return await conn.scalar(
            sa.text("SELECT count(*) FROM blob_claims WHERE digest = :d"), {"d": digest}
        )


async def orphan_shared(env, shared=SHARED, donor="donor"):
    """Leave `shared` stored, unreferenced and unclaimed, past the grace period."""
    fp = env.failpoints
    fp.fail("publish.before_commit", nth=fp.hits["publish.before_commit"] + 1)
    with pytest.raises(InjectedFault):
        await publish(env.registry, donor, files=with_shared(donor, shared=shared))
    assert compute_digest(shared) in await store_digests(env.raw)
    env.clock.advance(2 * HOUR)


async def test_a_writer_claims_a_digest_gc_has_marked(env):
    """tx1 marked X `deleting`; a writer's claim resurrects it; tx2 leaves it alone.

    The writer commits before GC goes on, or (parked after its claim) after GC finished.
    """
    for n, (writer_park, shared, x) in enumerate(variants([None, "write.claimed"])):
        with naming(f"the writer parked at {writer_park}"):
            await _claim_a_marked_digest(env, writer_park, shared, x, f"taker-{n}")


async def _claim_a_marked_digest(env, writer_park, shared, x, taker):
    await orphan_shared(env, shared, donor=f"donor-{taker}")
    gc_parked = env.failpoints.park("gc.marked")
    gc = asyncio.create_task(env.registry.gc.collect())
    await gc_parked.reached.wait()
    assert (await blob_rows(env.registry))[x] == "deleting"

    writer_parked = env.failpoints.park(writer_park) if writer_park else None
    writer = asyncio.create_task(
        publish(env.registry, taker, files=with_shared(taker, shared=shared))
    )
    if writer_parked is not None:
        # Claimed (resurrected to `pending`), not yet uploaded: let GC finish first.
        await writer_parked.reached.wait()
        assert (await blob_rows(env.registry))[x] == "pending"
        gc_parked.release.set()
        report = await gc
        writer_parked.release.set()
        pub = await writer
    else:
        pub = await writer
        gc_parked.release.set()
        report = await gc
    assert report.skipped >= 1
    assert x in await store_digests(env.raw)
    assert (await blob_rows(env.registry))[x] == "live"
    await assert_nothing_lost(env, (taker, pub.version))


async def test_a_writer_claims_while_gc_holds_the_row_lock(env):
    """tx2 holds X's row lock: the claim waits, then finds X fenced (or gone) and stores it again.

    Either way the write's `confirm` accepts X only from an upload that followed GC's
    delete: a claim on the fenced row adds no claim, so the first confirm is refused and
    the write claims X afresh once GC has removed the row.
    """
    await orphan_shared(env)
    gc_parked = env.failpoints.park("gc.locked")
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(gc_parked, gc)

    puts = env.store.calls["put"]
    uploaded = env.failpoints.park("write.uploaded")
    writer = asyncio.create_task(publish(env.registry, "taker", files=with_shared("taker")))
    await wait_for_lock_waiter(env)
    gc_parked.release.set()
    report = await gc
    assert report.blobs_reclaimed >= 3  # the donor's own blobs, and X unless claimed first
    await reached(uploaded, writer)
    uploaded.release.set()
    pub = await writer
    assert env.store.calls["put"] > puts
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_a_writer_commits_while_gc_deletes_an_object(make_env):
    """GC opens no transaction around a blob-store delete.

    On SQLite the write lock is the whole database's: if GC held it while S3 answered,
    every writer of every workspace would wait on the round trip. Here GC's delete of X
    is parked, and a write to another workspace commits meanwhile (with the lock held, it
    would give up after the busy timeout).
    """
    env = await make_env(gc_settings(sqlite_busy_timeout=0.5))
    await orphan_shared(env)
    deleting = park_delete(env, SHARED_DIGEST)
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(deleting, gc)

    pub = await publish(env.registry, "elsewhere", scope=GLOBEX)
    assert (pub.version, pub.created) == (1, True)
    deleting.release.set()
    report = await gc
    assert report.blobs_reclaimed == 4
    assert SHARED_DIGEST not in await store_digests(env.raw)
    await assert_nothing_lost(env, (GLOBEX, "elsewhere", 1))


async def test_a_writer_claims_a_digest_gc_is_deleting(env):
    """I3 against a delete outside any transaction: the write's upload of X may precede it.

    GC fenced X and is deleting its object. The writer's claim must not resurrect the
    row (the delete could land after the upload, and a version would name a missing
    blob): it leaves X `deleting` and unclaimed, the writer uploads X in vain (or, after
    the delete, into an object GC is about to leave without a row), and its `confirm`
    refuses X. GC removes the row; the write claims X afresh and uploads it again.
    Both orders, one after the other on one registry.
    """
    cases = variants(["before_the_delete", "after_the_delete"])
    for n, (upload, shared, x) in enumerate(cases):
        with naming(f"the writer's upload lands {upload}"):
            await _claim_a_digest_being_deleted(env, upload, shared, x, f"taker-{n}")


async def _claim_a_digest_being_deleted(env, upload, shared, x, taker):
    await orphan_shared(env, shared, donor=f"donor-{taker}")
    deleting = park_delete(env, x, after=upload == "after_the_delete")
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(deleting, gc)

    puts = env.store.put_digests.count(x)
    uploaded = env.failpoints.park("write.uploaded")
    writer = asyncio.create_task(
        publish(env.registry, taker, files=with_shared(taker, shared=shared))
    )
    await reached(uploaded, writer)
    assert (await blob_rows(env.registry))[x] == "deleting"
    assert await claims_on(env, x) == 0
    assert env.store.put_digests.count(x) == puts + 1

    deleting.release.set()
    report = await gc
    # An upload after the delete left X stored without a row once tx3 removed it; GC's
    # listing, its clock hours past the object's time, then reclaims it as untracked.
    late = upload == "after_the_delete"
    assert (report.blobs_reclaimed, report.untracked_reclaimed) == (4 + late, late)
    assert x not in await blob_rows(env.registry)
    uploaded.release.set()
    pub = await writer
    assert env.store.put_digests.count(x) == puts + 2
    assert (await blob_rows(env.registry))[x] == "live"
    assert x in await store_digests(env.raw)
    await assert_nothing_lost(env, (taker, pub.version))


async def test_a_write_that_reaches_its_commit_during_the_purge_stores_again_after_it(env):
    """`confirm` refuses a fenced X; the write claims again until GC is done, then stores X.

    The write's first attempt runs entirely while GC's delete of X is parked: its commit
    is refused. Its second claim also meets the fence; GC then finishes, so the second
    commit finds no row, and the third attempt claims a fresh row and uploads X after the
    delete.
    """
    await orphan_shared(env)
    deleting = park_delete(env, SHARED_DIGEST)
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(deleting, gc)

    puts = env.store.put_digests.count(SHARED_DIGEST)
    hits = env.failpoints.hits.copy()
    again = env.failpoints.park("write.claimed", nth=hits["write.claimed"] + 2)
    writer = asyncio.create_task(publish(env.registry, "taker", files=with_shared("taker")))
    await reached(again, writer)
    # The first attempt got as far as `confirm`, which refused X: no commit.
    assert env.failpoints.hits["publish.checked"] == hits["publish.checked"] + 1
    assert env.failpoints.hits["publish.before_commit"] == hits["publish.before_commit"]
    assert await claims_on(env, SHARED_DIGEST) == 0

    deleting.release.set()
    await gc
    again.release.set()
    pub = await writer
    assert env.store.put_digests.count(SHARED_DIGEST) == puts + 3
    assert SHARED_DIGEST in await store_digests(env.raw)
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_a_fence_left_by_a_killed_run_holds_until_it_expires(env):
    """GC killed after fencing: nothing tells it from a stalled run with a delete in flight.

    Until the fence expires, another run leaves the rows alone and a writer that needs X
    fails cleanly after its attempts (it stores no version). Then the writer's claim
    lifts the fence and resurrects X, and the next run collects the rest.
    """
    await orphan_shared(env)
    env.failpoints.fail("gc.fenced")
    with pytest.raises(InjectedFault):
        await env.registry.gc.collect()
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "deleting"

    assert (await env.registry.gc.collect()).blobs_reclaimed == 0
    with pytest.raises(StorageUnavailable):
        await publish(env.registry, "taker", files=with_shared("taker"))
    assert SHARED_DIGEST in await store_digests(env.raw)

    env.clock.advance(PURGE_LEASE)
    pub = await publish(env.registry, "taker", files=with_shared("taker"))
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "live"
    assert (await env.registry.gc.collect()).blobs_reclaimed == 3  # the donor's own blobs
    await assert_nothing_lost(env, ("taker", pub.version))


async def test_gc_stalled_past_half_its_lease_starts_no_delete(env):
    """The second half of the lease is the margin for a delete in flight; none starts in it."""
    await orphan_shared(env)
    fenced = env.failpoints.park("gc.fenced")
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(fenced, gc)
    env.clock.advance(PURGE_LEASE / 2 + 1)
    fenced.release.set()
    report = await gc
    assert (report.blobs_reclaimed, report.skipped) == (0, 4)
    assert env.store.calls["delete"] == 0
    assert set((await blob_rows(env.registry)).values()) == {"deleting"}

    env.clock.advance(PURGE_LEASE / 2)  # the fence has expired: the next run takes over
    assert (await env.registry.gc.collect()).blobs_reclaimed == 4
    assert await blob_rows(env.registry) == {}


async def test_a_run_finishing_after_its_fence_expired_leaves_a_row_taken_over(env):
    """tx3 deletes only rows still under its own fence.

    GC deleted X's object and stalled before tx3 until its fence expired; a writer's
    claim then resurrected X and its write committed X again. The stale tx3 must not
    delete X's row (the name of the fence it set is gone from it).
    """
    await orphan_shared(env)
    deleted = park_delete(env, SHARED_DIGEST, after=True)
    gc = asyncio.create_task(env.registry.gc.collect())
    await reached(deleted, gc)
    assert SHARED_DIGEST not in await store_digests(env.raw)

    env.clock.advance(PURGE_LEASE)
    pub = await publish(env.registry, "taker", files=with_shared("taker"))
    deleted.release.set()
    report = await gc
    assert report.blobs_reclaimed == 4
    assert (await blob_rows(env.registry))[SHARED_DIGEST] == "live"
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


async def test_a_claim_lost_in_a_crash_is_claimed_again(env):
    """A claim lost while its writer lives on (docs/write-path.md, "Claim").

    A PostgreSQL server restored or failed over to a standby behind it, say:
    the blob rows and the claims it made are gone, the objects the writer uploaded have no
    row, and GC reclaims them. The writer's publish finds its claims gone and its blobs
    without a row, so it claims and uploads them again, and no version loses a blob.
    """
    uploaded = env.failpoints.park("write.uploaded")
    writer = asyncio.create_task(publish(env.registry, "lost-claim"))
    await reached(uploaded, writer)
    digests = await store_digests(env.raw)
    assert await blob_rows(env.registry) == dict.fromkeys(digests, "pending")
    async with env.registry.engine.begin() as conn:  # what the lost commit had written
        await conn.execute(sa.text("DELETE FROM blob_claims"))
        await conn.execute(sa.text("DELETE FROM skill_md_index"))
        await conn.execute(sa.text("DELETE FROM blobs"))
    env.clock.advance(2 * HOUR)
    report = await env.registry.gc.collect()
    assert (report.blobs_reclaimed, report.untracked_reclaimed) == (len(digests), len(digests))
    assert await store_digests(env.raw) == set()

    uploaded.release.set()
    pub = await writer
    assert (pub.version, pub.created) == (1, True)
    assert await store_digests(env.raw) == digests
    assert await blob_rows(env.registry) == dict.fromkeys(digests, "live")
    await assert_nothing_lost(env, ("lost-claim", 1))


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
