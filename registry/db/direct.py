"""A package write's statements: compiled by SQLAlchemy once, run on the driver directly.

SQLAlchemy's execution of an already compiled statement costs 0.1-0.3 ms of client CPU on
this kind of machine (an execution context, a hop into a greenlet and back, a result
object, its rows), while SQLite runs a package write's statement in 0.01-0.1 ms; inside the
locked transaction that overhead was most of the lock's hold on SQLite and a third of the
client's share of it on PostgreSQL (docs/write-path.md). `run` executes a statement on the
driver connection itself:
- SQLite: on the sqlite3 connection, on the event loop's thread when the transaction's
  statements run inline (`sqlite_driver.statements_inline`), else in one hop to the
  driver's thread;
- PostgreSQL: on the psycopg connection, awaited in the caller's task, as SQLAlchemy's own
  adapter awaits it, and prepared on the server at its first execution on a connection
  (psycopg's default waits for the sixth; see "Plans" in docs/write-path.md). A driver set
  never to prepare (`prepare_threshold=None`, for a pooler that cannot keep prepared
  statements) is left so.

What stays SQLAlchemy's:
- the statement: built with Core, compiled by the connection's dialect once per set of
  columns (an insert's or an update's columns are its parameters' keys, as in
  `Connection.execute`), with the bound literals `construct_params` fills in. Where
  filling them in is only lookups (a value by its key or its compiled name, else the
  statement's own literal), the lookups are resolved once at compile time (`_sources`):
  `construct_params` walks every bound parameter of the statement for each row (binding a
  write's statements: 0.61-0.64 ms with it, 0.40-0.43 ms without on SQLite; 0.27-0.30 and
  0.16-0.18 ms on PostgreSQL);
- the types: every parameter and result column goes through its type's own processors
  for the dialect (`TypeEngine.dialect_impl(dialect).bind_processor`/`result_processor`),
  so a timestamp is stored and read back exactly as through `Connection.execute`;
- the events: `before_cursor_execute` and `after_cursor_execute` are dispatched on the
  connection, so the engine's cancellation check and every statement counter see these
  statements too. They run in the caller's task, not in SQLAlchemy's greenlet: a
  listener must not send a statement of its own through the connection it is given (the
  registry's own listener only checks for a cancellation);
- the errors: a driver error is raised as SQLAlchemy's (`DBAPIError.instance`), so the
  unit of work translates it as before; a PostgreSQL error the dialect takes for a lost
  connection invalidates the connection first (`connection_invalidated`), so the pool
  drops it and the unit of work retries the transaction on another;
- the transaction, which the unit of work begins and ends. A publish's transaction on
  PostgreSQL is the driver's own (`driver_transaction.DriverTransaction`), its `BEGIN`
  sent with the transaction's first statements, with SQLAlchemy's transaction events
  dispatched.

A connection with no transaction open runs the statement directly only where the driver
runs it as its own transaction (`UnitOfWork.single`): PostgreSQL's driver in autocommit
(`driver_transaction.single_statements`, or SQLAlchemy's `isolation_level="AUTOCOMMIT"`),
SQLite's connection marked `SINGLE` (its driver runs a statement outside a transaction so).
For one statement that is one snapshot, with no `BEGIN` or `COMMIT`.

Several rows with RETURNING run on SQLite as one execution per row, in one call on the
driver (the rows in order, as SQLAlchemy's "insertmanyvalues" returns them).

An expanding parameter (`bindparam(..., expanding=True)`) becomes one placeholder per
value; bound to an empty list it becomes the dialect's own empty-set expression
(`visit_empty_set_op_expr`, as `Connection.execute` renders it): a write with no sources
checks its source exclusions with that.

`run_together` sends several statements in one round trip on PostgreSQL (psycopg's
pipeline mode: each statement runs when the one before it has, in the same transaction, and
the replies come back together), for statements whose order the server keeps but whose
results the client need not see in between: the workspace lock and the write context
(docs/write-path.md). An error in one skips the ones after it. Elsewhere they run one by
one.

Anything else runs through `conn.execute`, with the same result (`Rows`): another
database, an unmarked connection with no transaction open, an expanding parameter of tuples,
a statement that would need Python-side column defaults or literal rendering, and several
rows with RETURNING on PostgreSQL (SQLAlchemy batches them into one round trip).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Protocol, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.compiled import Params, bound, columns_of, compile_statement
from registry.db.sqlite_driver import Connection as DriverConnection

__all__ = ["SINGLE", "Opening", "Params", "Query", "Rows", "run", "run_together", "translated"]
T = TypeVar("T")

# The execution option of a connection that runs one statement as its own transaction
# (`UnitOfWork.single`): with no transaction open, the driver runs it in autocommit.
SINGLE: Final = "skillreg_single_statement"
_TUPLES_OK: Final = psycopg.pq.ExecStatus.TUPLES_OK
_BEGIN: Final = "BEGIN"
_ONE: Final = False  # a cursor event's `executemany`


@dataclass(frozen=True, slots=True)
class Rows:
    """A statement's rows (attribute access by column name) and its row count."""

    rows: list[Any]
    rowcount: int

    def scalar(self) -> Any:
        """The first column of the first row, or None without rows."""
        return self.rows[0][0] if self.rows else None

    def first(self) -> Any:
        """The first row, or None."""
        return self.rows[0] if self.rows else None

    def one(self) -> Any:
        """The only row; a statement that returned another count is a programming error."""
        if len(self.rows) != 1:
            msg = f"expected one row, got {len(self.rows)}"
            raise sa.exc.MultipleResultsFound(msg) if self.rows else sa.exc.NoResultFound(msg)
        return self.rows[0]

    def __iter__(self) -> Any:
        return iter(self.rows)


@dataclass(frozen=True, slots=True)
class Query:
    """A statement and its parameters, for `run_together`."""

    statement: Any
    params: Params


class Opening(Protocol):
    """A transaction its first statements begin (`driver_transaction.DriverTransaction`)."""

    def opens(self, driver: object) -> bool:
        """Whether statements sent now on `driver` must send its `BEGIN` first."""
        ...


async def run(
    conn: AsyncConnection, statement: Any, params: Params | Sequence[Params] | None = None
) -> Rows:
    """Execute `statement` with `params` (a list: once per item) in `conn`'s transaction."""
    driver = _driver(conn)
    many = isinstance(params, Sequence)
    if driver is None or (many and not params):
        return await _through_sqlalchemy(conn, statement, params)
    compiled = compile_statement(statement, conn.dialect, columns_of(statement, params))
    returning = compiled is not None and compiled.row is not None
    # Several rows with RETURNING: SQLite runs the statement once per row, in one call on
    # its driver (the rows in order, as SQLAlchemy's "insertmanyvalues" returns them); on
    # PostgreSQL, where each would be a round trip, SQLAlchemy batches them.
    batched = many and returning and not isinstance(driver, DriverConnection)
    sent = None if compiled is None or batched else bound(compiled, params)
    if compiled is None or sent is None:
        return await _through_sqlalchemy(conn, statement, params)
    sync = conn.sync_connection
    assert sync is not None
    dispatch = sync.dispatch
    sql, args = sent
    for listener in dispatch.before_cursor_execute:
        # As `Connection.execute` does: a listener with `retval=True` may change them.
        sql, args = listener(sync, None, sql, args, None, many)
    raw, rowcount = await _execute(conn, driver, sql, args, many=many, returning=returning)
    dispatch.after_cursor_execute(sync, None, sql, args, None, many)
    return Rows(compiled.read(raw), rowcount)


async def run_together(
    conn: AsyncConnection,
    queries: Sequence[Query],
    *,
    transaction: Opening | None = None,
) -> list[Rows]:
    """Execute `queries` in order in `conn`'s transaction, in one round trip on PostgreSQL.

    `transaction`: the transaction these statements may open (a `DriverTransaction`); if it
    has not begun, its `BEGIN` goes out first, in the same round trip (or alone before them,
    when they cannot go together). The first error is raised, as from `run`; the statements after it
    did not run. Where a pipeline cannot carry them (another driver, a statement `run` would
    hand to SQLAlchemy), they run one by one.
    """
    driver = _driver(conn)
    if not isinstance(driver, psycopg.AsyncConnection):
        return [await run(conn, q.statement, q.params) for q in queries]
    begin = transaction is not None and transaction.opens(driver)
    compiled = [
        compile_statement(q.statement, conn.dialect, columns_of(q.statement, q.params))
        for q in queries
    ]
    if any(c is None for c in compiled):
        if begin:
            await _pipelined_statements(conn, driver, [(_BEGIN, None)])
        return [await run(conn, q.statement, q.params) for q in queries]
    sent: list[tuple[str, Any]] = [(_BEGIN, None)] if begin else []
    for query, one in zip(queries, compiled, strict=True):
        assert one is not None
        sent.append(one.bind(query.params))
    outcomes = await _pipelined_statements(conn, driver, sent)
    if begin:
        del outcomes[0]
    return [
        Rows(one.read(raw), rowcount)
        for one, (raw, rowcount) in zip(compiled, outcomes, strict=True)
        if one is not None
    ]


async def _pipelined_statements(
    conn: AsyncConnection, driver: psycopg.AsyncConnection[Any], statements: list[tuple[str, Any]]
) -> list[tuple[list[Any], int]]:
    """Send `statements` in one pipeline, with the connection's cursor events around them.

    A statement without parameters (the `BEGIN` of a `DriverTransaction`) is not prepared.
    """
    sync = conn.sync_connection
    assert sync is not None
    dispatch = sync.dispatch
    sent = []
    for statement in statements:
        sql, args = statement
        for listener in dispatch.before_cursor_execute:
            # As `Connection.execute` does: a listener with `retval=True` may change them.
            sql, args = listener(sync, None, sql, args, None, _ONE)
        sent.append((sql, args))
    outcomes = await translated(
        conn, "; ".join(sql for sql, _ in sent), None, many=False, work=_pipelined(driver, sent)
    )
    for sql, args in sent:
        dispatch.after_cursor_execute(sync, None, sql, args, None, _ONE)
    return outcomes


async def _execute(
    conn: AsyncConnection,
    driver: DriverConnection | psycopg.AsyncConnection[Any],
    sql: str,
    args: Any,
    *,
    many: bool,
    returning: bool,
) -> tuple[list[Any], int]:
    """Run on the driver; its errors become SQLAlchemy's, a lost connection invalidated."""
    if isinstance(driver, DriverConnection):
        call = partial(_on_sqlite, driver.sqlite, sql, args, many=many, returning=returning)
        try:
            return await driver.call(call)
        except sqlite3.Error as exc:
            raise sa.exc.DBAPIError.instance(
                sql, args, exc, sqlite3.Error, dialect=conn.dialect, ismulti=many
            ) from exc
    return await translated(
        conn, sql, args, many=many, work=_on_postgres(driver, sql, args, many=many)
    )


async def translated(
    conn: AsyncConnection, sql: str, args: Any, *, many: bool, work: Awaitable[T]
) -> T:
    """Await `work`; a psycopg error becomes SQLAlchemy's, a lost connection invalidated."""
    try:
        return await work
    except psycopg.Error as exc:
        sync = conn.sync_connection
        assert sync is not None
        lost = conn.dialect.is_disconnect(exc, sync.connection, None)  # type: ignore[arg-type]
        if lost:
            await conn.invalidate(exc)
        raise sa.exc.DBAPIError.instance(
            sql,
            args,
            exc,
            psycopg.Error,
            connection_invalidated=lost,
            dialect=conn.dialect,
            ismulti=many,
        ) from exc


def _on_sqlite(
    sqlite: sqlite3.Connection, sql: str, args: Any, *, many: bool, returning: bool
) -> tuple[list[Any], int]:
    cursor = sqlite.cursor()
    try:
        if not many:
            cursor.execute(sql, args)
            rows = cursor.fetchall() if cursor.description is not None else []
            return rows, cursor.rowcount
        if not returning:
            cursor.executemany(sql, args)
            return [], cursor.rowcount
        rows, count = [], 0
        for one in args:
            cursor.execute(sql, one)
            rows += cursor.fetchall()
            count += max(cursor.rowcount, 0)
        return rows, count
    finally:
        cursor.close()


def _prepare(pg: psycopg.AsyncConnection[Any]) -> bool | None:
    """Prepare at the first execution, unless preparing is off (`prepare_threshold=None`)."""
    return None if pg.prepare_threshold is None else True


async def _on_postgres(
    pg: psycopg.AsyncConnection[Any], sql: str, args: Any, *, many: bool
) -> tuple[list[Any], int]:
    async with pg.cursor() as cursor:
        if many:
            await cursor.executemany(sql, args)
        else:
            await cursor.execute(sql, args, prepare=_prepare(pg))
        rows = await cursor.fetchall() if _returned_rows(cursor) else []
        return rows, cursor.rowcount


def _returned_rows(cursor: psycopg.AsyncCursor[Any]) -> bool:
    """Whether the cursor's current result holds rows (psycopg's `description` rule).

    `description` would say the same, at the price of a `Column` object per field at
    each access (20 of them for the write's head read).
    """
    result = cursor.pgresult
    return result is not None and (bool(result.nfields) or result.status == _TUPLES_OK)


async def _pipelined(
    pg: psycopg.AsyncConnection[Any], statements: Sequence[tuple[str, Any]]
) -> list[tuple[list[Any], int]]:
    cursors = [pg.cursor() for _ in statements]
    try:
        async with pg.pipeline():
            for cursor, (sql, args) in zip(cursors, statements, strict=True):
                prepare = None if args is None else _prepare(pg)
                await cursor.execute(sql, args, prepare=prepare)
        return [
            (await cursor.fetchall() if _returned_rows(cursor) else [], cursor.rowcount)
            for cursor in cursors
        ]
    finally:
        for cursor in cursors:
            await cursor.close()


def _driver(conn: AsyncConnection) -> DriverConnection | psycopg.AsyncConnection[Any] | None:
    """The driver connection of `conn`'s open transaction (or of a `SINGLE` one), or None."""
    sync = conn.sync_connection
    if sync is None:
        return None
    driver = sync.connection.driver_connection
    if isinstance(driver, psycopg.AsyncConnection):
        # Outside SQLAlchemy's transaction only in autocommit (psycopg would begin one of
        # its own): each statement its own transaction (`SINGLE`), or inside the one a
        # `DriverTransaction` began.
        return driver if sync.in_transaction() or driver.autocommit else None
    if isinstance(driver, DriverConnection) and (
        sync.in_transaction() or sync.get_execution_options().get(SINGLE)
    ):
        return driver
    return None


async def _through_sqlalchemy(
    conn: AsyncConnection, statement: Any, params: Params | Sequence[Params] | None
) -> Rows:
    result = await conn.execute(statement, params)
    rows = list(result.all()) if result.returns_rows else []
    return Rows(rows, result.rowcount)
