"""What every service needs, assembled once by `Registry` and passed in explicitly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from blobstore import BlobStore
from registry.db import errors as db_errors
from registry.db.cancel import check_cancelled, guarded
from registry.db.engine import write_connection
from registry.domain.clock import Clock, SystemClock
from registry.domain.limits import Limits
from registry.domain.scanner import DefaultScanner, Scanner
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """The injected dependencies of the services."""

    engine: AsyncEngine
    blobs: BlobStore
    settings: Settings = field(default_factory=Settings)
    scanner: Scanner = field(default_factory=DefaultScanner)
    clock: Clock = field(default_factory=SystemClock)
    failpoints: Failpoints = NO_FAILPOINTS

    @property
    def limits(self) -> Limits:
        return self.settings.limits()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def hit(self, name: str) -> None:
        """Reach a named failpoint (a no-op outside tests); a safe point for cancellation."""
        check_cancelled()
        await self.failpoints.hit(name)
        check_cancelled()

    def retrying(self) -> AsyncRetrying:
        """Bounded retries for database steps that are idempotent as a whole."""
        return AsyncRetrying(
            retry=retry_if_exception(db_errors.is_transient),
            stop=stop_after_attempt(self.settings.retry_attempts),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )

    async def read(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """Run `work` in a read transaction, retried on transient errors, errors translated."""
        return await self._transact(work, write=False, workspace="")

    async def write(
        self, work: Callable[[AsyncConnection], Awaitable[T]], *, workspace: str = ""
    ) -> T:
        """Run `work` in its own write transaction, retried as a whole on transient errors.

        Only for work that is idempotent as a whole (claims, releases, bookkeeping): the
        publish transaction has its own loop because its commit outcome may be unknown.
        """
        return await self._transact(work, write=True, workspace=workspace)

    async def _transact(
        self, work: Callable[[AsyncConnection], Awaitable[T]], *, write: bool, workspace: str
    ) -> T:
        async def once() -> T:
            async with self.engine.connect() as raw:
                conn = await write_connection(raw) if write else raw
                async with conn.begin():
                    return await work(conn)

        try:
            async for attempt in self.retrying():
                with attempt:
                    return await guarded(once)
        except db_errors.DATABASE_ERRORS as exc:
            raise db_errors.translate(
                exc, workspace=workspace, lock_timeout=self.settings.lock_timeout
            ) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover


async def shielded(awaitable: Awaitable[T]) -> T:
    """Run cleanup to completion even if the caller is cancelled meanwhile."""
    return await asyncio.shield(awaitable)
