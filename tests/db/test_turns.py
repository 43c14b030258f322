"""Turns among processes (`UnitOfWork.turn`): a session lock held across transactions.

Each `UnitOfWork` here has its own engine, as two processes would. PostgreSQL only grants
turns; on SQLite a turn is never held and nothing is sent.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import pytest
import sqlalchemy as sa

from registry.db.engine import create_engine
from registry.db.locks import lock_key
from registry.db.unit import UnitOfWork
from tests.support.state import until_waiting_for_advisory_lock

_KEY = lock_key("turn", "w\0personal\0hot")
_HELD = sa.text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND ((classid::bigint << 32) | objid::bigint) = (:key)::bigint"
)


@asynccontextmanager
async def _unit(database_url, *, lock_timeout=5.0, connections=10):
    engine = create_engine(database_url, lock_timeout=lock_timeout)
    try:
        yield UnitOfWork(engine, lock_timeout=lock_timeout, connections=connections)
    finally:
        await engine.dispose()


async def _held(unit) -> int:
    async with unit.engine.connect() as conn:
        return int(await conn.scalar(_HELD, {"key": _KEY}))


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.postgres
async def test_a_turn_is_a_session_lock_given_back_at_the_end(database_url):
    async with _unit(database_url) as unit:
        async with unit.turn("w\0personal\0hot") as held:
            assert held
            assert await _held(unit) == 1
        assert await _held(unit) == 0
        # Given back on an error in the block as well.
        with pytest.raises(RuntimeError):
            async with unit.turn("w\0personal\0hot"):
                raise RuntimeError
        assert await _held(unit) == 0
        assert unit.engine.pool.checkedout() == 0


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.postgres
async def test_another_process_waits_for_the_turn(database_url):
    async with _unit(database_url) as first, _unit(database_url) as second:
        order = []

        async def take(unit, name):
            async with unit.turn("w\0personal\0hot") as held:
                order.append((name, held))

        async with first.turn("w\0personal\0hot"):
            waiter = asyncio.create_task(take(second, "second"))
            await until_waiting_for_advisory_lock(first.engine)
            order.append(("first done", True))
        await asyncio.wait_for(waiter, 10)
        assert order == [("first done", True), ("second", True)]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.postgres
async def test_a_turn_not_granted_within_the_lock_timeout_is_gone_without(database_url):
    async with _unit(database_url) as first, _unit(database_url, lock_timeout=0.1) as second:
        async with first.turn("w\0personal\0hot"), second.turn("w\0personal\0hot") as held:
            assert held is False
        assert second.engine.pool.checkedout() == 0


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.postgres
async def test_a_wait_cancelled_leaves_no_turn_behind(database_url):
    async with _unit(database_url) as first, _unit(database_url) as second:
        async with first.turn("w\0personal\0hot"):
            waiter = asyncio.create_task(second.turn("w\0personal\0hot").__aenter__())
            await until_waiting_for_advisory_lock(first.engine)
            waiter.cancel()
            await asyncio.sleep(0)
        # The statement is not cut (registry/db/cancel.py): it is granted the lock once the
        # first lets go, and its connection is then closed, which ends the lock with it.
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiter, 10)
        async with asyncio.timeout(10):
            while await _held(first):
                await asyncio.sleep(0.01)
        async with first.turn("w\0personal\0hot") as held:
            assert held


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.postgres
async def test_turns_hold_at_most_a_quarter_of_the_connections(database_url):
    async with _unit(database_url, connections=4) as unit:
        async with unit.turn("w\0personal\0one") as first, unit.turn("w\0personal\0two") as other:
            assert (first, other) == (True, False)
        async with unit.turn("w\0personal\0two") as again:
            assert again


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_on_sqlite_no_turn_is_held_and_nothing_is_sent(database_url):
    async with _unit(database_url) as unit:
        seen = []
        sa.event.listen(unit.engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(a))
        async with unit.turn("w\0personal\0hot") as held:
            assert held is False
        assert seen == []
        assert unit.engine.pool.checkedout() == 0
