"""The unit of work: every transaction the registry opens, opened one way.

Five kinds, one method each:
- `read(work)`: a read transaction, in one snapshot (PostgreSQL: `REPEATABLE READ READ
  ONLY`; SQLite's read transactions are snapshots already), so a read that spans statements
  never sees half of a concurrent change (a version whose manifest rows were pruned between
  two of its statements).
- `write(work)`: a write transaction (SQLite: `BEGIN IMMEDIATE`), for work that is
  idempotent as a whole (claims, releases, bookkeeping).
- `single(work)`: one statement as its own transaction (PostgreSQL: autocommit, no `BEGIN`
  or `COMMIT` round trips), for the read and the claim of a package write.
- `locked(workspace, work)`: a write transaction that first takes the workspace's lock, for
  the owner's actions and every other change that must not interleave with a publish.
- `publish(workspace, work)`: the locked transaction of a package write. Its commit is not
  idempotent: if the commit itself fails, the outcome is unknown and `CommitOutcomeUnknown`
  is raised for the caller to settle (docs/write-path.md); `work` may also ask for a rollback
  (nothing to change) by returning `Outcome(value, commit=False)`. On PostgreSQL it is
  the driver's own transaction (`driver_transaction.DriverTransaction`), its `BEGIN` sent
  with the lock.

And one lock that is not a transaction: `turn(name)`, a turn among the processes sharing a
PostgreSQL database, held across several transactions (`write_with_retry`'s attempts).

On SQLite the statements of `publish` and of a `single` write run on the event loop's
thread once `BEGIN IMMEDIATE` has returned (`sqlite_driver.statements_inline`): under the
database's write lock none waits, and a trip to the driver's thread costs more than the
statement. `BEGIN IMMEDIATE` itself, and a `single` read, are tried there without waiting
and go to the driver's thread only if SQLite answers busy (`begin_at_once`,
`statements_at_once`). `COMMIT` stays on that thread (the WAL's fsync).

Each runs in its own task (`cancel.guarded`), so cancelling the caller never cuts a
statement in half, and is retried as a whole on transient errors (before its commit, for
`publish`). A lock that is not granted in time is not retried: inside a write, every
transaction draws on the write's one lock budget (`budget.py`), so the write fails with
`WorkspaceBusy` once it has waited `lock_timeout` in all. Connections are taken through a
gate as wide as the pool, so a burst of writes queues here (within the write's deadline)
instead of failing inside the pool. Whatever still fails is translated into the registry's
own exceptions where it leaves this module, so services never see a driver's error.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from registry.db import budget as write_budget
from registry.db import direct, driver_transaction
from registry.db import errors as db_errors
from registry.db.cancel import check_cancelled, guarded
from registry.db.engine import dialect_name, write_connection
from registry.db.locks import GIVE_TURN, TAKE_TURN, lock_key, lock_workspace, lock_workspace_then
from registry.db.sqlite_driver import sqlite_driver_of, statements_at_once, statements_inline
from registry.errors import StorageUnavailable, WorkspaceBusy

T = TypeVar("T")

Work = Callable[[AsyncConnection], Awaitable[T]]
Hit = Callable[[str], Awaitable[None]]

# A lock budget this close to the configured wait is not worth a statement to shorten it.
_LOCK_SLACK: Final = 0.05


async def _no_hit(_name: str) -> None:
    return None


def _durable_again(conn: AsyncConnection) -> None:
    # After a transaction that skipped its fsync (`durable=False`), before the connection
    # goes back to the pool: whoever takes it next commits durably. Every write transaction
    # also states its level as it begins (`_begin`), so a failure here is caught up then.
    if conn.closed or conn.invalidated:
        return  # the pool drops it
    driver = sqlite_driver_of(conn)
    if driver is not None:
        with suppress(sqlite3.Error):
            driver.durability(durable=True)


def _set_busy_timeout(conn: sa.Connection, milliseconds: int) -> None:
    # On the driver's connection, not through SQLAlchemy, which would begin a transaction
    # (`BEGIN IMMEDIATE`, the very wait this shortens) before running the pragma.
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"PRAGMA busy_timeout={milliseconds}")
    finally:
        cursor.close()


class CommitOutcomeUnknown(Exception):
    """The commit was sent and failed: the transaction may or may not have committed."""


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a `publish` transaction's work returns: its value, and whether to commit."""

    value: T
    commit: bool = True


class _Transaction(Protocol):
    """What a publish ends its transaction with: SQLAlchemy's, or a `DriverTransaction`."""

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...


@dataclass(frozen=True)
class UnitOfWork:
    """Opens the registry's transactions on `engine` (see the module docstring).

    `connections` is how many transactions may run at once (the pool's size plus its
    overflow); `connect_timeout` bounds the wait for one outside a write's deadline.
    """

    engine: AsyncEngine
    retry_attempts: int = 4
    lock_timeout: float = 5.0
    sqlite_busy_timeout: float = 5.0
    connections: int = 10
    connect_timeout: float = 10.0
    _gate: asyncio.Semaphore = field(init=False, repr=False, compare=False)
    _turns: asyncio.Semaphore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_gate", asyncio.Semaphore(self.connections))
        # Turns hold a connection each while their holders write on others: at most a
        # quarter of the connections, so the writes themselves always find some.
        object.__setattr__(self, "_turns", asyncio.Semaphore(max(1, self.connections // 4)))

    @property
    def database(self) -> str:
        """The database's URL with its password hidden, for messages."""
        return self.engine.url.render_as_string(hide_password=True)

    def _retrying(self, attempts: int) -> AsyncRetrying:
        return AsyncRetrying(
            retry=retry_if_exception(db_errors.is_transient),
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )

    async def read(self, work: Work[T]) -> T:
        """Run `work` in a read transaction, in one snapshot."""
        return await self._transact(work, write=False, workspace="")

    async def write(self, work: Work[T], *, workspace: str = "") -> T:
        """Run `work` in a write transaction; `work` must be idempotent as a whole."""
        return await self._transact(work, write=True, workspace=workspace)

    async def single(
        self, work: Work[T], *, write: bool, workspace: str = "", durable: bool = True
    ) -> T:
        """Run `work`, which sends one statement, as that statement's own transaction.

        A single statement is atomic and sees one snapshot by itself, so it runs in
        autocommit: no `BEGIN` and no `COMMIT`, two round trips fewer on PostgreSQL and two
        trips to the driver's thread fewer on SQLite (through `direct`: on PostgreSQL the
        driver in autocommit, `driver_transaction.single_statements`; on SQLite marked `SINGLE`).
        `work` must be one statement (or, if `write`, idempotent statements each safe on
        its own). A SQLite write runs in a write transaction as usual (`BEGIN IMMEDIATE`
        waits for the database's lock), its statements inline; `durable=False` lets its
        commit skip the WAL's fsync (`PRAGMA synchronous=NORMAL` for that transaction), for
        a write whose loss in a power failure loses nothing (a write's claim: the commit
        of the publish that follows fsyncs the WAL, the claim's frames included).
        """
        if dialect_name(self.engine) != "postgresql" and write:
            # A write's statements are small and run under the database's write lock.
            return await self._transact(
                work, write=write, workspace=workspace, inline=True, durable=durable
            )

        async def once() -> T:
            async with (
                self._connection(write=write, workspace=workspace, single=True) as conn,
                statements_at_once(conn),  # SQLite: a read waits for no writer
            ):
                result = await work(conn)
                if conn.in_transaction():
                    # SQLite: a statement `direct` could not run alone began a transaction.
                    await conn.commit()
                return result

        return await self._retried(once, workspace=workspace)

    async def locked(self, workspace: str, work: Work[T]) -> T:
        """Run `work` in a write transaction holding `workspace`'s lock."""

        async def run(conn: AsyncConnection) -> T:
            await self._lock(conn, workspace)
            return await work(conn)

        return await self._transact(run, write=True, workspace=workspace)

    async def publish(
        self,
        workspace: str,
        opening: direct.Query,
        work: Callable[[AsyncConnection, direct.Rows], Awaitable[Outcome[T]]],
        *,
        hit: Hit = _no_hit,
    ) -> T:
        """Run a package write's locked transaction; a failed commit is `CommitOutcomeUnknown`.

        `opening` is the transaction's first read: it runs as soon as the lock is granted, in
        the lock's round trip (`locks.lock_workspace_then`), and `work` gets its rows.
        `hit` is called at `publish.begin`, `publish.locked` (the lock held and `opening`
        read), `publish.before_commit` and `publish.committed` (failpoints for the crash and
        race tests).
        """

        async def once() -> T:
            async with (
                self._connection(write=True, workspace=workspace) as conn,
                self._publishing(conn) as (transaction, on_driver),
            ):
                try:
                    # SQLite: the database's write lock is held from here on, so no
                    # statement waits for another connection; `COMMIT` stays off the loop.
                    async with statements_inline(conn):
                        await hit("publish.begin")
                        opened = await self._lock(
                            conn, workspace, then=opening, transaction=on_driver
                        )
                        await hit("publish.locked")
                        if opened is None:
                            # SQLite: `BEGIN IMMEDIATE` took the lock; the read follows it.
                            opened = await direct.run(conn, opening.statement, opening.params)
                        outcome = await work(conn, opened)
                        await hit("publish.before_commit")
                    check_cancelled()
                except BaseException:
                    await transaction.rollback()
                    raise
                if not outcome.commit:
                    await transaction.rollback()
                    return outcome.value
                try:
                    await transaction.commit()
                    await hit("publish.committed")
                except Exception as exc:
                    raise CommitOutcomeUnknown(str(exc)) from exc
            return outcome.value

        return await self._retried(once, workspace=workspace)

    async def _transact(
        self,
        work: Work[T],
        *,
        write: bool,
        workspace: str,
        inline: bool = False,
        durable: bool = True,
    ) -> T:
        """`work` in a transaction; `inline`: its statements on the loop's thread (SQLite).

        `durable=False` (SQLite): the commit need not fsync (`single`); the connection goes
        back to the pool durable again, whatever happened.
        """

        async def once() -> T:
            async with self._connection(write=write, workspace=workspace) as conn:
                try:
                    transaction = await self._begin(conn, write=write, durable=durable)
                    try:
                        async with statements_inline(conn) if inline else nullcontext():
                            result = await work(conn)
                    except BaseException:
                        await transaction.rollback()
                        raise
                    await transaction.commit()
                    return result
                finally:
                    if not durable:
                        _durable_again(conn)

        return await self._retried(once, workspace=workspace)

    @asynccontextmanager
    async def turn(self, name: str) -> AsyncIterator[bool]:
        """Hold `name`'s turn among the processes sharing this database, if one can be had.

        PostgreSQL: a session-level advisory lock (`locks.TAKE_TURN`) on a connection of its own,
        in autocommit so that no transaction stays open while it is held, waited for up to
        `lock_timeout`. Yields whether the turn is held; False, holding nothing, on SQLite,
        when a quarter of this process's connections hold turns already or none is free
        at once, and when the lock is not granted in time or the database fails: the caller
        goes on without a turn. The turn is given back when the block ends; if that fails,
        or the wait for it is cancelled, the connection is closed, which ends the lock with
        its session.
        """
        if dialect_name(self.engine) != "postgresql" or self._turns.locked() or self._gate.locked():
            yield False
            return
        async with self._turns, self._gate:
            try:
                raw = await self.engine.connect()
            except db_errors.DATABASE_ERRORS:
                yield False
                return
            try:
                conn = await raw.execution_options(
                    isolation_level="AUTOCOMMIT", **{direct.SINGLE: True}
                )
                params = {"key": lock_key("turn", name)}
                held = await self._take_turn(raw, conn, params)
                try:
                    yield held
                finally:
                    if held:
                        await self._give_turn(raw, conn, params)
            finally:
                await raw.close()

    async def _take_turn(
        self, raw: AsyncConnection, conn: AsyncConnection, params: dict[str, int]
    ) -> bool:
        try:
            await guarded(lambda: direct.run(conn, TAKE_TURN, params))
        except db_errors.DATABASE_ERRORS as exc:
            if not db_errors.is_lock_timeout(exc):
                await raw.invalidate()
            return False
        except BaseException:
            await raw.invalidate()  # cancelled while waiting: the lock may have been granted
            raise
        return True

    async def _give_turn(
        self, raw: AsyncConnection, conn: AsyncConnection, params: dict[str, int]
    ) -> None:
        try:
            await guarded(lambda: direct.run(conn, GIVE_TURN, params))
        except BaseException as exc:
            await raw.invalidate()
            if not isinstance(exc, db_errors.DATABASE_ERRORS):
                raise

    @asynccontextmanager
    async def _connection(
        self, *, write: bool, workspace: str, single: bool = False
    ) -> AsyncIterator[AsyncConnection]:
        """A connection through the gate, waiting at most the write's time left.

        `single`: a connection for one statement as its own transaction (`single`).
        """
        budget = write_budget.current()
        wait = self.connect_timeout if budget is None else min(self.connect_timeout, budget.left())
        if budget is not None and write and budget.lock_left <= 0:
            raise WorkspaceBusy(workspace, budget.lock_timeout)
        try:
            if self._gate.locked():
                async with asyncio.timeout(max(wait, 0.0)):
                    await self._gate.acquire()
            else:
                await self._gate.acquire()
        except TimeoutError:
            raise StorageUnavailable(
                "database",
                f"no connection to {self.database} within {wait:.3g}s "
                f"({self.connections} in use); retry later",
            ) from None
        try:
            async with self.engine.connect() as raw:
                if single and dialect_name(raw) == "postgresql":
                    # The driver in autocommit (`driver_transaction.single_statements`).
                    async with driver_transaction.single_statements(raw):
                        yield raw
                    return
                conn = raw
                if single:
                    conn = await raw.execution_options(**{direct.SINGLE: True})
                elif not write and dialect_name(raw) == "postgresql":
                    conn = await raw.execution_options(
                        isolation_level="REPEATABLE READ", postgresql_readonly=True
                    )
                yield conn
        finally:
            self._gate.release()

    async def _begin(
        self, conn: AsyncConnection, *, write: bool, durable: bool = True
    ) -> AsyncTransaction:
        """Begin; on SQLite a write waits for the database's lock within the write's budget.

        On SQLite every write transaction first states whether its commit fsyncs
        (`durable`; `sqlite_driver.Connection.durability`).
        """
        if not write:
            return await conn.begin()
        driver = sqlite_driver_of(conn)
        if driver is not None:
            driver.durability(durable=durable)
        conn = await write_connection(conn)
        budget = write_budget.current()
        if budget is None or dialect_name(conn) != "sqlite":
            return await conn.begin()
        started = time.monotonic()
        shorten = budget.lock_left < self.sqlite_busy_timeout - _LOCK_SLACK
        if shorten:
            busy_ms = max(1, int(budget.lock_left * 1000))
            await conn.run_sync(_set_busy_timeout, busy_ms)
        try:
            return await conn.begin()
        finally:
            budget.charge_lock(time.monotonic() - started)
            if shorten:
                default_ms = int(self.sqlite_busy_timeout * 1000)
                await conn.run_sync(_set_busy_timeout, default_ms)

    @asynccontextmanager
    async def _publishing(
        self, conn: AsyncConnection
    ) -> AsyncIterator[tuple[_Transaction, driver_transaction.DriverTransaction | None]]:
        """A publish's transaction, and the driver's own if it is one.

        On PostgreSQL it runs on the driver, its `BEGIN` sent with the lock
        (`driver_transaction.DriverTransaction`); on SQLite it is SQLAlchemy's (`BEGIN IMMEDIATE`).
        Yields the transaction to commit or roll back, and the driver's, if it is one.
        """
        on_driver = await driver_transaction.DriverTransaction.start(conn)
        if on_driver is None:
            yield await self._begin(conn, write=True), None
            return
        try:
            yield on_driver, on_driver
        finally:
            await on_driver.end()

    @overload
    async def _lock(self, conn: AsyncConnection, workspace: str) -> None: ...

    @overload
    async def _lock(
        self,
        conn: AsyncConnection,
        workspace: str,
        *,
        then: direct.Query,
        transaction: driver_transaction.DriverTransaction | None = None,
    ) -> direct.Rows | None: ...

    async def _lock(
        self,
        conn: AsyncConnection,
        workspace: str,
        *,
        then: direct.Query | None = None,
        transaction: driver_transaction.DriverTransaction | None = None,
    ) -> direct.Rows | None:
        """Take the workspace lock, waiting at most what the write has left to wait.

        `then` (PostgreSQL): the statement to run once the lock is granted, in the same
        round trip, with the rest of the transaction planned with index scans
        (`lock_workspace_then`); its rows are returned. None: the lock is the transaction's
        own (SQLite), the caller runs `then`. `transaction`: the `DriverTransaction` that
        the lock's round trip begins.
        """
        budget = write_budget.current()
        postgres = dialect_name(conn) == "postgresql"
        shortened: int | None = None
        if budget is not None and postgres:
            if budget.lock_left <= 0:
                raise WorkspaceBusy(workspace, budget.lock_timeout)
            if budget.lock_left < self.lock_timeout - _LOCK_SLACK:
                shortened = max(1, int(budget.lock_left * 1000))
                if then is None:
                    await conn.exec_driver_sql(f"SET LOCAL lock_timeout = {shortened}")
        started = time.monotonic()
        try:
            if then is None:
                await lock_workspace(conn, workspace)
                return None
            return await lock_workspace_then(
                conn, workspace, then, lock_timeout_ms=shortened, transaction=transaction
            )
        finally:
            if budget is not None and postgres:
                budget.charge_lock(time.monotonic() - started)

    async def _retried(self, once: Callable[[], Awaitable[T]], *, workspace: str) -> T:
        try:
            # The first attempt runs without the retry machinery, which costs more client
            # CPU than a short transaction; only a transient failure enters it.
            try:
                return await guarded(once)
            except db_errors.DATABASE_ERRORS as exc:
                if self.retry_attempts < 2 or not db_errors.is_transient(exc):  # noqa: PLR2004
                    raise
            async for attempt in self._retrying(self.retry_attempts - 1):
                with attempt:
                    return await guarded(once)
        except db_errors.DATABASE_ERRORS as exc:
            raise db_errors.translate(
                exc, workspace=workspace, lock_timeout=self.lock_timeout, database=self.database
            ) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover
