"""The workspace lock (registry/db/locks.py)."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from registry.db.engine import create_engine, write_connection
from registry.db.locks import lock_workspace
from registry.db.tables import Skill
from tests.support.rows import skill_row
from tests.support.state import until_waiting_for_advisory_lock

NOW = datetime(2026, 12, 2, tzinfo=UTC)
_SLUGS = sa.select(Skill.slug).where(Skill.workspace == sa.bindparam("workspace"))


def _skill(workspace: str, slug: str) -> dict[str, object]:
    return skill_row(slug, now=NOW, workspace=workspace)


class _Statements:
    def __init__(self, engine) -> None:
        self.engine = engine.sync_engine
        self.statements: list[str] = []

    def _sent(self, _conn, _cursor, statement, *_args) -> None:
        self.statements.append(statement)

    def __enter__(self):
        sa.event.listen(self.engine, "before_cursor_execute", self._sent)
        return self

    def __exit__(self, *_exc) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._sent)


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


@asynccontextmanager
async def _holder_and_waiter(engine):
    """Two write transactions: the first holds workspace `w`'s lock, the second has begun."""
    async with engine.connect() as holder_raw, engine.connect() as waiter_raw:
        holder = await write_connection(holder_raw)
        waiter = await write_connection(waiter_raw)
        await holder.begin()
        await lock_workspace(holder, "w")
        await waiter.begin()
        yield holder, waiter


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_read_after_the_lock_sees_what_the_previous_holder_committed(engine):
    # A write reads its context once the lock is granted: it must see the head the
    # previous holder committed while it waited, or it would check its compare-and-swap
    # against a stale one.
    async with _holder_and_waiter(engine) as (holder, waiter):
        await holder.execute(sa.insert(Skill), _skill("w", "committed-while-waiting"))

        async def lock_then_read() -> list[str]:
            await lock_workspace(waiter, "w", indexed=True)
            return list(await waiter.scalars(_SLUGS, {"workspace": "w"}))

        read = asyncio.create_task(lock_then_read())
        await until_waiting_for_advisory_lock(holder)
        assert not read.done()
        await holder.commit()
        assert await asyncio.wait_for(read, 10) == ["committed-while-waiting"]
        await waiter.rollback()


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_shortened_lock_wait_is_the_transactions_own(engine):
    # A write that already waited for locks waits only what its budget has left: the
    # shortened `lock_timeout` refuses the lock after it, and ends with the transaction.
    async with _holder_and_waiter(engine) as (holder, waiter):
        started = time.monotonic()
        with pytest.raises(sa.exc.OperationalError) as refused:
            await lock_workspace(waiter, "w", lock_timeout_ms=200)
        waited = time.monotonic() - started
        assert "lock timeout" in str(refused.value.orig)
        assert 0.15 < waited < 3.0, waited
        await waiter.rollback()
        configured = (await waiter.execute(sa.text("SHOW lock_timeout"))).scalar_one()
        await waiter.rollback()
        await holder.rollback()
    assert configured == "5s"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_on_sqlite_the_lock_is_the_transactions_begin_immediate(engine):
    # SQLite's lock is the write transaction's BEGIN IMMEDIATE: taking it sends nothing.
    async with engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            with _Statements(engine) as seen:
                await lock_workspace(conn, "w", indexed=True, lock_timeout_ms=10)
            assert seen.statements == []
