"""SQLite's driver connection: each statement in one hop to the connection's thread.

aiosqlite runs every call on a sqlite3 connection in a thread of its own, and SQLAlchemy's
adapter makes four such calls per statement: create a cursor, execute, fetch the rows,
close. Each is a round trip between the event loop and that thread (a queue put, a thread
wake-up, a future resolved through the loop's self-pipe), and together they were most of a
write's client CPU on SQLite: a package write sends about twenty statements.

`Connection` keeps aiosqlite's thread and API and changes only the cursor: a statement is
executed and, if it returns rows, fetched in a single call on the thread; the rows are
then served from memory, and closing costs nothing (the sqlite3 cursor has finished its
statement when its rows are fetched, and it is released with its wrapper). The cursor
offers what SQLAlchemy's adapter uses: `execute`, `executemany`, `fetchone`, `fetchmany`,
`fetchall`, `close`, `description`, `rowcount`, `lastrowid` and `arraysize`.

**Inline statements.** One call on the thread still costs about 0.1 ms of wall time and as
much CPU (a queue put, a thread wake-up, a future resolved through the loop's self-pipe),
while a statement of a package write runs in 0.01-0.1 ms. Inside a write transaction whose
`BEGIN IMMEDIATE` has returned, no statement waits for another connection's lock: the
database's write lock is this transaction's. `statements_inline(conn)` runs such a
transaction's statements on the event loop's own thread for as long as it is open, as
the content check runs a small package's scan on the loop (docs/write-path.md). The
statements that can wait stay on the thread: every read transaction's statements (a
checkpoint can make a reader wait) and `COMMIT` and `ROLLBACK`, which aiosqlite runs there
(the WAL's fsync). `BEGIN IMMEDIATE` waits only for another connection's write lock: it is
tried here first without waiting (`begin_at_once`), and sent to the thread only if busy.
The sqlite3 connection is opened with `check_same_thread=False`, and only one task uses it
at a time, each call awaited.

`connect(url, busy_timeout)` is the engine's `async_creator` (registry/db/engine.py); the
connection's arguments are the dialect's own (`create_connect_args`), so a URL means what
it meant with the stock driver.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, Literal, Self, TypeVar

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection

_Rows = list[Any]
T = TypeVar("T")


class Cursor:
    """A cursor whose statement and rows cost one call on the connection's thread."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._cursor: sqlite3.Cursor | None = None
        self._rows: _Rows = []
        self.arraysize = 1

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    def _run(self, sql: str, parameters: Any, *, many: bool) -> _Rows:
        # On the connection's thread: the cursor, the statement and every row at once.
        if self._cursor is None:
            self._cursor = self._connection.sqlite.cursor()
        if many:
            self._cursor.executemany(sql, parameters)
        else:
            self._cursor.execute(sql, parameters)
        if self._cursor.description is None:
            return []
        return self._cursor.fetchall()

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Self:
        self._rows = await self._connection.call(
            partial(self._run, sql, () if parameters is None else parameters, many=False)
        )
        return self

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Self:
        self._rows = await self._connection.call(partial(self._run, sql, parameters, many=True))
        return self

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> _Rows:
        count = self.arraysize if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def fetchall(self) -> _Rows:
        rows, self._rows = self._rows, []
        return rows

    async def close(self) -> None:
        self._rows = []

    @property
    def description(self) -> Sequence[Any] | None:
        return None if self._cursor is None else self._cursor.description

    @property
    def rowcount(self) -> int:
        return -1 if self._cursor is None else self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return None if self._cursor is None else self._cursor.lastrowid


class Connection(aiosqlite.Connection):
    """aiosqlite's connection with `Cursor` as its cursor.

    `inline`: run the cursor's statements on the calling thread (`statements_inline`).
    `at_once`: try them on the calling thread without waiting, and on the connection's
    thread if SQLite answers busy (`statements_at_once`).
    """

    inline: bool = False
    at_once: bool = False
    # The engine opens every connection with `PRAGMA synchronous=FULL` (registry/db/engine.py).
    synchronous: str = "FULL"

    def cursor(self) -> Cursor:  # type: ignore[override]
        return Cursor(self)

    async def call(self, function: Callable[[], T]) -> T:
        """Run a statement's `function` here if `inline`, else on the connection's thread.

        `at_once`: here if it needs no wait for another connection's lock, else there.
        """
        if self.inline:
            return function()
        if self.at_once:
            done = self._without_waiting(function)
            if done:
                return done[0]
        return await self.on_thread(function)

    def _without_waiting(self, function: Callable[[], T]) -> list[T]:
        """`function` here, with the busy timeout at 0: `[its result]`, or `[]` if busy.

        SQLite answers at once instead of waiting: a statement that would wait for another
        connection's lock fails busy before it changed anything, and the busy timeout is
        what it was either way, for the caller to wait with on the connection's thread.
        """
        sqlite = self._conn
        (timeout,) = sqlite.execute("PRAGMA busy_timeout").fetchone()
        sqlite.execute("PRAGMA busy_timeout=0")
        try:
            return [function()]
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                raise
            return []
        finally:
            sqlite.execute(f"PRAGMA busy_timeout={int(timeout)}")

    def durability(self, *, durable: bool) -> None:
        """Before a write transaction: its commit fsyncs the WAL (`FULL`) or not (`NORMAL`).

        SQLite refuses the change inside a transaction, so this runs before `BEGIN`, on the
        calling thread (the pragma touches no file and waits for no lock), and only when the
        level differs from the one set last. Every write transaction states its level, so
        one that must be durable never inherits a relaxed one.
        """
        level = "FULL" if durable else "NORMAL"
        if self.synchronous != level:
            self._conn.execute(f"PRAGMA synchronous={level}")
            self.synchronous = level

    def begin_at_once(self) -> bool:
        """`BEGIN IMMEDIATE` on the calling thread if the database's write lock is free now.

        With the busy timeout at 0 for that one statement, SQLite answers at once: the lock
        is taken (True), or it is busy (False, nothing changed: the caller waits for it on
        the connection's thread, with the busy timeout it had). In WAL mode nothing else in
        `BEGIN IMMEDIATE` waits: it takes the write lock in the shared-memory index and
        reads no page. What it saves is a trip to the connection's thread and that
        thread's wake-up (docs/write-path.md has the figures).
        """
        return bool(self._without_waiting(lambda: self._conn.execute("BEGIN IMMEDIATE")))

    async def rollback(self) -> None:
        """Roll back the open transaction; without one, return at once.

        The pool rolls every connection back as it takes it back ("reset on return"),
        after the unit of work has already committed or rolled back: that was one trip to
        the connection's thread per transaction for nothing. The sqlite3 connection says
        whether a transaction is open, and nothing runs on its thread between two awaited
        calls, so reading it here is safe.
        """
        if self._conn.in_transaction:
            await super().rollback()

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The sqlite3 connection: used on the connection's thread, or inline (`call`)."""
        return self._conn

    async def on_thread(self, function: Callable[[], T]) -> T:
        """Run `function` on the connection's thread."""
        result: T = await self._execute(function)  # type: ignore[no-untyped-call]
        return result


async def connect(url: URL, busy_timeout: float) -> Connection:
    """A `Connection` to the database `url` names, as the stock driver would open it."""
    args, options = SQLiteDialect_aiosqlite().create_connect_args(url)
    # Inline statements run on the loop's thread, not the one that opened the connection.
    options = {**options, "timeout": busy_timeout, "check_same_thread": False}
    connection = Connection(partial(sqlite3.connect, *args, **options), iter_chunk_size=64)
    # Like SQLAlchemy's own connect: a connection left open must not keep the process alive.
    connection._thread.daemon = True  # noqa: SLF001 - aiosqlite exposes no setting for it
    await connection
    return connection


def sqlite_driver_of(conn: AsyncConnection) -> Connection | None:
    """`conn`'s driver connection if it is this module's (SQLite), else None."""
    sync = conn.sync_connection
    if sync is None or conn.dialect.name != "sqlite":
        return None
    driver = sync.connection.driver_connection
    return driver if isinstance(driver, Connection) else None


def statements_inline(conn: AsyncConnection) -> AbstractAsyncContextManager[None]:
    """Run `conn`'s statements on the loop's thread until the block ends (SQLite only).

    For a write transaction whose `BEGIN IMMEDIATE` has returned, and only for statements
    that are small (a package write's, bounded by its file limit). Elsewhere, or on another
    database, it changes nothing.
    """
    return _while_set(conn, "inline")


def statements_at_once(conn: AsyncConnection) -> AbstractAsyncContextManager[None]:
    """Try `conn`'s statements on the loop's thread without waiting until the block ends.

    For a statement run alone outside a transaction (`UnitOfWork.single`'s reads): a read
    in WAL mode waits for no writer, and what could make it wait (a checkpoint resetting
    the log, a recovery) makes SQLite answer busy at once, and the statement goes to the
    connection's thread as before. On another database it changes nothing.
    """
    return _while_set(conn, "at_once")


@asynccontextmanager
async def _while_set(
    conn: AsyncConnection, flag: Literal["inline", "at_once"]
) -> AsyncIterator[None]:
    """`flag` on `conn`'s driver connection for the block, if it is this module's."""
    driver = sqlite_driver_of(conn)
    if driver is None:
        yield
        return
    setattr(driver, flag, True)
    try:
        yield
    finally:
        setattr(driver, flag, False)
