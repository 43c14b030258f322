"""The workspace lock and the read that goes out with it (registry/db/locks.py)."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from registry.db import direct
from registry.db.engine import create_engine, write_connection
from registry.db.locks import lock_workspace, lock_workspace_then
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


async def _refused(conn, lock) -> sa.exc.OperationalError:
    """Run `lock` with a 100 ms lock timeout; return the error refusing it."""
    await conn.exec_driver_sql("SET LOCAL lock_timeout = 100")
    with pytest.raises(sa.exc.OperationalError) as caught:
        await lock
    return caught.value


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_the_read_sent_with_the_lock_sees_what_the_previous_holder_committed(engine):
    # The read goes out in the lock's round trip, queued behind it on the server: it must
    # take its snapshot once the lock is granted, not when it was sent, or a write would
    # check its compare-and-swap against a head the previous holder has already moved.
    async with _holder_and_waiter(engine) as (holder, waiter):
        await direct.run(holder, sa.insert(Skill), _skill("w", "committed-while-waiting"))
        read = asyncio.create_task(
            lock_workspace_then(waiter, "w", direct.Query(_SLUGS, {"workspace": "w"}))
        )
        await until_waiting_for_advisory_lock(holder)
        assert not read.done()
        await holder.commit()
        rows = await asyncio.wait_for(read, 10)
        assert [r.slug for r in rows] == ["committed-while-waiting"]
        # The lock is the waiter's now: another transaction waits for it in turn.
        async with engine.connect() as third_raw:
            third = await write_connection(third_raw)
            await third.begin()
            await _refused(third, lock_workspace(third, "w"))
            await third.rollback()
        await waiter.rollback()


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_refused_lock_runs_nothing_after_it(engine):
    async with _holder_and_waiter(engine) as (holder, waiter):
        insert = direct.Query(sa.insert(Skill), _skill("w", "never"))
        refused = await _refused(waiter, lock_workspace_then(waiter, "w", insert))
        assert "lock timeout" in str(refused.orig)
        await waiter.rollback()
        await holder.rollback()
        count = await holder.scalar(sa.select(sa.func.count()).select_from(Skill))
        assert count == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_on_sqlite_nothing_runs_and_the_caller_reads_under_its_own_lock(engine):
    # SQLite's lock is the transaction's BEGIN IMMEDIATE: the caller runs the read.
    async with engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            with _Statements(engine) as seen:
                done = await lock_workspace_then(
                    conn, "w", direct.Query(_SLUGS, {"workspace": "w"})
                )
            assert (done, seen.statements) == (None, [])
