"""SQLite's driver connection (registry/db/sqlite_driver.py): one thread call a statement."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from registry.db import sqlite_driver
from registry.db.engine import create_engine


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
