"""A publish's transaction on PostgreSQL, run on psycopg itself (`DriverTransaction`).

The driver is in autocommit while the transaction runs, and the transaction's `BEGIN` goes
out with the lock and the write context. What must hold: its statements are one
transaction (all or nothing, whatever ends it), and no connection goes back to the pool in
autocommit, where the next transaction's statements would each commit on their own.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from registry.db import budget as write_budget
from registry.db import direct, driver_transaction
from registry.db.engine import create_engine, write_connection
from registry.db.locks import lock_workspace
from registry.db.tables import Skill
from registry.db.unit import Outcome, UnitOfWork
from registry.errors import StorageUnavailable, WorkspaceBusy
from tests.support.rows import skill_row
from tests.support.wire import WireTrace

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]

NOW = datetime(2026, 12, 2, tzinfo=UTC)
_COUNT = direct.Query(sa.select(sa.func.count().label("n")).select_from(Skill), {})
_INSERT = sa.insert(Skill)
_PID = sa.select(sa.func.pg_backend_pid())


def _skill(slug: str) -> dict[str, object]:
    return skill_row(slug, now=NOW)


async def _terminate(database_url: str, pid: int) -> None:
    """End backend `pid` from another session, its transaction with it."""
    killer = create_engine(database_url)
    try:
        async with killer.connect() as other:
            await other.execute(sa.select(sa.func.pg_terminate_backend(pid)))
    finally:
        await killer.dispose()


class _Refused(Exception):
    """The work's own refusal, after a statement of it failed."""


@asynccontextmanager
async def _unit(database_url, *, lock_timeout=5.0):
    # One pooled connection: every transaction below runs on the one the publish used.
    engine = create_engine(database_url, lock_timeout=lock_timeout, pool_size=1, max_overflow=0)
    try:
        yield UnitOfWork(engine, lock_timeout=lock_timeout, connections=1)
    finally:
        await engine.dispose()


async def _slugs(unit) -> list[str]:
    async with unit.engine.connect() as conn:
        return list(await conn.scalars(sa.select(Skill.slug).order_by(Skill.slug)))


async def _pooled_connection_is_transactional(unit) -> None:
    """The pooled connection is out of autocommit: a failed transaction leaves nothing."""
    async with unit.engine.connect() as conn:
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver.autocommit is False
        await conn.begin()
        await conn.execute(_INSERT, _skill("probe"))
        with pytest.raises(sa.exc.IntegrityError):
            await conn.execute(_INSERT, _skill("probe"))
        await conn.rollback()
    assert "probe" not in await _slugs(unit)


async def test_a_publish_commits_its_statements_as_one_and_leaves_autocommit(database_url):
    async with _unit(database_url) as unit:

        async def work(conn, opened) -> Outcome[int]:
            await direct.run(conn, _INSERT, _skill("a"))
            await direct.run(conn, _INSERT, _skill("b"))
            return Outcome(opened.scalar())

        with WireTrace(unit.engine) as wire:
            assert await unit.publish("w", _COUNT, work) == 0
        assert wire.trips() == [["BEGIN", "SELECT", "SELECT"], ["INSERT"], ["INSERT"], ["COMMIT"]]
        wire.close()
        assert await _slugs(unit) == ["a", "b"]
        await _pooled_connection_is_transactional(unit)


@pytest.mark.parametrize("ending", ["fails", "does not commit"])
async def test_a_publish_that_does_not_commit_leaves_nothing(database_url, ending):
    async with _unit(database_url) as unit:

        async def work(conn, _opened) -> Outcome[str]:
            await direct.run(conn, _INSERT, _skill("a"))
            await direct.run(conn, _INSERT, _skill("b"))
            if ending == "fails":
                try:
                    await direct.run(conn, _INSERT, _skill("a"))
                except sa.exc.IntegrityError as exc:
                    # The transaction is aborted on the server now; the work gives up.
                    raise _Refused from exc
            return Outcome("kept nothing", commit=False)

        if ending == "fails":
            with pytest.raises(_Refused):
                await unit.publish("w", _COUNT, work)
        else:
            assert await unit.publish("w", _COUNT, work) == "kept nothing"
        assert await _slugs(unit) == []
        await _pooled_connection_is_transactional(unit)


async def test_a_publish_whose_connection_is_lost_is_retried_and_the_connection_dropped(
    database_url,
):
    async with _unit(database_url) as unit:
        attempts: list[int] = []

        async def work(conn, _opened) -> Outcome[None]:
            pid = (await direct.run(conn, _PID)).scalar()
            attempts.append(pid)
            await direct.run(conn, _INSERT, _skill(f"attempt-{len(attempts)}"))
            if len(attempts) == 1:
                # Another session ends this one's backend, its transaction with it.
                await _terminate(database_url, pid)
                await direct.run(conn, _PID)  # fails: the connection is gone
            return Outcome(None)

        await unit.publish("w", _COUNT, work)
        assert len(attempts) == 2
        assert attempts[0] != attempts[1]  # the lost connection left the pool
        assert await _slugs(unit) == ["attempt-2"]
        await _pooled_connection_is_transactional(unit)


async def test_a_cancelled_publish_rolls_back_and_leaves_autocommit(database_url):
    async with _unit(database_url) as unit:
        inside = asyncio.Event()

        async def work(conn, _opened) -> Outcome[None]:
            await direct.run(conn, _INSERT, _skill("a"))
            inside.set()
            await asyncio.sleep(30)
            return Outcome(None)

        task = asyncio.create_task(unit.publish("w", _COUNT, work))
        await inside.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _slugs(unit) == []
        await _pooled_connection_is_transactional(unit)


async def test_a_begin_listener_that_fails_leaves_the_driver_out_of_autocommit(database_url):
    async with _unit(database_url) as unit:

        def refuse(_conn) -> None:
            raise _Refused

        async def work(_conn, _opened) -> Outcome[None]:
            raise AssertionError("the transaction began")

        sa.event.listen(unit.engine.sync_engine, "begin", refuse)
        try:
            with pytest.raises(_Refused):
                await unit.publish("w", _COUNT, work)
        finally:
            sa.event.remove(unit.engine.sync_engine, "begin", refuse)
        await _pooled_connection_is_transactional(unit)


async def test_a_driver_transaction_left_open_invalidates_its_connection(database_url):
    # `end` without a commit or a rollback: the connection cannot leave autocommit with a
    # transaction open, so it is dropped, and its transaction with it.
    async with _unit(database_url) as unit:
        async with unit.engine.connect() as conn:
            transaction = await driver_transaction.DriverTransaction.start(conn)
            assert transaction is not None
            await direct.run_together(
                conn, [direct.Query(_INSERT, _skill("a"))], transaction=transaction
            )
            first_pid = (await direct.run(conn, _PID)).scalar()
            await transaction.end()
            assert conn.invalidated
        assert await _slugs(unit) == []
        async with unit.engine.connect() as conn:
            assert (await conn.execute(_PID)).scalar() != first_pid
        await _pooled_connection_is_transactional(unit)


async def test_a_shortened_lock_wait_goes_out_with_the_lock(database_url):
    # A write that already waited for locks waits only what its budget has left. The
    # shortened `lock_timeout` is set in the lock's own round trip, inside the transaction.
    async with _unit(database_url, lock_timeout=5.0) as unit:
        holder_engine = create_engine(database_url)
        try:
            async with holder_engine.connect() as raw:
                holder = await write_connection(raw)
                async with holder.begin():
                    await lock_workspace(holder, "w")

                    async def work(_conn, _opened) -> Outcome[None]:
                        raise AssertionError("the lock was granted")

                    with (
                        WireTrace(unit.engine) as wire,
                        write_budget.write_budget(total=60.0, lock_timeout=5.0) as budget,
                    ):
                        budget.lock_left = 0.3
                        started = time.monotonic()
                        with pytest.raises(WorkspaceBusy):
                            await unit.publish("w", _COUNT, work)
                        waited = time.monotonic() - started
        finally:
            await holder_engine.dispose()
        # Refused after the budget's 0.3 s, not the configured 5 s (a generous margin
        # for a loaded machine).
        assert 0.25 < waited < 3.0, waited
        assert budget.lock_left == 0
        # psycopg forgets its prepared statements at a rollback (`DEALLOCATE ALL`).
        trips = wire.trips()
        assert trips == [["BEGIN", "SELECT", "SELECT", "SELECT"], ["ROLLBACK"], ["DEALLOCATE"]]
        wire.close()
        await _pooled_connection_is_transactional(unit)


# ---------------------------------------------------------------- one statement, autocommit


async def test_a_single_statement_commits_alone_and_leaves_autocommit(database_url):
    # `UnitOfWork.single` on PostgreSQL: the driver in autocommit for the one statement
    # (`driver_transaction.single_statements`), and out of it once the connection goes back.
    async with _unit(database_url) as unit:
        with WireTrace(unit.engine) as wire:
            await unit.single(lambda conn: direct.run(conn, _INSERT, _skill("a")), write=True)
        assert wire.trips() == [["INSERT"]]
        wire.close()
        assert await _slugs(unit) == ["a"]
        await _pooled_connection_is_transactional(unit)


async def test_a_failed_single_statement_leaves_autocommit(database_url):
    async with _unit(database_url) as unit:
        await unit.single(lambda conn: direct.run(conn, _INSERT, _skill("a")), write=True)
        with pytest.raises(StorageUnavailable):
            await unit.single(lambda conn: direct.run(conn, _INSERT, _skill("a")), write=True)
        assert await _slugs(unit) == ["a"]
        await _pooled_connection_is_transactional(unit)


async def test_a_single_statement_on_a_lost_connection_is_retried_on_another(database_url):
    async with _unit(database_url) as unit:
        async with unit.engine.connect() as conn:
            pid = (await conn.execute(_PID)).scalar()
        await _terminate(database_url, pid)
        # The pooled connection is dead; the statement fails on it and runs on a new one.
        ran_on = await unit.single(lambda conn: direct.run(conn, _PID), write=False)
        assert ran_on.scalar() != pid
        await _pooled_connection_is_transactional(unit)
