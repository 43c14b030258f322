"""Building the async engine for either database, with the session settings the write path needs.

SQLite: WAL journal, `synchronous=FULL` (a committed version survives a power cut), foreign
keys on, a busy timeout, and SQLAlchemy, not the driver, emitting `BEGIN` (the "begin" event,
SQLAlchemy's documented recipe for pysqlite and aiosqlite), so that a write transaction can
start with `BEGIN IMMEDIATE` and take the database's write lock up front. The stock
`sqlite+aiosqlite` driver runs every statement.

PostgreSQL (psycopg 3): `lock_timeout` and `statement_timeout` on every session, so a stuck
writer cannot hold a workspace's advisory lock, or wait for one, without bound.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from registry.db.cancel import check_cancelled

# Execution options read by SQLite's "begin" hook; other dialects ignore them.
# The next transaction on the connection is a write transaction (`BEGIN IMMEDIATE`).
WRITE_TX: Final = "skillreg_write_tx"
# `BEGIN IMMEDIATE` waits at most this many milliseconds for the write lock (a write whose
# lock budget is partly spent), instead of the engine's busy timeout.
LOCK_WAIT_MS: Final = "skillreg_lock_wait_ms"
# No `BEGIN`: each statement is its own transaction (the driver's autocommit), for one
# statement that needs no other (`UnitOfWork.read_one`).
NO_BEGIN: Final = "skillreg_no_begin"

SUPPORTED_DRIVERS: Final = ("sqlite+aiosqlite", "postgresql+psycopg")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,63}")


class UnsupportedDatabaseURL(ValueError):
    """The database URL names a dialect or driver the registry does not support.

    `url` is the URL as it may be shown: its password masked, or, for text that does not
    parse as a URL (where no one can tell the password apart), its scheme alone.
    """

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"unsupported database URL {url!r}: {reason}")


def parse_database_url(url: str) -> URL:
    """Parse and check a database URL; `postgresql://` is read as `postgresql+psycopg://`."""
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError:
        scheme = url.partition("://")[0]
        scheme = scheme if "://" in url and _SCHEME.fullmatch(scheme) else ""
        raise UnsupportedDatabaseURL(f"{scheme}://…", "not a database URL") from None
    shown = parsed.render_as_string(hide_password=True)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif parsed.drivername == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    if parsed.drivername not in SUPPORTED_DRIVERS:
        raise UnsupportedDatabaseURL(
            shown, f"use one of {', '.join(SUPPORTED_DRIVERS)} (got {parsed.drivername})"
        )
    return parsed


def sqlite_path(url: URL) -> Path | None:
    """The file a SQLite URL points at, or None for an in-memory database."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    return Path(database)


def _refuse_statements_after_cancel(*_args: Any) -> None:
    # A cancelled caller's transaction stops before sending anything more (db/cancel.py).
    check_cancelled()


def create_engine(
    url: str,
    *,
    lock_timeout: float = 5.0,
    statement_timeout: float = 30.0,
    sqlite_busy_timeout: float = 5.0,
    pool_size: int = 5,
    max_overflow: int = 5,
    pool_timeout: float = 10.0,
) -> AsyncEngine:
    """Create the async engine for `url` with the registry's session settings."""
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(
            parsed,
            busy_timeout=sqlite_busy_timeout,
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
        )
    else:
        engine = _postgres_engine(
            parsed,
            lock_timeout=lock_timeout,
            statement_timeout=statement_timeout,
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
        )
    sa.event.listen(engine.sync_engine, "before_cursor_execute", _refuse_statements_after_cancel)
    return engine


def _sqlite_engine(
    url: URL, *, busy_timeout: float, pool_size: int, max_overflow: int, pool_timeout: float
) -> AsyncEngine:
    # `timeout` is the driver's own busy wait, used while BEGIN IMMEDIATE waits for the
    # write lock; the pragma covers statements that upgrade a read transaction.
    pooling: dict[str, Any] = {}
    if sqlite_path(url) is not None:
        # A file database gets a queue pool (an in-memory one keeps its single connection).
        pooling = {
            "pool_size": pool_size,
            "max_overflow": max_overflow,
            "pool_timeout": pool_timeout,
        }
    engine = create_async_engine(url, connect_args={"timeout": busy_timeout}, **pooling)
    busy_ms = int(busy_timeout * 1000)

    @sa.event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand BEGIN over to SQLAlchemy (see the "begin" hook) instead of the driver's
        # legacy implicit transactions, which skip BEGIN for SELECT and DDL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if sqlite_path(url) is not None:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        finally:
            cursor.close()

    @sa.event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        options = conn.get_execution_options()
        if options.get(NO_BEGIN):
            return  # the driver runs each statement as its own transaction
        if not options.get(WRITE_TX):
            conn.exec_driver_sql("BEGIN")
            return
        wait_ms = options.get(LOCK_WAIT_MS)
        if wait_ms is None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            return
        # The busy timeout is the connection's: set for this wait, then back to the default.
        conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait_ms)}")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        finally:
            conn.exec_driver_sql(f"PRAGMA busy_timeout={busy_ms}")

    return engine


def _postgres_engine(
    url: URL,
    *,
    lock_timeout: float,
    statement_timeout: float,
    pool_size: int,
    max_overflow: int,
    pool_timeout: float,
) -> AsyncEngine:
    options = (
        f"-c lock_timeout={int(lock_timeout * 1000)} "
        f"-c statement_timeout={int(statement_timeout * 1000)} "
        # A writer that dies mid-transaction must not hold its locks until TCP notices.
        f"-c idle_in_transaction_session_timeout={int(max(statement_timeout, 1) * 2000)} "
        "-c timezone=UTC"
    )
    return create_async_engine(
        url,
        connect_args={"options": options},
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=pool_timeout,
        # No pre-ping (a round trip per checkout): a connection that went stale fails its
        # first statement as invalidated, and the unit of work retries the transaction
        # on a fresh one (registry/db/unit.py).
    )


async def write_connection(conn: AsyncConnection) -> AsyncConnection:
    """Mark `conn` so its next transaction is a write transaction (SQLite `BEGIN IMMEDIATE`)."""
    return await conn.execution_options(**{WRITE_TX: True})


def dialect_name(engine: AsyncEngine | AsyncConnection) -> str:
    """`postgresql` or `sqlite`."""
    return engine.dialect.name
