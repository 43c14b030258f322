"""Durable jobs: enqueued by idempotency key, claimed under a lease, retried with backoff.

    queued ──claim──► running ──► succeeded
      ▲                  │ └────► failed     a permanent error, or the last attempt failed
      └──── retry ───────┘                   run_after = now + backoff with jitter

- Enqueue is idempotent: the same key returns the job that already has it, in any state.
- A claim counts an attempt and leases the job to one worker until `lease_expires_at`;
  the worker renews the lease while the handler runs. A worker that dies stops renewing,
  and once its lease has expired any worker claims the job again (a new attempt).
- An outcome is recorded only under the lease (fenced by owner and attempt number): a
  worker that lost its lease cancels its handler and records nothing.
- Exactly one effect: a job may run more than once (its worker died after the effect
  committed but before the outcome was recorded), so every handler's effect is idempotent
  (docs/marketplace.md says how the marketplace handlers make theirs so).
- Time comes from `Context.clock` (`run_after`, leases), so tests drive expiry without
  sleeping; the waits between lease renewals and between polls are real time and
  injectable (`heartbeat`, `poll`).

Job bookkeeping is not a package state change: it takes no workspace lock and writes no
outbox event. The effects do both, through the write path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import jobs as db_jobs
from registry.db.jobs import JobRow as JobRow  # noqa: PLC0414 - re-exported: the API returns it
from registry.domain.numbers import MAX_ID, names_row, page_before
from registry.errors import (
    Conflict,
    HeadConflict,
    JobLeaseLost,
    JobNotFound,
    NotFound,
    RefusedInput,
    RegistryError,
    SkillExists,
)
from registry.services.backoff import delay as backoff_delay
from registry.services.context import Context

MAX_PAGE: Final = 500

JobHandler = Callable[[Context, JobRow], Awaitable[dict[str, Any]]]
"""Runs a job's effect and returns its JSON-safe result. The effect must be idempotent."""

Wait = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Enqueued:
    """The job an enqueue names, and whether this call created it."""

    job: JobRow
    created: bool


@dataclass(frozen=True)
class JobOutcome:
    """What one run of a job left: the job as recorded, and the error if the attempt failed."""

    job: JobRow
    error: Exception | None = None

    @property
    def succeeded(self) -> bool:
        return self.job.status == "succeeded"


@dataclass(frozen=True)
class JobPage:
    """A page of jobs, newest first; pass `next_before` back as `before`."""

    items: list[JobRow]
    next_before: int | None


def is_permanent(exc: BaseException) -> bool:
    """True if retrying cannot help: refused input, a missing thing, a settled conflict.

    A lost compare-and-swap is not permanent (the next attempt reads the new head), but a
    skill that already exists, or is owned by someone else, stays so.
    """
    if isinstance(exc, HeadConflict) and not isinstance(exc, SkillExists):
        return False
    return isinstance(exc, RefusedInput | NotFound | Conflict)


def backoff(ctx: Context, attempt: int, rng: random.Random) -> float:
    """Seconds before retry `attempt`: exponential, capped, with jitter.

    "Equal jitter": between half and all of `base * 2**(attempt-1)` (capped), so retries of
    many jobs that failed together spread out, yet none comes back at once.
    """
    settings = ctx.settings
    first, cap = settings.job_backoff_base, settings.job_backoff_max
    return backoff_delay(attempt, first=first, cap=cap, draw=rng.random())


def error_record(exc: BaseException, *, attempt: int, now: datetime) -> dict[str, Any]:
    """The JSON-safe `last_error` of a failed attempt (never file content)."""
    details = exc.details() if isinstance(exc, RegistryError) else {}
    return {
        "code": getattr(exc, "code", type(exc).__name__),
        "message": str(exc) or type(exc).__name__,
        "details": {k: v for k, v in details.items() if _json_safe(v)},
        "attempt": attempt,
        "at": now.isoformat(),
        "permanent": is_permanent(exc),
    }


def _json_safe(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


async def enqueue(
    ctx: Context,
    kind: str,
    payload: dict[str, Any],
    *,
    key: str,
    workspace: str,
    max_attempts: int | None = None,
) -> Enqueued:
    """Queue a job, or return the job that already has `key` (`created=False`)."""
    now = ctx.clock.now()
    attempts = max_attempts or ctx.settings.job_max_attempts

    async def work(conn: AsyncConnection) -> Enqueued:
        job, created = await db_jobs.insert_or_get(
            conn,
            kind=kind,
            key=key,
            workspace=workspace,
            payload=payload,
            max_attempts=attempts,
            run_after=now,
            now=now,
        )
        return Enqueued(job, created)

    return await ctx.write(work)


async def get_job(ctx: Context, job_id: int) -> JobRow:
    """The job `job_id` (`JobNotFound` if there is none)."""
    if not names_row("job_id", job_id, MAX_ID):
        raise JobNotFound(job_id)
    job = await ctx.read(lambda conn: db_jobs.get(conn, job_id))
    if job is None:
        raise JobNotFound(job_id)
    return job


async def list_jobs(
    ctx: Context,
    *,
    status: str | None = None,
    workspace: str | None = None,
    limit: int = 50,
    before: int | None = None,
) -> JobPage:
    """Jobs, newest first, optionally of one status and one workspace, a page at a time."""
    limit = max(1, min(limit, MAX_PAGE))
    before = page_before("before", before, MAX_ID)

    async def work(conn: AsyncConnection) -> list[JobRow]:
        return await db_jobs.page(
            conn, status=status, workspace=workspace, limit=limit + 1, before=before
        )

    rows = await ctx.read(work)
    items = rows[:limit]
    return JobPage(items, items[-1].id if len(rows) > limit else None)


async def report_progress(ctx: Context, job: JobRow, progress: dict[str, Any]) -> None:
    """Record what the running `job` has done so far (`JobRow.progress`), under its lease.

    Raises `JobLeaseLost` if the lease is no longer this attempt's: the handler stops,
    as its worker would cancel it at the next renewal.
    """
    now = ctx.clock.now()
    owner = job.lease_owner or ""

    async def work(conn: AsyncConnection) -> bool:
        return await db_jobs.report_progress(
            conn, job.id, owner=owner, attempt=job.attempts, progress=progress, now=now
        )

    if not await ctx.write(work):
        raise JobLeaseLost(job.id, owner)


def default_worker_id() -> str:
    """host:pid:random, unique per worker object."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Worker:
    """Claims jobs of the kinds it has handlers for, runs them, records their outcomes.

    `heartbeat` is awaited between lease renewals (default: a third of the lease, real
    time); `poll` between polls of an idle `run` (default: `job_poll_interval`).
    """

    def __init__(
        self,
        ctx: Context,
        handlers: Mapping[str, JobHandler],
        *,
        worker_id: str | None = None,
        rng: random.Random | None = None,
        heartbeat: Wait | None = None,
        poll: Wait | None = None,
    ) -> None:
        self.ctx = ctx
        self.handlers = dict(handlers)
        self.worker_id = worker_id or default_worker_id()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._heartbeat = heartbeat or self._sleep(ctx.settings.job_lease / 3)
        self._poll = poll or self._sleep(ctx.settings.job_poll_interval)

    @staticmethod
    def _sleep(seconds: float) -> Wait:
        async def wait() -> None:
            await asyncio.sleep(seconds)

        return wait

    def _lease(self) -> tuple[datetime, datetime]:
        now = self.ctx.clock.now()
        return now, now + timedelta(seconds=self.ctx.settings.job_lease)

    async def run_once(self) -> JobOutcome | None:
        """Claim the next due job and run it; None if no job is due."""
        now, until = self._lease()
        kinds = sorted(self.handlers)

        async def due(conn: AsyncConnection) -> bool:
            return await db_jobs.any_due(conn, kinds=kinds, now=now)

        async def work(conn: AsyncConnection) -> JobRow | None:
            return await db_jobs.claim_next(
                conn, owner=self.worker_id, kinds=kinds, now=now, lease_until=until
            )

        # An idle queue is the common case: a read decides it, without a write transaction
        # (on SQLite that would take the database's one write lock on every poll).
        if not await self.ctx.read(due):
            return None
        job = await self.ctx.write(work)
        if job is None:
            return None
        return await self._execute(job)

    async def run_job(self, job_id: int) -> JobOutcome:
        """Run job `job_id` now (even before its `run_after`).

        A finished job, or one another worker holds under a live lease, is returned as it
        is, without running.
        """
        if not names_row("job_id", job_id, MAX_ID):
            raise JobNotFound(job_id)
        now, until = self._lease()

        async def work(conn: AsyncConnection) -> JobRow | None:
            return await db_jobs.claim(
                conn, job_id, owner=self.worker_id, now=now, lease_until=until
            )

        job = await self.ctx.write(work)
        if job is None:
            return JobOutcome(await get_job(self.ctx, job_id))
        return await self._execute(job)

    async def run(
        self,
        *,
        once: bool = False,
        drain: bool = False,
        stop: asyncio.Event | None = None,
        on_outcome: Callable[[JobOutcome], None] | None = None,
    ) -> int:
        """Run jobs until `stop` is set; return how many ran.

        `once`: at most one job, then return. `drain`: return when no job is due.
        `on_outcome` is called after each job (progress reporting).
        """
        ran = 0
        while stop is None or not stop.is_set():
            outcome = await self.run_once()
            if outcome is not None:
                ran += 1
                if on_outcome is not None:
                    on_outcome(outcome)
                if once:
                    break
                continue
            if once or drain:
                break
            await self._idle(stop)
        return ran

    async def _idle(self, stop: asyncio.Event | None) -> None:
        if stop is None:
            await self._poll()
            return
        poll = asyncio.ensure_future(self._poll())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({poll, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            poll.cancel()
            stopped.cancel()

    async def _execute(self, job: JobRow) -> JobOutcome:
        handler = self.handlers.get(job.kind)
        if handler is None:
            error = LookupError(f"no handler for job kind {job.kind!r}")
            return await self._failed(job, error, permanent=True)
        await self.ctx.hit("job.claimed")
        lost = asyncio.Event()
        effect = asyncio.ensure_future(self._effect(handler, job))
        keeper = asyncio.ensure_future(self._keep_leased(job, effect, lost))
        try:
            result = await effect
        except asyncio.CancelledError:
            if not lost.is_set():
                # The worker itself was cancelled: hand the job back at once rather than
                # leaving it to its lease (the attempt still counts).
                await self.ctx.shielded(self._release(job))
                raise
            return JobOutcome(await get_job(self.ctx, job.id), JobLeaseLost(job.id, self.worker_id))
        except Exception as exc:  # noqa: BLE001 - every failure of a job is recorded
            return await self._failed(job, exc, permanent=is_permanent(exc))
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        return await self._succeeded(job, result)

    async def _effect(self, handler: JobHandler, job: JobRow) -> dict[str, Any]:
        await self.ctx.hit("job.running")
        result = await handler(self.ctx, job)
        await self.ctx.hit("job.effect_done")
        return result

    async def _keep_leased(
        self, job: JobRow, effect: asyncio.Future[Any], lost: asyncio.Event
    ) -> None:
        while not effect.done():
            await self._heartbeat()
            now, until = self._lease()

            async def work(
                conn: AsyncConnection, now: datetime = now, until: datetime = until
            ) -> bool:
                return await db_jobs.renew(
                    conn,
                    job.id,
                    owner=self.worker_id,
                    attempt=job.attempts,
                    now=now,
                    lease_until=until,
                )

            try:
                held = await self.ctx.write(work)
            except RegistryError:
                # The database is away; try again next beat. If the lease runs out
                # meanwhile, the next renewal finds it gone.
                continue
            if not held:
                lost.set()
                effect.cancel()
                return

    async def _record(self, job: JobRow, **outcome: Any) -> JobOutcome | None:
        now = self.ctx.clock.now()

        async def work(conn: AsyncConnection) -> JobRow | None:
            return await db_jobs.finish(
                conn, job.id, owner=self.worker_id, attempt=job.attempts, now=now, **outcome
            )

        recorded = await self.ctx.write(work)
        return None if recorded is None else JobOutcome(recorded)

    async def _succeeded(self, job: JobRow, result: dict[str, Any]) -> JobOutcome:
        recorded = await self._record(job, status="succeeded", result=result)
        await self.ctx.hit("job.recorded")
        if recorded is None:
            return JobOutcome(await get_job(self.ctx, job.id), JobLeaseLost(job.id, self.worker_id))
        return recorded

    async def _failed(self, job: JobRow, exc: Exception, *, permanent: bool) -> JobOutcome:
        now = self.ctx.clock.now()
        error = error_record(exc, attempt=job.attempts, now=now)
        error["permanent"] = permanent
        if permanent or job.attempts >= job.max_attempts:
            recorded = await self._record(job, status="failed", error=error)
        else:
            delay = backoff(self.ctx, job.attempts, self._rng)
            run_after = now + timedelta(seconds=delay)
            recorded = await self._record(job, status="queued", error=error, run_after=run_after)
        if recorded is None:
            return JobOutcome(await get_job(self.ctx, job.id), JobLeaseLost(job.id, self.worker_id))
        return JobOutcome(recorded.job, exc)

    async def _release(self, job: JobRow) -> None:
        now = self.ctx.clock.now()
        error = {
            "code": "interrupted",
            "message": "the worker was stopped during the attempt",
            "details": {},
            "attempt": job.attempts,
            "at": now.isoformat(),
            "permanent": False,
        }
        with contextlib.suppress(RegistryError):
            await self._record(job, status="queued", error=error, run_after=now)
