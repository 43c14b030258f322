"""The unit of work: every transaction the registry opens, opened one way.

Four kinds, one method each:
- `read(work)`: a read transaction.
- `write(work)`: a write transaction (SQLite: `BEGIN IMMEDIATE`), for work that is
  idempotent as a whole (claims, releases, bookkeeping).
- `locked(workspace, work)`: a write transaction that first takes the workspace's lock, for
  the owner's actions and every other change that must not interleave with a publish.
- `publish(workspace, work)`: the locked transaction of a package write. Its commit is not
  idempotent: if the commit itself fails, the outcome is unknown and `CommitOutcomeUnknown`
  is raised for the caller to settle (docs/write-path.md); `work` may also ask for a rollback
  (nothing to change) by returning `Outcome(value, commit=False)`.

Each runs in its own task (`cancel.guarded`), so cancelling the caller never cuts a
statement in half, and is retried as a whole on transient errors (before its commit, for
`publish`). Whatever still fails is translated into the registry's own exceptions where it
leaves this module, so services never see a driver's error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from registry.db import errors as db_errors
from registry.db.cancel import check_cancelled, guarded
from registry.db.engine import write_connection
from registry.db.locks import lock_workspace

T = TypeVar("T")

Work = Callable[[AsyncConnection], Awaitable[T]]
Hit = Callable[[str], Awaitable[None]]


async def _no_hit(_name: str) -> None:
    return None


class CommitOutcomeUnknown(Exception):
    """The commit was sent and failed: the transaction may or may not have committed."""


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a `publish` transaction's work returns: its value, and whether to commit."""

    value: T
    commit: bool = True


@dataclass(frozen=True)
class UnitOfWork:
    """Opens the registry's transactions on `engine` (see the module docstring)."""

    engine: AsyncEngine
    retry_attempts: int = 4
    lock_timeout: float = 5.0

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            retry=retry_if_exception(db_errors.is_transient),
            stop=stop_after_attempt(self.retry_attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )

    async def read(self, work: Work[T]) -> T:
        """Run `work` in a read transaction."""
        return await self._transact(work, write=False, workspace="")

    async def write(self, work: Work[T], *, workspace: str = "") -> T:
        """Run `work` in a write transaction; `work` must be idempotent as a whole."""
        return await self._transact(work, write=True, workspace=workspace)

    async def locked(self, workspace: str, work: Work[T]) -> T:
        """Run `work` in a write transaction holding `workspace`'s lock."""

        async def run(conn: AsyncConnection) -> T:
            await lock_workspace(conn, workspace)
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

        `hit` is called at `publish.begin`, `publish.locked`, `publish.before_commit` and
        `publish.committed` (failpoints for the crash and race tests).
        """

        async def once() -> T:
            async with self.engine.connect() as raw:
                conn = await write_connection(raw)
                transaction = await conn.begin()
                try:
                    await hit("publish.begin")
                    await lock_workspace(conn, workspace)
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
                    await transaction.commit()
                    await hit("publish.committed")
                except Exception as exc:
                    raise CommitOutcomeUnknown(str(exc)) from exc
            return outcome.value

        return await self._retried(once, workspace=workspace)

    async def _transact(self, work: Work[T], *, write: bool, workspace: str) -> T:
        async def once() -> T:
            async with self.engine.connect() as raw:
                conn = await write_connection(raw) if write else raw
                async with conn.begin():
                    return await work(conn)

        return await self._retried(once, workspace=workspace)

    async def _retried(self, once: Callable[[], Awaitable[T]], *, workspace: str) -> T:
        try:
            async for attempt in self._retrying():
                with attempt:
                    return await guarded(once)
        except db_errors.DATABASE_ERRORS as exc:
            raise db_errors.translate(
                exc, workspace=workspace, lock_timeout=self.lock_timeout
            ) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover
