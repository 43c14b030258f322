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
  PostgreSQL is `DriverTransaction`: the driver's own, its `BEGIN` sent with the
  transaction's first statements, with SQLAlchemy's transaction events dispatched.

A connection with no transaction open runs the statement directly only where the driver
runs it as its own transaction (`UnitOfWork.single`): PostgreSQL's driver in autocommit
(`single_statements`, or SQLAlchemy's `isolation_level="AUTOCOMMIT"`), SQLite's connection
marked `SINGLE` (its driver runs a statement outside a transaction so). For one statement
that is one snapshot, with no `BEGIN` or `COMMIT`.

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
from collections import namedtuple
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase, ValuesBase

from registry.db.sqlite_driver import Connection as DriverConnection

Params = Mapping[str, Any]
T = TypeVar("T")

# The execution option of a connection that runs one statement as its own transaction
# (`UnitOfWork.single`): with no transaction open, the driver runs it in autocommit.
SINGLE: Final = "skillreg_single_statement"
_TUPLES_OK: Final = psycopg.pq.ExecStatus.TUPLES_OK
_IDLE: Final = psycopg.pq.TransactionStatus.IDLE
_BEGIN: Final = "BEGIN"
_ONE: Final = False  # a cursor event's `executemany`
_Processor = Callable[[Any], Any] | None
# A bound parameter's key, its compiled name, and its own value or `_REQUIRED`.
_Source = tuple[str, str, Any]
_REQUIRED: Final = object()


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


@dataclass(frozen=True, slots=True)
class _Compiled:
    """One statement compiled for one dialect, with what binding and reading it needs."""

    compiled: SQLCompiler
    sql: str
    positional: bool
    names: tuple[str, ...]
    # Where each of `names` takes its value from (`_sources`), or None: `construct_params`.
    sources: tuple[_Source, ...] | None
    binders: tuple[_Processor, ...]
    # An expanding parameter's name -> what its placeholder becomes for an empty list.
    expanding: Mapping[str, str]
    readers: tuple[_Processor, ...]
    row: Callable[..., Any] | None

    def bind(self, params: Params) -> tuple[str, Any]:
        """The SQL and its values."""
        values = self.values(params)
        if not self.positional:
            return self._bind_named(values)
        if not self.expanding:
            return self.sql, tuple(
                [
                    value if binder is None else binder(value)
                    for binder, value in zip(self.binders, values, strict=True)
                ]
            )
        sql, flat = self.sql, []
        for name, binder, value in zip(self.names, self.binders, values, strict=True):
            if name not in self.expanding:
                flat.append(value if binder is None else binder(value))
                continue
            placeholders = ", ".join("?" * len(value)) if value else self.expanding[name]
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", placeholders, 1)
            flat.extend(v if binder is None else binder(v) for v in value)
        return sql, tuple(flat)

    def values(self, params: Params) -> list[Any]:
        """Each of `names`' value, as `construct_params` would give it.

        A parameter's value comes from `params` by its key (or its compiled name), else
        from the statement's own bound value; a required one that `params` lacks goes to
        `construct_params`, which raises SQLAlchemy's error for it.
        """
        if self.sources is not None:
            values = []
            for key, name, default in self.sources:
                if key in params:
                    values.append(params[key])
                elif name in params:
                    values.append(params[name])
                elif default is _REQUIRED:
                    break
                else:
                    values.append(default)
            else:
                return values
        constructed = self.compiled.construct_params(params)
        return [constructed[name] for name in self.names]

    def _bind_named(self, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
        # `%(name)s` placeholders (psycopg): an expanding list becomes `name__1, ...`.
        sql, named = self.sql, {}
        for name, binder, value in zip(self.names, self.binders, values, strict=True):
            if name not in self.expanding:
                named[name] = value if binder is None else binder(value)
                continue
            keys = [f"{name}__{i}" for i in range(1, len(value) + 1)]
            placeholders = ", ".join(f"%({key})s" for key in keys) or self.expanding[name]
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", placeholders, 1)
            named.update(
                zip(keys, (v if binder is None else binder(v) for v in value), strict=True)
            )
        return sql, named

    def read(self, raw: list[tuple[Any, ...]]) -> list[Any]:
        """`raw` rows with each column through its type's result processor."""
        if self.row is None:
            return []
        readers, row = self.readers, self.row
        if not any(readers):
            return [row(values) for values in raw]
        return [
            row([v if r is None else r(v) for r, v in zip(readers, values, strict=True)])
            for values in raw
        ]


# Compiled statements by (statement, dialect, columns). The statements are module constants, so
# this holds a few dozen entries; the bound keeps a statement built per call from growing it.
_CACHE_SIZE: Final = 512
_CacheKey = tuple[int, type[Dialect], frozenset[str] | None]
_CACHE: Final[dict[_CacheKey, tuple[Any, _Compiled | None]]] = {}


def _compile(statement: Any, dialect: Dialect, keys: frozenset[str] | None) -> _Compiled | None:
    cache_key = (id(statement), type(dialect), keys)
    hit = _CACHE.get(cache_key)
    if hit is not None and hit[0] is statement:
        return hit[1]
    compiled = _compiled(statement, dialect, keys)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()  # statements built per call (not module constants) only cost compiles
    _CACHE[cache_key] = (statement, compiled)
    return compiled


def _compiled(statement: Any, dialect: Dialect, keys: frozenset[str] | None) -> _Compiled | None:
    options = {} if keys is None else {"column_keys": sorted(keys)}
    compiled = statement.compile(dialect=dialect, **options)
    assert isinstance(compiled, SQLCompiler)
    if compiled.positional:
        names = tuple(compiled.positiontup or ())
    else:
        names = tuple(dict.fromkeys(compiled.bind_names.values()))
    if compiled.insert_prefetch or compiled.update_prefetch or compiled.literal_execute_params:
        return None  # Python-side defaults or literal rendering: SQLAlchemy's execution
    binds = [compiled.binds[name] for name in names]
    expanding = {}
    for name, bind in zip(names, binds, strict=True):
        if bind.expanding:
            if bind.type.dialect_impl(dialect)._is_tuple_type:  # noqa: SLF001 - no public flag
                return None  # `(a, b) IN ...`: SQLAlchemy's execution
            empty = compiled.visit_empty_set_op_expr([bind.type], bind.expand_op)  # type: ignore[no-untyped-call]
            expanding[name] = empty
    columns = list(statement.exported_columns) if _returns_rows(statement) else []
    keys_out = [c.key for c in columns]
    row = None
    if columns:
        named = all(isinstance(k, str) and k.isidentifier() for k in keys_out)
        if not named or len(set(keys_out)) != len(keys_out):
            return None
        row = namedtuple("Row", keys_out)._make  # type: ignore[attr-defined]  # noqa: PYI024
    return _Compiled(
        compiled=compiled,
        sql=compiled.string,
        positional=compiled.positional,
        names=names,
        sources=_sources(compiled, names),
        binders=tuple(_binder(b.type, dialect) for b in binds),
        expanding=expanding,
        readers=tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        ),
        row=row,
    )


def _sources(compiled: SQLCompiler, names: tuple[str, ...]) -> tuple[_Source, ...] | None:
    """Where `construct_params` takes each of `names`' value from, or None if not only so.

    For each bound parameter: its key, its compiled name (`construct_params` looks a value
    up by both, in that order) and its own value (`_REQUIRED` if it is required). None when
    `construct_params` does more than that for this statement: escaped names, a value
    computed at execution (`callable_`), values collected at compile time (a `text`
    clause's own parameters, merged in first), or a
    statement whose expanding parameters are already rendered.
    """
    if (
        compiled.escaped_bind_names
        or getattr(compiled, "_collected_params", None)
        or compiled._render_postcompile  # noqa: SLF001 - no public flag
    ):
        return None
    by_name: dict[str, _Source] = {}
    for bind, name in compiled.bind_names.items():
        if bind.callable is not None:
            return None
        # As in `construct_params`, a later parameter of the same name wins.
        by_name[name] = (bind.key, name, _REQUIRED if bind.required else bind.value)
    if any(name not in by_name for name in names):
        return None
    return tuple(by_name[name] for name in names)


def _binder(type_: Any, dialect: Dialect) -> _Processor:
    processor: _Processor = type_.dialect_impl(dialect).bind_processor(dialect)
    if processor is None or not _is_timestamp(type_):
        return processor
    return _SameTimestamp(processor)


def _is_timestamp(type_: Any) -> bool:
    impl = type_.impl_instance if isinstance(type_, sa.TypeDecorator) else type_
    return isinstance(impl, sa.DateTime)


class _SameTimestamp:
    """A bind processor that converts the timestamp it converted last only once.

    A write binds the same `now` into every row of a multi-row insert (a claim binds it
    twice per digest): converting it to SQLite's text or to UTC once per row was most of a
    write's binding. Timestamps are immutable, so the same object converts the same way;
    any other value goes to the processor every time. Only timestamp columns get one.
    """

    __slots__ = ("_last", "_processor")

    def __init__(self, processor: Callable[[Any], Any]) -> None:
        self._processor = processor
        self._last: tuple[Any, Any] = (None, None)

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, datetime):
            return self._processor(value)
        last, converted = self._last
        if value is last:
            return converted
        converted = self._processor(value)
        self._last = (value, converted)
        return converted


def _returns_rows(statement: Any) -> bool:
    if isinstance(statement, UpdateBase):
        return bool(statement._returning)  # noqa: SLF001 - no public flag for RETURNING
    return isinstance(statement, sa.Select)


def _columns(statement: Any, params: Params | Sequence[Params] | None) -> frozenset[str] | None:
    """An insert's or an update's columns: its parameters' keys (as `Connection.execute`)."""
    if not isinstance(statement, ValuesBase | sa.Update):
        return None
    first = params[0] if isinstance(params, Sequence) else params
    return frozenset(first or ())


async def run(
    conn: AsyncConnection, statement: Any, params: Params | Sequence[Params] | None = None
) -> Rows:
    """Execute `statement` with `params` (a list: once per item) in `conn`'s transaction."""
    driver = _driver(conn)
    many = isinstance(params, Sequence)
    if driver is None or (many and not params):
        return await _through_sqlalchemy(conn, statement, params)
    compiled = _compile(statement, conn.dialect, _columns(statement, params))
    returning = compiled is not None and compiled.row is not None
    # Several rows with RETURNING: SQLite runs the statement once per row, in one call on
    # its driver (the rows in order, as SQLAlchemy's "insertmanyvalues" returns them); on
    # PostgreSQL, where each would be a round trip, SQLAlchemy batches them.
    batched = many and returning and not isinstance(driver, DriverConnection)
    bound = None if compiled is None or batched else _bound(compiled, params)
    if compiled is None or bound is None:
        return await _through_sqlalchemy(conn, statement, params)
    sync = conn.sync_connection
    assert sync is not None
    dispatch = sync.dispatch
    sql, args = bound
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
    transaction: DriverTransaction | None = None,
) -> list[Rows]:
    """Execute `queries` in order in `conn`'s transaction, in one round trip on PostgreSQL.

    `transaction`: the `DriverTransaction` these statements may open; if it has not begun,
    its `BEGIN` goes out first, in the same round trip (or alone before them, when they
    cannot go together). The first error is raised, as from `run`; the statements after it
    did not run. Where a pipeline cannot carry them (another driver, a statement `run` would
    hand to SQLAlchemy), they run one by one.
    """
    driver = _driver(conn)
    if not isinstance(driver, psycopg.AsyncConnection):
        return [await run(conn, q.statement, q.params) for q in queries]
    begin = transaction is not None and transaction.opens(driver)
    compiled = [
        _compile(q.statement, conn.dialect, _columns(q.statement, q.params)) for q in queries
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
    outcomes = await _guarded(
        conn, "; ".join(sql for sql, _ in sent), None, many=False, work=_pipelined(driver, sent)
    )
    for sql, args in sent:
        dispatch.after_cursor_execute(sync, None, sql, args, None, _ONE)
    return outcomes


def _bound(compiled: _Compiled, params: Params | Sequence[Params] | None) -> tuple[str, Any] | None:
    """The SQL and its values (a list of them for several rows), or None: not directly."""
    if not isinstance(params, Sequence):
        return compiled.bind(params or {})
    if compiled.expanding:
        return None  # SQLAlchemy refuses expanding parameters in an executemany
    bound = [compiled.bind(p) for p in params]
    return bound[0][0], [b[1] for b in bound]


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
    return await _guarded(
        conn, sql, args, many=many, work=_on_postgres(driver, sql, args, many=many)
    )


async def _guarded(
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


class DriverTransaction:
    """PostgreSQL: a write transaction on psycopg itself, begun by its first statements.

    Its `BEGIN` goes out with them, in one round trip (`run_together(..., transaction=)`).

    psycopg begins a transaction by sending `BEGIN` alone and waiting for its reply, even in
    a pipeline, and SQLAlchemy's transaction costs two hops into its greenlet (begin and
    commit). Here the driver is in autocommit for the transaction's life, so psycopg adds
    nothing, and the transaction's first statements begin it explicitly; the statements
    that follow (through `run`, or SQLAlchemy's `execute`) run inside it; `commit` and
    `rollback` send `COMMIT` and `ROLLBACK` (psycopg sends them whenever the server has a
    transaction open, autocommit or not). SQLAlchemy's `begin`, `commit` and `rollback`
    events are dispatched as for its own transactions, and errors are raised as
    SQLAlchemy's (`_guarded`).

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
        await _guarded(self._conn, "COMMIT", None, many=False, work=self._pg.commit())

    async def rollback(self) -> None:
        """Send `ROLLBACK` (nothing if no transaction is open, or the connection is lost)."""
        self._sync.dispatch.rollback(self._sync)
        if self._sync.invalidated:
            return
        await _guarded(self._conn, "ROLLBACK", None, many=False, work=self._pg.rollback())

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


async def _through_sqlalchemy(
    conn: AsyncConnection, statement: Any, params: Params | Sequence[Params] | None
) -> Rows:
    result = await conn.execute(statement, params)
    rows = list(result.all()) if result.returns_rows else []
    return Rows(rows, result.rowcount)
