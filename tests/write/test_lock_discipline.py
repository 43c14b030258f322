"""I6: no blob I/O while the workspace lock is held, whatever the write does."""

from __future__ import annotations

import pytest

from registry.errors import HeadConflict
from tests.support.faults import InjectedFault, InstrumentedStore, ScriptedFailpoints
from tests.support.packages import package
from tests.support.scopes import ACME

LOCKED = "publish.locked"
RELEASED = {"publish.committed"}


class LockTracker:
    """Follows the publish transaction through its failpoints and records store calls."""

    def __init__(self, failpoints: ScriptedFailpoints, store: InstrumentedStore) -> None:
        self.held = False
        self.violations: list[str] = []
        self.store_calls_outside = 0
        failpoints.on_hit = self._point
        store.guard = self._store_call

    def _point(self, name: str) -> None:
        if name == LOCKED:
            self.held = True
        elif name in RELEASED or name == "publish.begin":
            self.held = False

    def _store_call(self, method: str) -> None:
        if self.held:
            self.violations.append(method)
        else:
            self.store_calls_outside += 1

    def transaction_ended(self) -> None:
        # A rolled-back transaction releases the lock without reaching `publish.committed`.
        self.held = False


@pytest.fixture
async def tracked(make_registry, local_store):
    failpoints = ScriptedFailpoints()
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store, failpoints=failpoints)
    return registry, failpoints, LockTracker(failpoints, store)


async def test_no_blob_call_while_the_lock_is_held(tracked):
    registry, failpoints, tracker = tracked
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", files=8), expected_head=None, actor="u"
    )
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", files=9, tag="b"), expected_head=1, actor="u"
    )
    await registry.read_package(ACME, "pdf-report")
    assert tracker.violations == []
    assert tracker.store_calls_outside >= 10  # the check saw real uploads and reads
    assert failpoints.hits[LOCKED] == 2


async def test_no_blob_call_under_the_lock_on_conflict_or_failure(tracked):
    registry, failpoints, tracker = tracked
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    failpoints.fail("publish.checked", nth=failpoints.hits["publish.checked"] + 1)
    with pytest.raises(InjectedFault):
        await registry.write_package(
            ACME, "pdf-report", package("pdf-report", tag="x"), expected_head=1, actor="u"
        )
    tracker.transaction_ended()
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", tag="y"), expected_head=1, actor="u"
    )
    with pytest.raises(HeadConflict):
        await registry.write_package(
            ACME, "pdf-report", package("pdf-report", tag="z"), expected_head=1, actor="u"
        )
    assert tracker.violations == []


async def test_every_upload_happens_before_the_transaction_begins(tracked):
    registry, failpoints, _ = tracked
    store_events: list[str] = []
    failpoints.trace = store_events
    tracker_store = registry.blobs
    assert isinstance(tracker_store, InstrumentedStore)
    tracker_store.guard = lambda method: store_events.append(f"store.{method}")
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", files=6), expected_head=None, actor="u"
    )
    begin = store_events.index("publish.begin")
    puts = [i for i, e in enumerate(store_events) if e == "store.put"]
    assert puts
    assert max(puts) < begin
