"""The unit of work's transactions (registry/db/unit.py), on both databases.

What must hold, whatever ends a transaction: a publish's statements are one transaction
(all or nothing: a failure, a refusal, a cancellation, a lost connection); a failed commit
is `CommitOutcomeUnknown`; a lost connection is retried on a fresh one; a lock wait is
bounded by what the write's budget has left; and a connection goes back to the pool as it
came (a read of one statement in autocommit leaves no autocommit behind).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from registry.db import budget as write_budget
from registry.db.engine import create_engine, write_connection
from registry.db.locks import lock_workspace
from registry.db.tables import Skill
from registry.db.unit import CommitOutcomeUnknown, Outcome, UnitOfWork
from registry.errors import StorageUnavailable, WorkspaceBusy
from tests.support.rows import skill_row

NOW = datetime(2026, 12, 2, tzinfo=UTC)
_COUNT = sa.select(sa.func.count()).select_from(Skill)
_INSERT = sa.insert(Skill)
_PID = sa.select(sa.func.pg_backend_pid())
POSTGRES = pytest.mark.parametrize(
    "database_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)


def _skill(slug: str) -> dict[str, object]:
    return skill_row(slug, now=NOW)


class _Refused(Exception):
    """The work's own refusal, after a statement of it failed."""


@asynccontextmanager
async def _unit(database_url, *, lock_timeout=5.0):
    # One pooled connection: every transaction below runs on the one the publish used.
    engine = create_engine(
        database_url,
        lock_timeout=lock_timeout,
        sqlite_busy_timeout=lock_timeout,
        pool_size=1,
        max_overflow=0,
    )
    try:
        yield UnitOfWork(
            engine, lock_timeout=lock_timeout, sqlite_busy_timeout=lock_timeout, connections=1
        )
    finally:
        await engine.dispose()


class _Sent:
    """The statements `engine` sends inside the block (first word), `BEGIN`s included."""

    def __init__(self, engine) -> None:
        self.engine = engine.sync_engine
        self.words: list[str] = []

    def _sent(self, _conn, _cursor, statement, *_args) -> None:
        self.words.append(" ".join(statement.split()[:2]).upper())

    def __enter__(self):
        sa.event.listen(self.engine, "before_cursor_execute", self._sent)
        return self

    def __exit__(self, *_exc) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._sent)


async def _read_slugs(unit) -> list[str]:
    async def read(conn) -> list[str]:
        return list(await conn.scalars(sa.select(Skill.slug).order_by(Skill.slug)))

    return await unit.read(read)


async def _pooled_connection_is_transactional(unit) -> None:
    """The pooled connection runs transactions: a failed one leaves nothing."""

    async def fail(conn) -> None:
        await conn.execute(_INSERT, _skill("probe"))
        raise _Refused

    with pytest.raises(_Refused):
        await unit.write(fail)
    assert "probe" not in await _read_slugs(unit)


async def test_a_publish_commits_its_statements_as_one(database_url):
    async with _unit(database_url) as unit:

        async def work(conn) -> Outcome[int]:
            count = (await conn.execute(_COUNT)).scalar_one()
            await conn.execute(_INSERT, _skill("a"))
            await conn.execute(_INSERT, _skill("b"))
            return Outcome(count)

        assert await unit.publish("w", work) == 0
        assert await _read_slugs(unit) == ["a", "b"]
        await _pooled_connection_is_transactional(unit)


async def test_a_publish_that_does_not_commit_leaves_nothing(database_url):
    # Whatever ends it: a failed statement, the work's own choice, a cancellation. Each
    # ending in turn on one unit: each must leave the table empty for the next.
    async with _unit(database_url) as unit:
        for ending in ("fails", "does not commit"):

            async def work(conn, ending=ending) -> Outcome[str]:
                await conn.execute(_INSERT, _skill("a"))
                await conn.execute(_INSERT, _skill("b"))
                if ending == "fails":
                    try:
                        await conn.execute(_INSERT, _skill("a"))
                    except sa.exc.IntegrityError as exc:
                        raise _Refused from exc
                return Outcome("kept nothing", commit=False)

            if ending == "fails":
                with pytest.raises(_Refused):
                    await unit.publish("w", work)
            else:
                assert await unit.publish("w", work) == "kept nothing"
            assert await _read_slugs(unit) == [], ending
            await _pooled_connection_is_transactional(unit)

        # Cancellation is honoured at the transaction's next safe point (its next
        # statement, or before its commit, whichever comes first: db/cancel.py), never
        # inside a statement.
        inside, resume = asyncio.Event(), asyncio.Event()

        async def parked(conn) -> Outcome[None]:
            await conn.execute(_INSERT, _skill("a"))
            inside.set()
            await resume.wait()
            await conn.execute(_INSERT, _skill("b"))
            return Outcome(None)

        task = asyncio.create_task(unit.publish("w", parked))
        await inside.wait()
        task.cancel()
        resume.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _read_slugs(unit) == []
        await _pooled_connection_is_transactional(unit)


async def test_a_failed_commit_is_an_unknown_outcome(database_url):
    # The commit was sent: whether it happened is for the caller to settle.
    async with _unit(database_url) as unit:

        def refuse(_conn) -> None:
            raise _Refused

        async def work(conn) -> Outcome[None]:
            await conn.execute(_INSERT, _skill("a"))
            return Outcome(None)

        sa.event.listen(unit.engine.sync_engine, "commit", refuse)
        try:
            with pytest.raises(CommitOutcomeUnknown):
                await unit.publish("w", work)
        finally:
            sa.event.remove(unit.engine.sync_engine, "commit", refuse)
        await _pooled_connection_is_transactional(unit)


async def test_a_lock_wait_is_what_the_writes_budget_has_left(database_url):
    # A write that already waited for locks waits only what its budget has left
    # (PostgreSQL: `lock_timeout` for this transaction; SQLite: the busy timeout of its
    # BEGIN IMMEDIATE), and the budget is spent after it.
    async with _unit(database_url, lock_timeout=5.0) as unit:
        holder_engine = create_engine(database_url)
        try:
            async with holder_engine.connect() as raw:
                holder = await write_connection(raw)
                async with holder.begin():
                    await lock_workspace(holder, "w")

                    async def work(_conn) -> Outcome[None]:
                        raise AssertionError("the lock was granted")

                    with write_budget.write_budget(total=60.0, lock_timeout=5.0) as budget:
                        budget.lock_left = 0.3
                        started = time.monotonic()
                        with pytest.raises(WorkspaceBusy):
                            await unit.publish("w", work)
                        waited = time.monotonic() - started
        finally:
            await holder_engine.dispose()
        # Refused after the budget's 0.3 s, not the configured 5 s (a generous margin
        # for a loaded machine).
        assert 0.25 < waited < 3.0, waited
        assert budget.lock_left == 0
        await _pooled_connection_is_transactional(unit)


async def test_a_read_of_one_statement_sends_no_begin_and_leaves_nothing_behind(database_url):
    # `read_one`: PostgreSQL in autocommit (no BEGIN, no COMMIT), SQLite without BEGIN.
    async with _unit(database_url) as unit:
        await unit.write(lambda conn: conn.execute(_INSERT, _skill("a")))
        with _Sent(unit.engine) as sent:
            count = await unit.read_one(lambda conn: conn.scalar(_COUNT))
        assert count == 1
        assert [w for w in sent.words if not w.startswith("PRAGMA")] == ["SELECT COUNT(*)"]
        await _pooled_connection_is_transactional(unit)
        if unit.engine.dialect.name == "postgresql":
            async with unit.engine.connect() as conn:
                raw = await conn.get_raw_connection()
                assert raw.driver_connection.autocommit is False


async def test_a_write_transaction_on_sqlite_begins_immediate(database_url):
    async with _unit(database_url) as unit:
        with _Sent(unit.engine) as sent:
            await unit.write(lambda conn: conn.execute(_INSERT, _skill("a")))
            await unit.read(lambda conn: conn.scalar(_COUNT))
        if unit.engine.dialect.name == "sqlite":
            assert sent.words == ["BEGIN IMMEDIATE", "INSERT INTO", "BEGIN", "SELECT COUNT(*)"]
        else:
            assert sent.words == ["INSERT INTO", "SELECT COUNT(*)"]


async def _terminate(database_url: str, pid: int) -> None:
    """End backend `pid` from another session, its transaction with it."""
    killer = create_engine(database_url)
    try:
        async with killer.connect() as other:
            await other.execute(sa.select(sa.func.pg_terminate_backend(pid)))
    finally:
        await killer.dispose()


@POSTGRES
async def test_a_publish_whose_connection_is_lost_is_retried_on_a_fresh_one(database_url):
    async with _unit(database_url) as unit:
        attempts: list[int] = []

        async def work(conn) -> Outcome[None]:
            pid = (await conn.execute(_PID)).scalar_one()
            attempts.append(pid)
            await conn.execute(_INSERT, _skill(f"attempt-{len(attempts)}"))
            if len(attempts) == 1:
                # Another session ends this one's backend, its transaction with it.
                await _terminate(database_url, pid)
                await conn.execute(_PID)  # fails: the connection is gone
            return Outcome(None)

        await unit.publish("w", work)
        assert len(attempts) == 2
        assert attempts[0] != attempts[1]  # the lost connection left the pool
        assert await _read_slugs(unit) == ["attempt-2"]
        await _pooled_connection_is_transactional(unit)


@POSTGRES
async def test_a_read_of_one_statement_on_a_lost_connection_is_retried(database_url):
    async with _unit(database_url) as unit:
        pid = await unit.read_one(lambda conn: conn.scalar(_PID))
        await _terminate(database_url, pid)
        # The pooled connection is dead; the statement fails on it and runs on a new one.
        assert await unit.read_one(lambda conn: conn.scalar(_PID)) != pid
        await _pooled_connection_is_transactional(unit)


@POSTGRES
async def test_a_failed_read_of_one_statement_is_translated(database_url):
    async with _unit(database_url) as unit:
        with pytest.raises(StorageUnavailable):
            await unit.read_one(lambda conn: conn.execute(sa.text("SELECT * FROM missing")))
        await _pooled_connection_is_transactional(unit)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_refused_lock_names_the_wait_the_transaction_had(database_url):
    # Outside a write, a SQLite transaction waits its busy timeout for the database's write
    # lock, not lock_timeout: WorkspaceBusy says how long it really waited.
    engine = create_engine(database_url, lock_timeout=30.0, sqlite_busy_timeout=0.2)
    unit = UnitOfWork(engine, lock_timeout=30.0, sqlite_busy_timeout=0.2)
    holder = create_engine(database_url)
    try:
        async with holder.connect() as raw:
            held = await write_connection(raw)
            async with held.begin():
                await held.execute(_INSERT, _skill("held"))

                async def work(conn) -> None:
                    await conn.execute(_INSERT, _skill("refused"))

                with pytest.raises(WorkspaceBusy) as caught:
                    await unit.write(work, workspace="w")
        assert caught.value.timeout == 0.2
        assert await _read_slugs(unit) == ["held"]
    finally:
        await engine.dispose()
        await holder.dispose()
