"""Fault matrix: fail or cancel the write at every step; the previous package stays intact.

After each injected failure: the previous package is byte-for-byte what it was, no partial
version is visible, the write's claims are released, and a retry publishes the package.
A failure after the commit is a lost reply: the write is reported as published.

The steps are swept on one registry: each step's write is to a skill of its own (its own
blobs), so each starts from a first version as a fresh registry would, and the whole
database is compared around each injected failure.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event as sa_event

from registry.errors import StorageUnavailable
from registry.failpoints import POINTS
from tests.support.cases import naming
from tests.support.faults import InjectedFault, InstrumentedStore, ScriptedFailpoints
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import blob_rows, db_state, live_claims

OLD = package(SLUG, files=3, tag="old")
NEW = package(SLUG, files=5, tag="new")


def _old(slug):
    return package(slug, files=3, tag="old")


def _new(slug):
    return package(slug, files=5, tag="new")


# The steps a write that publishes a version goes through, in order (a write diverted into
# a proposal takes `publish.proposal_rows` instead of the version rows; GC and
# materialisation have points of their own).
STEPS = [
    p
    for p in POINTS
    if p.startswith(("write.", "publish."))
    and p not in {"publish.proposal_rows", "publish.pending_rows"}
]
BEFORE_COMMIT = [p for p in STEPS if p != "publish.committed"]


async def _setup(make_registry, local_store):
    failpoints = ScriptedFailpoints()
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store, failpoints=failpoints)
    await registry.write_package(ACME, SLUG, OLD, expected_head=None, actor="u1")
    # The list of steps cannot go stale: the first write must have passed every one.
    assert [p for p in STEPS if failpoints.hits[p] == 0] == []
    return registry, failpoints, store


async def _write_new(registry, slug=SLUG):
    return await registry.write_package(ACME, slug, _new(slug), expected_head=1, actor="u1")


async def _assert_old_intact(registry, before, slug=SLUG):
    assert await db_state(registry) == before
    assert as_bytes((await registry.read_package(ACME, slug)).files) == as_bytes(_old(slug))
    assert await live_claims(registry) == 0


async def _assert_retry_publishes(registry, slug=SLUG):
    pub = await _write_new(registry, slug)
    assert (pub.version, pub.created) == (2, True)
    assert as_bytes((await registry.read_package(ACME, slug)).files) == as_bytes(_new(slug))
    assert await live_claims(registry) == 0


async def _each_step(registry):
    """For each step before the commit: a skill at its first version, and the step."""
    for index, point in enumerate(BEFORE_COMMIT):
        slug = f"step-{index}"
        await registry.write_package(ACME, slug, _old(slug), expected_head=None, actor="u1")
        yield slug, point


async def test_failure_at_each_step_changes_nothing(make_registry, local_store):
    registry, failpoints, _ = await _setup(make_registry, local_store)
    async for slug, point in _each_step(registry):
        with naming(point):
            before = await db_state(registry)
            failpoints.fail(point, nth=failpoints.hits[point] + 1)
            with pytest.raises(InjectedFault):
                await _write_new(registry, slug)
            await _assert_old_intact(registry, before, slug)
            await _assert_retry_publishes(registry, slug)


async def test_cancellation_at_each_step_changes_nothing(make_registry, local_store):
    registry, failpoints, _ = await _setup(make_registry, local_store)
    async for slug, point in _each_step(registry):
        with naming(point):
            before = await db_state(registry)
            park = failpoints.park(point)
            task = asyncio.create_task(_write_new(registry, slug))
            async with asyncio.timeout(60):  # a safety net against a hang, not a timing assertion
                await park.reached.wait()
            task.cancel()
            park.release.set()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _assert_old_intact(registry, before, slug)
            await _assert_retry_publishes(registry, slug)


async def _new_blob_count(registry):
    old = {e.digest for e in (await registry.package_info(ACME, SLUG)).manifest.entries}
    from registry.domain.manifest import build_manifest  # noqa: PLC0415
    from registry.domain.model import as_package_file  # noqa: PLC0415

    new = build_manifest({p: as_package_file(f) for p, f in NEW.items()})
    return len({e.digest for e in new.entries} - old)


async def test_fail_each_blob_put_in_turn(make_registry, local_store):
    registry, _, store = await _setup(make_registry, local_store)
    uploads = await _new_blob_count(registry)
    assert uploads >= 4
    before = await db_state(registry)
    for k in range(1, uploads + 1):
        store.calls.clear()
        store.fail_puts = {k}
        with pytest.raises(StorageUnavailable):
            await _write_new(registry)
        await _assert_old_intact(registry, before)
    store.fail_puts = set()
    await _assert_retry_publishes(registry)


async def test_cancel_each_blob_put_in_turn(make_registry, local_store):
    """A put that raises CancelledError never counts as stored (the write fails instead)."""
    registry, _, store = await _setup(make_registry, local_store)
    uploads = await _new_blob_count(registry)
    before = await db_state(registry)
    for k in range(1, uploads + 1):
        store.calls.clear()
        store.cancel_puts = {k}
        with pytest.raises((asyncio.CancelledError, StorageUnavailable)):
            await _write_new(registry)
        await _assert_old_intact(registry, before)
    store.cancel_puts = set()
    await _assert_retry_publishes(registry)


class CancelAtStatement:
    """Cancel the write's task as the write sends its n-th SQL statement.

    The cancellation lands while that statement is in flight: a real cancellation at each
    database await of the write path, in a deterministic order. Statements are counted
    only while the write's task runs (its transactions run in tasks of their own).
    """

    def __init__(self, engine, n):
        self.engine = engine.sync_engine
        self.n = n
        self.seen = 0
        self.task = None
        sa_event.listen(self.engine, "before_cursor_execute", self._before)

    def _before(self, *_args):
        if self.task is None or self.task.done() or self.seen >= self.n:
            return
        self.seen += 1
        if self.seen == self.n:
            self.task.cancel()

    def remove(self):
        sa_event.remove(self.engine, "before_cursor_execute", self._before)


async def test_cancellation_at_every_database_await(make_registry, local_store):
    """For n = 1, 2, ...: cancel at the write's n-th statement, until the write completes.

    Every cancellation must leave either the whole old package or the whole new one, with
    no claims left behind.
    """
    registry, _, _ = await _setup(make_registry, local_store)
    before = await db_state(registry)
    for n in range(1, 200):
        cancel = CancelAtStatement(registry.engine, n)
        task = asyncio.create_task(_write_new(registry))
        cancel.task = task
        try:
            await task
        except asyncio.CancelledError:
            outcome = "cancelled"
        else:
            outcome = "completed"
        finally:
            cancel.remove()
        assert await live_claims(registry) == 0
        if (await registry.package_info(ACME, SLUG)).version == 1:
            assert outcome == "cancelled"
            await _assert_old_intact(registry, before)
            continue
        assert as_bytes((await registry.read_package(ACME, SLUG)).files) == as_bytes(NEW)
        if outcome == "completed" or cancel.seen < n:
            break
    else:
        pytest.fail("the write never completed")
    assert n > 5, "the sweep must have cancelled at several statements"


async def test_lost_reply_is_reported_as_published_and_keeps_its_blobs(make_registry, local_store):
    registry, failpoints, _ = await _setup(make_registry, local_store)
    failpoints.fail("publish.committed", nth=failpoints.hits["publish.committed"] + 1)
    pub = await _write_new(registry)
    assert (pub.version, pub.created, pub.unchanged) == (2, True, False)
    package_read = await registry.read_package(ACME, SLUG)
    assert as_bytes(package_read.files) == as_bytes(NEW)
    rows = await blob_rows(registry)
    assert all(rows[e.digest] == "live" for e in package_read.manifest.entries)
    assert await live_claims(registry) == 0
    # the client's own retry is idempotent
    again = await _write_new(registry)
    assert (again.version, again.unchanged) == (2, True)


async def test_cancelled_after_commit_keeps_the_version(make_registry, local_store):
    registry, failpoints, _ = await _setup(make_registry, local_store)
    park = failpoints.park("publish.committed")
    task = asyncio.create_task(_write_new(registry))
    await park.reached.wait()
    task.cancel()
    park.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert as_bytes((await registry.read_package(ACME, SLUG)).files) == as_bytes(NEW)
    assert await live_claims(registry) == 0
