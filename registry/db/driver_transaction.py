"""PostgreSQL transactions run on psycopg itself, with the driver in autocommit.

- `DriverTransaction`: a publish's write transaction. psycopg begins a transaction by
  sending `BEGIN` alone and waiting for its reply, even in a pipeline, and SQLAlchemy's
  transaction costs two hops into its greenlet; here the `BEGIN` goes out with the
  transaction's first statements, in one round trip (`direct.run_together`).
- `single_statements`: each statement its own transaction (`UnitOfWork.single`), the
  driver put in autocommit directly rather than through SQLAlchemy's
  `isolation_level="AUTOCOMMIT"`.

Either way, when the block ends the driver leaves autocommit, or the connection is
invalidated if it cannot: no pooled connection is ever left in autocommit
(docs/write-path.md, "The transaction on the driver").
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import psycopg
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.direct import translated

_IDLE: Final = psycopg.pq.TransactionStatus.IDLE


class DriverTransaction:
    """PostgreSQL: a write transaction on psycopg itself, begun by its first statements.

    Its `BEGIN` goes out with them, in one round trip (`direct.run_together(..., transaction=)`).

    psycopg begins a transaction by sending `BEGIN` alone and waiting for its reply, even in
    a pipeline, and SQLAlchemy's transaction costs two hops into its greenlet (begin and
    commit). Here the driver is in autocommit for the transaction's life, so psycopg adds
    nothing, and the transaction's first statements begin it explicitly; the statements
    that follow (through `run`, or SQLAlchemy's `execute`) run inside it; `commit` and
    `rollback` send `COMMIT` and `ROLLBACK` (psycopg sends them whenever the server has a
    transaction open, autocommit or not). SQLAlchemy's `begin`, `commit` and `rollback`
    events are dispatched as for its own transactions, and errors are raised as
    SQLAlchemy's (`direct.translated`).

    `end` must run when the transaction is over, whatever happened: it takes the driver out
    of autocommit again, or invalidates the connection if it cannot (a transaction still
    open, a lost connection), so that no pooled connection is ever left in autocommit.
    """

    __slots__ = ("_begun", "_conn", "_pg", "_sync")

    def __init__(self, conn: AsyncConnection, pg: psycopg.AsyncConnection[Any]) -> None:
        sync = conn.sync_connection
        assert sync is not None
        self._conn, self._pg, self._sync = conn, pg, sync
        self._begun = False

    @classmethod
    async def start(cls, conn: AsyncConnection) -> DriverTransaction | None:
        """Begin one on `conn` (`BEGIN` not sent yet), or None: not a psycopg connection."""
        sync = conn.sync_connection
        if sync is None or sync.in_transaction():
            return None
        pg = sync.connection.driver_connection
        if not isinstance(pg, psycopg.AsyncConnection) or pg.autocommit:
            return None
        transaction = cls(conn, pg)
        await pg.set_autocommit(True)
        try:
            sync.dispatch.begin(sync)
        except BaseException:
            await _leave_autocommit(conn, pg)
            raise
        return transaction

    def opens(self, driver: object) -> bool:
        """Whether statements sent now on `driver` must begin the transaction first."""
        if self._begun or driver is not self._pg:
            return False
        self._begun = True
        return True

    async def commit(self) -> None:
        """Send `COMMIT` (nothing if the transaction never began)."""
        self._sync.dispatch.commit(self._sync)
        await translated(self._conn, "COMMIT", None, many=False, work=self._pg.commit())

    async def rollback(self) -> None:
        """Send `ROLLBACK` (nothing if no transaction is open, or the connection is lost)."""
        self._sync.dispatch.rollback(self._sync)
        if self._sync.invalidated:
            return
        await translated(self._conn, "ROLLBACK", None, many=False, work=self._pg.rollback())

    async def end(self) -> None:
        """Take the driver out of autocommit, or invalidate the connection."""
        await _leave_autocommit(self._conn, self._pg)


@asynccontextmanager
async def single_statements(conn: AsyncConnection) -> AsyncIterator[None]:
    """PostgreSQL: inside the block each statement `run` sends is its own transaction.

    The driver is put in autocommit directly, as for a `DriverTransaction`, rather than
    through SQLAlchemy's `isolation_level="AUTOCOMMIT"`, whose setting and reset on the
    way back to the pool cost two hops into its greenlet. After the block the driver
    leaves autocommit, or the connection is invalidated if it cannot. Elsewhere (SQLite, a
    transaction already open, a driver in autocommit already) it changes nothing.
    """
    sync = conn.sync_connection
    pg = None if sync is None or sync.in_transaction() else sync.connection.driver_connection
    if not isinstance(pg, psycopg.AsyncConnection) or pg.autocommit:
        yield
        return
    await pg.set_autocommit(True)
    try:
        yield
    finally:
        await _leave_autocommit(conn, pg)


async def _leave_autocommit(conn: AsyncConnection, pg: psycopg.AsyncConnection[Any]) -> None:
    """Take `pg` out of autocommit, or invalidate `conn`: no transaction may be open then."""
    try:
        if not pg.closed and pg.pgconn.transaction_status == _IDLE:
            await pg.set_autocommit(False)
            return
    except BaseException:
        await _invalidate(conn)
        raise
    await _invalidate(conn)


async def _invalidate(conn: AsyncConnection) -> None:
    if not conn.invalidated:
        await conn.invalidate()
