"""The unit of work: every transaction the registry opens, opened one way.

Five kinds, one method each, every one a SQLAlchemy `AsyncConnection` transaction:
- `read(work)`: a read transaction, in one snapshot (PostgreSQL: `REPEATABLE READ READ
  ONLY`; SQLite's read transactions are snapshots already), so a read that spans statements
  never sees half of a concurrent change (a version whose manifest rows were pruned between
  two of its statements).
- `read_one(work)`: a read of one statement, run as its own transaction: one statement is
  atomic and sees one snapshot by itself, so it needs no `BEGIN` or `COMMIT` (PostgreSQL:
  `isolation_level="AUTOCOMMIT"`, two round trips fewer; SQLite: no `BEGIN`). The read of a
  package write.
- `write(work)`: a write transaction (SQLite: `BEGIN IMMEDIATE`), for work that is
  idempotent as a whole (claims, releases, bookkeeping).
- `locked(workspace, work)`: a write transaction that first takes the workspace's lock, for
  the owner's actions and every other change that must not interleave with a publish.
- `publish(workspace, work)`: the locked transaction of a package write. Its commit is not
  idempotent: if the commit itself fails, the outcome is unknown and `CommitOutcomeUnknown`
  is raised for the caller to settle (docs/write-path.md); `work` may also ask for a rollback
  (nothing to change) by returning `Outcome(value, commit=False)`.

And one lock that is not a transaction: `turn(name)`, a turn among the processes sharing a
PostgreSQL database, held across several transactions (`write_with_retry`'s attempts).

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
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction

from registry.db import budget as write_budget
from registry.db import errors as db_errors
from registry.db.cancel import check_cancelled, guarded
from registry.db.engine import LOCK_WAIT_MS, NO_BEGIN, WRITE_TX, dialect_name
from registry.db.locks import GIVE_TURN, TAKE_TURN, lock_key, lock_workspace
from registry.errors import StorageUnavailable, WorkspaceBusy

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

T = TypeVar("T")

Work = Callable[[AsyncConnection], Awaitable[T]]
Hit = Callable[[str], Awaitable[None]]

# A lock budget this close to the configured wait is not worth a statement to shorten it.
_LOCK_SLACK: Final = 0.05


async def _no_hit(_name: str) -> None:
    return None


async def _commit(conn: AsyncConnection, transaction: AsyncTransaction) -> None:
    """Commit; if that fails, drop the connection, whose state is unknown now.

    A failed `COMMIT` can leave the driver's transaction open (SQLite answers busy and
    keeps it) while SQLAlchemy's has ended, and a connection given back so would refuse
    its next `BEGIN`: the pool gets rid of it instead (`invalidate`).
    """
    try:
        await transaction.commit()
    except BaseException:
        if not conn.invalidated:
            await conn.invalidate()
        raise


class CommitOutcomeUnknown(Exception):
    """The commit was sent and failed: the transaction may or may not have committed."""


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a `publish` transaction's work returns: its value, and whether to commit."""

    value: T
    commit: bool = True


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
        # Imported here: only a transaction that failed transiently retries (`_transact`).
        from tenacity import (  # noqa: PLC0415
            AsyncRetrying,
            retry_if_exception,
            stop_after_attempt,
            wait_random_exponential,
        )

        return AsyncRetrying(
            retry=retry_if_exception(db_errors.is_transient),
            stop=stop_after_attempt(attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )

    async def read(self, work: Work[T]) -> T:
        """Run `work` in a read transaction, in one snapshot."""
        return await self._transact(work, write=False, workspace="")

    async def read_one(self, work: Work[T]) -> T:
        """Run `work`, which sends one read statement, as that statement's own transaction.

        `work` must send exactly one statement: several would each see a snapshot of their
        own. On PostgreSQL the connection is in autocommit (no `BEGIN`, no `COMMIT`); on
        SQLite no `BEGIN` is sent, and the driver runs the statement alone.
        """

        async def once() -> T:
            async with self._connection(write=False, workspace="", one=True) as conn:
                return await work(conn)

        return await self._retried(once, workspace="")

    async def write(self, work: Work[T], *, workspace: str = "") -> T:
        """Run `work` in a write transaction; `work` must be idempotent as a whole."""
        return await self._transact(work, write=True, workspace=workspace)

    async def locked(self, workspace: str, work: Work[T]) -> T:
        """Run `work` in a write transaction holding `workspace`'s lock."""

        async def run(conn: AsyncConnection) -> T:
            await self._lock(conn, workspace)
            return await work(conn)

        return await self._transact(run, write=True, workspace=workspace)

    async def publish(
        self,
        workspace: str,
        work: Callable[[AsyncConnection], Awaitable[Outcome[T]]],
        *,
        hit: Hit = _no_hit,
    ) -> T:
        """Run a package write's locked transaction; a failed commit is `CommitOutcomeUnknown`.

        The workspace lock is taken with the rest of the transaction planned with index
        scans (`locks.lock_workspace(indexed=True)`). `hit` is called at `publish.begin`,
        `publish.locked` (the lock held), `publish.before_commit` and `publish.committed`
        (failpoints for the crash and race tests).
        """

        async def once() -> T:
            async with self._connection(write=True, workspace=workspace) as conn:
                transaction = await self._begin(conn, write=True)
                try:
                    await hit("publish.begin")
                    await self._lock(conn, workspace, indexed=True)
                    await hit("publish.locked")
                    outcome = await work(conn)
                    await hit("publish.before_commit")
                    check_cancelled()
                except BaseException:
                    await transaction.rollback()
                    raise
                if not outcome.commit:
                    await transaction.rollback()
                    return outcome.value
                try:
                    await _commit(conn, transaction)
                    await hit("publish.committed")
                except Exception as exc:
                    raise CommitOutcomeUnknown(str(exc)) from exc
            return outcome.value

        return await self._retried(once, workspace=workspace)

    async def _transact(self, work: Work[T], *, write: bool, workspace: str) -> T:
        """`work` in a transaction: committed if it returns, rolled back if it raises."""

        async def once() -> T:
            async with self._connection(write=write, workspace=workspace) as conn:
                transaction = await self._begin(conn, write=write)
                try:
                    result = await work(conn)
                except BaseException:
                    await transaction.rollback()
                    raise
                await _commit(conn, transaction)
                return result

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
                conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
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
            await guarded(lambda: conn.execute(TAKE_TURN, params))
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
            await guarded(lambda: conn.execute(GIVE_TURN, params))
        except BaseException as exc:
            await raw.invalidate()
            if not isinstance(exc, db_errors.DATABASE_ERRORS):
                raise

    @asynccontextmanager
    async def _connection(
        self, *, write: bool, workspace: str, one: bool = False
    ) -> AsyncIterator[AsyncConnection]:
        """A connection through the gate, waiting at most the write's time left.

        `one`: for one read statement as its own transaction (`read_one`).
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
                options = self._options(raw, write=write, one=one)
                yield await raw.execution_options(**options) if options else raw
        finally:
            self._gate.release()

    @staticmethod
    def _options(conn: AsyncConnection, *, write: bool, one: bool) -> dict[str, Any]:
        """The execution options of a transaction of this kind on `conn`'s database."""
        postgres = dialect_name(conn) == "postgresql"
        if one:
            return {"isolation_level": "AUTOCOMMIT"} if postgres else {NO_BEGIN: True}
        if write:
            # SQLite's begin hook reads it (`BEGIN IMMEDIATE`); elsewhere it marks the
            # transaction as a write for whoever listens (PostgreSQL ignores it).
            return {WRITE_TX: True}
        if postgres:
            return {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        return {}

    async def _begin(self, conn: AsyncConnection, *, write: bool) -> AsyncTransaction:
        """Begin; on SQLite a write waits for the database's lock within the write's budget."""
        budget = write_budget.current()
        if not write or budget is None or dialect_name(conn) != "sqlite":
            return await conn.begin()
        started = time.monotonic()
        if budget.lock_left < self.sqlite_busy_timeout - _LOCK_SLACK:
            wait_ms = max(1, int(budget.lock_left * 1000))
            conn = await conn.execution_options(**{LOCK_WAIT_MS: wait_ms})
        try:
            return await conn.begin()
        finally:
            budget.charge_lock(time.monotonic() - started)

    async def _lock(self, conn: AsyncConnection, workspace: str, *, indexed: bool = False) -> None:
        """Take the workspace lock, waiting at most what the write has left to wait."""
        budget = write_budget.current()
        if budget is None or dialect_name(conn) != "postgresql":
            await lock_workspace(conn, workspace, indexed=indexed)
            return
        if budget.lock_left <= 0:
            raise WorkspaceBusy(workspace, budget.lock_timeout)
        shortened = None
        if budget.lock_left < self.lock_timeout - _LOCK_SLACK:
            shortened = max(1, int(budget.lock_left * 1000))
        started = time.monotonic()
        try:
            await lock_workspace(conn, workspace, indexed=indexed, lock_timeout_ms=shortened)
        finally:
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
                exc, workspace=workspace, lock_timeout=self._lock_wait(), database=self.database
            ) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _lock_wait(self) -> float:
        """What a transaction that was refused a lock waited for it, for `WorkspaceBusy`.

        A write's transactions share its budget (`lock_timeout` in all); outside a write a
        transaction waits `lock_timeout` for PostgreSQL's workspace lock, and SQLite's busy
        timeout for the database's write lock.
        """
        budget = write_budget.current()
        if budget is not None:
            return budget.lock_timeout
        if dialect_name(self.engine) == "postgresql":
            return self.lock_timeout
        return self.sqlite_busy_timeout
