"""Durable jobs on both databases: idempotent enqueue, leases, retries, fencing."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest

from registry.db import jobs as db_jobs
from registry.errors import (
    HeadConflict,
    JobLeaseLost,
    JobNotFound,
    QuotaExceeded,
    SkillExists,
    StorageUnavailable,
)
from registry.services.jobs import queue as jobs
from registry.services.jobs.queue import Worker, backoff, is_permanent
from registry.settings import Settings
from tests.marketplace.support import ManualClock
from tests.support.faults import ScriptedFailpoints

KIND = "test.echo"
LEASE = 60.0
SETTINGS = Settings(job_lease=LEASE, job_max_attempts=3, job_backoff_base=10, job_backoff_max=25)


class Script:
    """A job handler whose attempts fail as the test says, recording every call."""

    def __init__(self, *failures: BaseException | None) -> None:
        self.failures = list(failures)
        self.calls: list[int] = []
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def __call__(self, _ctx, job):
        self.calls.append(job.attempts)
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        return {"echo": job.payload["n"], "attempt": job.attempts}


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
async def ctx(make_registry, clock):
    return (await make_registry(settings=SETTINGS, clock=clock)).ctx


def worker(ctx, script, **kwargs):
    return Worker(ctx, {KIND: script}, rng=random.Random(7), **kwargs)


async def enqueue(ctx, n=1, key=None):
    return await jobs.enqueue(ctx, KIND, {"n": n}, key=key or f"k{n}", workspace="acme")


async def test_enqueue_is_idempotent_by_key(ctx):
    first = await enqueue(ctx, key="same")
    second = await jobs.enqueue(ctx, KIND, {"n": 99}, key="same", workspace="acme")
    assert first.created
    assert not second.created
    assert second.job == first.job
    assert second.job.payload == {"n": 1}
    assert (first.job.status, first.job.attempts, first.job.max_attempts) == ("queued", 0, 3)


async def test_a_job_runs_once_and_records_its_result(ctx):
    script = Script()
    await enqueue(ctx)
    outcome = await worker(ctx, script).run_once()
    assert outcome is not None
    assert outcome.succeeded
    assert outcome.job.result == {"echo": 1, "attempt": 1}
    assert (outcome.job.lease_owner, outcome.job.lease_expires_at) == (None, None)
    assert await worker(ctx, script).run_once() is None
    assert script.calls == [1]


async def test_an_idle_poll_takes_no_write_transaction(ctx, clock):
    """Polling an empty or not-yet-due queue is a read: no write lock on every poll."""
    from sqlalchemy import event  # noqa: PLC0415

    from registry.db.engine import WRITE_TX  # noqa: PLC0415

    writes = []

    def on_begin(conn):
        if conn.get_execution_options().get(WRITE_TX):
            writes.append(1)

    event.listen(ctx.engine.sync_engine, "begin", on_begin)
    w = worker(ctx, Script(StorageUnavailable("blob store", "down")))
    assert await w.run_once() is None
    assert writes == []
    queued = await enqueue(ctx)
    failed = await w.run_once()  # the first attempt fails; the retry waits for its backoff
    assert failed is not None
    assert failed.job.status == "queued"
    writes.clear()
    assert await w.run_once() is None
    assert writes == []
    clock.advance(SETTINGS.job_backoff_max)
    outcome = await w.run_once()
    assert outcome is not None
    assert (outcome.job.id, outcome.job.status) == (queued.job.id, "succeeded")
    assert writes  # the claim and the outcome


async def test_a_failure_retries_with_exponential_backoff_then_fails(ctx, clock):
    error = StorageUnavailable("blob store", "down")
    script = Script(error, error, error)
    await enqueue(ctx)
    w = worker(ctx, script)
    delays = []
    for attempt in (1, 2):
        started = clock.now()
        outcome = await w.run_once()
        assert outcome is not None
        assert outcome.error is error
        job = outcome.job
        assert (job.status, job.attempts) == ("queued", attempt)
        assert job.last_error["code"] == "storage_unavailable"
        assert job.last_error["attempt"] == attempt
        ceiling = min(25, 10 * 2 ** (attempt - 1))
        delay = (job.run_after - started).total_seconds()
        assert ceiling / 2 <= delay <= ceiling
        delays.append(delay)
        # Not due before its run_after: nothing to claim.
        assert await w.run_once() is None
        clock.advance(delay)
    assert delays[1] > delays[0] / 2
    outcome = await w.run_once()
    assert outcome is not None
    assert (outcome.job.status, outcome.job.attempts) == ("failed", 3)
    assert outcome.job.finished_at == clock.now()
    assert outcome.job.last_error["message"] == "blob store unavailable: down"
    assert script.calls == [1, 2, 3]
    clock.advance(3600)
    assert await w.run_once() is None


async def test_a_retry_that_succeeds_keeps_the_last_error_for_the_record(ctx, clock):
    script = Script(StorageUnavailable("database", "gone"))
    await enqueue(ctx)
    w = worker(ctx, script)
    await w.run_once()
    clock.advance(3600)
    outcome = await w.run_once()
    assert outcome is not None
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 2)
    assert outcome.job.last_error["attempt"] == 1


@pytest.mark.parametrize(
    ("error", "permanent"),
    [
        (QuotaExceeded(1, 1, 1), True),
        (SkillExists("x", 1), True),
        (HeadConflict(1, 2), False),
        (StorageUnavailable("database", "x"), False),
        (RuntimeError("bug"), False),
    ],
)
def test_which_errors_are_permanent(error, permanent):
    assert is_permanent(error) is permanent


async def test_a_permanent_error_fails_at_once(ctx):
    script = Script(QuotaExceeded(10, 9, 5))
    await enqueue(ctx)
    outcome = await worker(ctx, script).run_once()
    assert outcome is not None
    assert (outcome.job.status, outcome.job.attempts) == ("failed", 1)
    assert outcome.job.last_error["permanent"] is True
    assert outcome.job.last_error["details"] == {"limit": 10, "used": 9, "needed": 5}


async def test_backoff_is_capped(ctx):
    rng = random.Random(1)
    for attempt in range(1, 12):
        assert backoff(ctx, attempt, rng) <= 25


async def test_a_dead_workers_job_is_taken_again_after_its_lease(ctx, clock):
    await enqueue(ctx)
    now = clock.now()

    async def claim(conn):
        return await db_jobs.claim_next(
            conn, owner="dead", kinds=[KIND], now=now, lease_until=now + timedelta(seconds=LEASE)
        )

    taken = await ctx.write(claim)
    assert (taken.status, taken.lease_owner, taken.attempts) == ("running", "dead", 1)
    script = Script()
    w = worker(ctx, script)
    assert await w.run_once() is None  # the lease is live
    clock.advance(LEASE - 1)
    assert await w.run_once() is None
    clock.advance(1)
    outcome = await w.run_once()
    assert outcome is not None
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 2)
    assert outcome.job.result == {"echo": 1, "attempt": 2}

    # The dead worker wakes up: its outcome is fenced off.
    async def late(conn):
        return await db_jobs.finish(
            conn, taken.id, owner="dead", attempt=1, status="failed", now=clock.now()
        )

    assert await ctx.write(late) is None
    assert (await jobs.get_job(ctx, taken.id)).status == "succeeded"


async def test_a_lease_expired_on_the_last_attempt_fails_the_job(ctx, clock):
    enqueued = await jobs.enqueue(ctx, KIND, {"n": 1}, key="last", workspace="acme", max_attempts=1)
    now = clock.now()

    async def claim(conn):
        return await db_jobs.claim_next(
            conn, owner="dead", kinds=[KIND], now=now, lease_until=now + timedelta(seconds=LEASE)
        )

    await ctx.write(claim)
    clock.advance(LEASE + 1)
    script = Script()
    assert await worker(ctx, script).run_once() is None
    job = await jobs.get_job(ctx, enqueued.job.id)
    assert (job.status, job.last_error["code"]) == ("failed", "lease_expired")
    assert script.calls == []


async def test_the_lease_is_renewed_while_the_job_runs(ctx, clock):
    beat, beaten = asyncio.Event(), asyncio.Event()

    async def heartbeat():
        await beat.wait()
        beat.clear()
        beaten.set()

    script = Script()
    script.gate = asyncio.Event()
    enqueued = await enqueue(ctx)
    w = worker(ctx, script, heartbeat=heartbeat)
    task = asyncio.create_task(w.run_once())
    await script.entered.wait()
    clock.advance(LEASE - 5)
    beat.set()
    await beaten.wait()
    # Renewed to now + lease: another worker still cannot take it after the old expiry.
    other = worker(ctx, Script())
    clock.advance(10)
    assert await other.run_once() is None
    running = await jobs.get_job(ctx, enqueued.job.id)
    assert running.lease_expires_at >= clock.now()
    script.gate.set()
    outcome = await task
    assert outcome.succeeded
    assert outcome.job.attempts == 1


async def test_a_worker_that_lost_its_lease_stops_and_records_nothing(ctx, clock):
    beat = asyncio.Event()

    async def heartbeat():
        await beat.wait()
        beat.clear()

    script = Script()
    script.gate = asyncio.Event()
    enqueued = await enqueue(ctx)
    slow = worker(ctx, script, heartbeat=heartbeat)
    task = asyncio.create_task(slow.run_once())
    await script.entered.wait()
    # The slow worker misses its renewals; the lease expires and another worker runs it.
    clock.advance(LEASE + 1)
    fast = await worker(ctx, Script()).run_once()
    assert fast is not None
    assert (fast.job.status, fast.job.attempts) == ("succeeded", 2)
    beat.set()
    outcome = await task
    assert isinstance(outcome.error, JobLeaseLost)
    assert script.calls == [1]  # cancelled before it finished
    job = await jobs.get_job(ctx, enqueued.job.id)
    assert (job.status, job.attempts, job.result) == ("succeeded", 2, {"echo": 1, "attempt": 2})


async def test_a_cancelled_worker_hands_its_job_back(ctx):
    script = Script()
    script.gate = asyncio.Event()
    enqueued = await enqueue(ctx)
    task = asyncio.create_task(worker(ctx, script).run_once())
    await script.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    job = await jobs.get_job(ctx, enqueued.job.id)
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 1, None)
    assert job.last_error["code"] == "interrupted"
    outcome = await worker(ctx, Script()).run_once()
    assert outcome is not None
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 2)


async def test_run_job_runs_a_waiting_job_now_and_leaves_finished_ones(ctx, clock):
    script = Script(StorageUnavailable("database", "x"))
    enqueued = await enqueue(ctx)
    w = worker(ctx, script)
    first = await w.run_job(enqueued.job.id)
    assert first.job.status == "queued"
    assert first.job.run_after > clock.now()
    second = await w.run_job(enqueued.job.id)  # explicitly asked: not held by run_after
    assert second.succeeded
    third = await w.run_job(enqueued.job.id)
    assert third.job == second.job
    assert third.error is None
    assert script.calls == [1, 2]
    with pytest.raises(JobNotFound):
        await w.run_job(12345)


async def test_a_job_of_an_unknown_kind_fails(ctx):
    enqueued = await jobs.enqueue(ctx, "test.unknown", {}, key="u", workspace="acme")
    outcome = await worker(ctx, Script()).run_job(enqueued.job.id)
    assert outcome.job.status == "failed"
    assert outcome.job.last_error["code"] == "LookupError"


async def test_workers_claim_only_their_kinds(ctx):
    await jobs.enqueue(ctx, "test.other", {}, key="o", workspace="acme")
    assert await worker(ctx, Script()).run_once() is None


async def test_run_drains_in_order_and_once_runs_one(ctx, clock):
    for n in range(1, 4):
        await enqueue(ctx, n)
        clock.advance(1)
    script = Script()
    assert await worker(ctx, script).run(once=True) == 1
    assert await worker(ctx, script).run(drain=True) == 2
    page = await jobs.list_jobs(ctx, limit=2)
    assert [j.payload["n"] for j in page.items] == [3, 2]
    rest = await jobs.list_jobs(ctx, limit=2, before=page.next_before)
    assert [j.payload["n"] for j in rest.items] == [1]
    assert rest.next_before is None
    assert [j.status for j in (await jobs.list_jobs(ctx, status="succeeded")).items] == [
        "succeeded"
    ] * 3
    assert (await jobs.list_jobs(ctx, workspace="elsewhere")).items == []


async def test_run_stops_when_asked(ctx):
    stop = asyncio.Event()
    polls = 0

    async def poll():
        nonlocal polls
        polls += 1
        stop.set()

    assert await worker(ctx, Script(), poll=poll).run(stop=stop) == 0
    assert polls == 1


async def test_failpoints_see_the_job_steps(make_registry, clock):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(settings=SETTINGS, clock=clock, failpoints=failpoints)
    await enqueue(registry.ctx)
    await worker(registry.ctx, Script()).run_once()
    assert [p for p in failpoints.trace if p.startswith("job.")] == [
        "job.claimed",
        "job.running",
        "job.effect_done",
        "job.recorded",
    ]
