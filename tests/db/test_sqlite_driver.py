"""SQLite's driver connection (registry/db/sqlite_driver.py): one thread call a statement."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import ClassVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from registry.api import Registry
from registry.db import sqlite_driver
from registry.db.engine import create_engine
from registry.domain.model import Scope
from registry.errors import HeadConflict
from registry.settings import Settings
from tests.support.faults import InjectedFault, ScriptedFailpoints
from tests.support.packages import package

SCOPE = Scope("w")


class _Counting(sqlite_driver.Connection):
    calls = 0

    async def on_thread(self, function):
        type(self).calls += 1
        return await super().on_thread(function)


async def test_the_cursor_behaves_as_a_dbapi_cursor(tmp_path):
    connection = await sqlite_driver.connect(make_url(f"sqlite:///{tmp_path / 'd.db'}"), 1.0)
    try:
        cursor = connection.cursor()
        await cursor.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        assert cursor.description is None
        await cursor.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",), ("c",)])
        assert cursor.rowcount == 3
        await cursor.execute("INSERT INTO t (name) VALUES (?)", ("d",))
        assert cursor.lastrowid == 4
        await cursor.execute("SELECT id, name FROM t ORDER BY id")
        assert [d[0] for d in cursor.description] == ["id", "name"]
        assert await cursor.fetchone() == (1, "a")
        assert await cursor.fetchmany(2) == [(2, "b"), (3, "c")]
        assert await cursor.fetchall() == [(4, "d")]
        assert await cursor.fetchone() is None
        await cursor.execute("UPDATE t SET name = 'x' WHERE id > 2 RETURNING id")
        assert await cursor.fetchall() == [(3,), (4,)]
        await cursor.close()
        assert await cursor.fetchall() == []
    finally:
        await connection.close()


async def test_a_statement_with_rows_is_one_call_on_the_connection_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_driver, "Connection", _Counting)
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'e.db'}")
    try:
        async with engine.connect() as conn:
            await conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)"))
            before = _Counting.calls
            rows = await conn.execute(
                sa.text("INSERT INTO t (name) VALUES ('a'), ('b') RETURNING id, name")
            )
            assert rows.all() == [(1, "a"), (2, "b")]
            # The stock adapter made four: a cursor, the statement, the rows, the close.
            assert _Counting.calls - before == 1
            await conn.commit()
    finally:
        await engine.dispose()


class _Traced:
    """Which thread ran each statement, from sqlite3's own trace callback."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []

    def __call__(self, statement: str) -> None:
        words = statement.upper().split()
        keyword = " ".join(words[:2]) if words[:2] == ["BEGIN", "IMMEDIATE"] else words[0]
        self.runs.append((keyword, threading.get_ident()))

    def threads(self, keyword: str) -> set[int]:
        return {thread for statement, thread in self.runs if statement == keyword}


class _Trips(sqlite_driver.Connection):
    """Counts every trip to the connection's thread, commits and rollbacks included."""

    trips: ClassVar[list[str]] = []

    async def _execute(self, fn, *args, **kwargs):
        type(self).trips.append(getattr(fn, "__name__", "statement"))
        return await super()._execute(fn, *args, **kwargs)


async def test_a_rollback_without_a_transaction_costs_no_trip_to_the_thread(tmp_path, monkeypatch):
    # The pool's reset on return rolls back after every transaction already ended.
    monkeypatch.setattr(sqlite_driver, "Connection", _Trips)
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'e.db'}", pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        _Trips.trips.clear()
        async with engine.begin() as conn:
            await conn.execute(sa.text("INSERT INTO t (id) VALUES (1)"))
        # BEGIN, the insert, COMMIT; no rollback once the connection is back in the pool.
        assert _Trips.trips == ["statement", "statement", "commit"]
        _Trips.trips.clear()
        async with engine.connect() as conn:
            await conn.execute(sa.text("INSERT INTO t (id) VALUES (2)"))
            await conn.rollback()
        # An open transaction is still rolled back, on the thread.
        assert _Trips.trips == ["statement", "statement", "rollback"]
        async with engine.connect() as conn:
            assert (await conn.execute(sa.text("SELECT id FROM t"))).all() == [(1,)]
    finally:
        await engine.dispose()


async def test_a_package_write_makes_two_trips_to_the_thread(sqlite_url, local_store, monkeypatch):
    # The claim's and the publish's COMMIT: the read before them (one statement, no
    # transaction) and every statement of the two write transactions, their BEGIN
    # IMMEDIATE included, run on the loop's thread while no other connection holds a
    # lock (docs/write-path.md).
    monkeypatch.setattr(sqlite_driver, "Connection", _Trips)
    settings = Settings(database_url=sqlite_url, blob_url=f"file://{local_store.root}")
    engine = create_engine(sqlite_url, pool_size=1)
    registry = Registry(engine, local_store, settings)
    try:
        await registry.write_package(
            SCOPE, "trips", package("trips"), expected_head=None, actor="t"
        )
        _Trips.trips.clear()
        await registry.write_package(
            SCOPE, "trips", package("trips", tag="2"), expected_head=1, actor="t"
        )
        assert _Trips.trips == ["commit", "commit"]
    finally:
        await registry.close()
        await engine.dispose()


async def test_inline_statements_run_on_the_calling_thread_with_the_same_results(tmp_path):
    connection = await sqlite_driver.connect(make_url(f"sqlite:///{tmp_path / 'd.db'}"), 1.0)
    traced = _Traced()
    try:
        await connection.on_thread(lambda: connection.sqlite.set_trace_callback(traced) or [])
        cursor = connection.cursor()
        await cursor.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
        connection.inline = True
        await cursor.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",)])
        assert cursor.rowcount == 2
        await cursor.execute("SELECT id, name FROM t ORDER BY id")
        assert [d[0] for d in cursor.description] == ["id", "name"]
        assert await cursor.fetchall() == [(1, "a"), (2, "b")]
        with pytest.raises(sqlite3.IntegrityError):
            await cursor.execute("INSERT INTO t (name) VALUES ('a')")
        connection.inline = False
        await cursor.execute("DELETE FROM t")
    finally:
        await connection.close()
    here = threading.get_ident()
    assert traced.threads("CREATE") == traced.threads("DELETE") != {here}
    assert traced.threads("INSERT") == traced.threads("SELECT") == {here}


async def test_begin_at_once_takes_a_free_lock_and_leaves_a_busy_one_alone(tmp_path):
    # The write lock free: taken on the calling thread. Held by another connection: SQLite
    # answers at once (busy), nothing changes, and the busy timeout the caller's thread
    # will wait with is the one the connection had.
    path = tmp_path / "d.db"
    connection = await sqlite_driver.connect(make_url(f"sqlite:///{path}"), 2.5)
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        cursor = connection.cursor()
        await cursor.execute("PRAGMA journal_mode=WAL")
        await cursor.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        sqlite = connection.sqlite
        holder.execute("BEGIN IMMEDIATE")
        assert connection.begin_at_once() is False
        assert not sqlite.in_transaction
        assert sqlite.execute("PRAGMA busy_timeout").fetchone() == (2500,)
        holder.execute("COMMIT")
        assert connection.begin_at_once() is True
        assert sqlite.in_transaction
        assert sqlite.execute("PRAGMA busy_timeout").fetchone() == (2500,)
        sqlite.execute("INSERT INTO t DEFAULT VALUES")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            holder.execute("BEGIN IMMEDIATE")  # the lock is this connection's now
        sqlite.execute("COMMIT")
        assert holder.execute("SELECT count(*) FROM t").fetchone() == (1,)
    finally:
        holder.close()
        await connection.close()


async def test_a_statement_at_once_waits_on_the_thread_only_when_sqlite_is_busy(
    tmp_path, monkeypatch
):
    # A rollback-journal database whose writer holds an exclusive lock: a reader is busy.
    sent = asyncio.Event()

    class _Sent(_Trips):
        async def _execute(self, fn, *args, **kwargs):
            sent.set()
            return await super()._execute(fn, *args, **kwargs)

    monkeypatch.setattr(sqlite_driver, "Connection", _Sent)
    path = tmp_path / "d.db"
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    holder.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    holder.execute("INSERT INTO t DEFAULT VALUES")
    connection = await sqlite_driver.connect(make_url(f"sqlite:///{path}"), 5.0)
    try:
        cursor = connection.cursor()
        connection.at_once = True
        _Trips.trips.clear()
        await cursor.execute("SELECT count(*) FROM t")
        assert await cursor.fetchall() == [(1,)]
        assert _Trips.trips == []  # nothing held: run here
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO t DEFAULT VALUES")
        sent.clear()
        read = asyncio.create_task(cursor.execute("SELECT count(*) FROM t"))
        await sent.wait()  # the try here failed busy; the thread waits for the lock
        assert not read.done()
        assert _Trips.trips == ["statement"]
        holder.execute("COMMIT")
        await asyncio.wait_for(read, 10)
        assert await cursor.fetchall() == [(2,)]
        assert connection.sqlite.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    finally:
        connection.at_once = False
        holder.close()
        await connection.close()


async def test_a_write_runs_its_statements_inline_between_begin_and_commit(sqlite_url, local_store):
    # The claim and the publish transactions run their statements on the loop's thread,
    # and so does their BEGIN IMMEDIATE while the write lock is free (it is, here: see
    # `test_begin_at_once_...` for a busy one); COMMIT (the WAL's fsync) and every read
    # stay on the connection's thread, and the connection leaves the write with inline
    # off, whether the write succeeded or failed.
    settings = Settings(database_url=sqlite_url, blob_url=f"file://{local_store.root}")
    traced = _Traced()
    engine = create_engine(sqlite_url, pool_size=1)

    @sa.event.listens_for(engine.sync_engine, "connect")
    def _trace(dbapi_connection, _record):
        dbapi_connection.driver_connection.sqlite.set_trace_callback(traced)

    registry = Registry(engine, local_store, settings)
    try:
        await registry.write_package(
            SCOPE, "inline", package("inline"), expected_head=None, actor="t"
        )
        with pytest.raises(HeadConflict):
            await registry.write_package(
                SCOPE, "inline", package("inline", tag="2"), expected_head=5, actor="t"
            )
        assert (await registry.read_package(SCOPE, "inline")).version == 1
        async with engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver.inline is False
    finally:
        await registry.close()
        await engine.dispose()
    here = threading.get_ident()
    assert traced.threads("BEGIN IMMEDIATE") == {here}
    assert traced.threads("BEGIN")  # read_package's read transaction
    assert here not in traced.threads("BEGIN")
    assert here not in traced.threads("COMMIT")
    assert traced.threads("INSERT") == traced.threads("DELETE") == {here}
    # A read transaction (read_package's) stayed off; the write's first read, one
    # statement run alone, ran here (test_a_package_write_makes_two_trips_to_the_thread).
    assert traced.threads("SELECT") - {here}


async def test_a_write_reads_its_head_in_one_statement_with_no_transaction(sqlite_url, local_store):
    # The write's first read is one statement in the driver's autocommit mode
    # (`UnitOfWork.single`): no BEGIN and no COMMIT around it, one trip to the thread.
    settings = Settings(database_url=sqlite_url, blob_url=f"file://{local_store.root}")
    statements: list[str] = []
    engine = create_engine(sqlite_url, pool_size=1)

    @sa.event.listens_for(engine.sync_engine, "connect")
    def _trace(dbapi_connection, _record):
        dbapi_connection.driver_connection.sqlite.set_trace_callback(statements.append)

    registry = Registry(engine, local_store, settings)
    try:
        await registry.write_package(SCOPE, "one", package("one"), expected_head=None, actor="t")
        statements.clear()
        await registry.write_package(
            SCOPE, "one", package("one", tag="2"), expected_head=1, actor="t"
        )
    finally:
        await registry.close()
        await engine.dispose()
    # (The claim's durability pragmas and the busy timeout's around BEGIN IMMEDIATE are
    # other tests' subjects.)
    keywords = [
        " ".join(s.split()[:2]).upper()
        for s in statements
        if not s.upper().startswith(("PRAGMA SYNCHRONOUS", "PRAGMA BUSY_TIMEOUT"))
    ]
    # The read, then the claim and the publish, each BEGIN IMMEDIATE ... COMMIT.
    assert keywords[0].startswith("SELECT")
    assert keywords[1] == "BEGIN IMMEDIATE"
    assert keywords.count("BEGIN IMMEDIATE") == 2
    assert keywords.count("COMMIT") == 2
    assert "BEGIN" not in keywords


async def test_only_the_claim_commits_without_an_fsync(sqlite_url, local_store):
    # The claim's commit skips the WAL's fsync (PRAGMA synchronous=NORMAL for its
    # transaction only); the publish, which fsyncs the WAL and the claim's frames with it,
    # and every other write stay FULL, and a connection goes back to the pool FULL, even
    # after a claim that failed.
    settings = Settings(database_url=sqlite_url, blob_url=f"file://{local_store.root}")
    statements: list[str] = []
    engine = create_engine(sqlite_url, pool_size=1, max_overflow=0)

    @sa.event.listens_for(engine.sync_engine, "connect")
    def _trace(dbapi_connection, _record):
        dbapi_connection.driver_connection.sqlite.set_trace_callback(statements.append)

    failpoints = ScriptedFailpoints()
    registry = Registry(engine, local_store, settings, failpoints=failpoints)

    async def level() -> int:
        async with engine.connect() as conn:
            return (await conn.exec_driver_sql("PRAGMA synchronous")).scalar_one()

    try:
        await registry.write_package(SCOPE, "sync", package("sync"), expected_head=None, actor="t")
        assert await level() == 2  # FULL
        failpoints.fail("write.claiming", nth=2)
        with pytest.raises(InjectedFault):
            await registry.write_package(
                SCOPE, "sync", package("sync", tag="2"), expected_head=1, actor="t"
            )
        assert await level() == 2
    finally:
        await registry.close()
        await engine.dispose()
    writes = [
        s.split()[0].upper() if not s.upper().startswith("PRAGMA SYNCHRONOUS=") else s.upper()
        for s in statements
        if s.upper().startswith(("PRAGMA SYNCHRONOUS=", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"))
    ]
    # The first write: NORMAL for the claim, FULL again as soon as it ended.
    assert writes[:6] == [
        "PRAGMA SYNCHRONOUS=NORMAL",
        "BEGIN",
        "COMMIT",
        "PRAGMA SYNCHRONOUS=FULL",
        "BEGIN",
        "COMMIT",
    ]
    # The second write's claim failed inside its transaction: rolled back, FULL again,
    # and the release of its claims (a write transaction of its own) is durable.
    assert writes[6:] == [
        "ROLLBACK",  # the level check above (a read transaction)
        "PRAGMA SYNCHRONOUS=NORMAL",
        "BEGIN",
        "ROLLBACK",
        "PRAGMA SYNCHRONOUS=FULL",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",  # the level check
    ]
