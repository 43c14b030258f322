"""What every service needs, assembled once by `Registry` and passed in explicitly."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, ParamSpec, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore
from registry.db.cancel import check_cancelled
from registry.db.unit import UnitOfWork, Work
from registry.domain.clock import Clock, SystemClock
from registry.domain.limits import Limits
from registry.domain.scanner import DefaultScanner, Scanner
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.settings import Settings

T = TypeVar("T")
P = ParamSpec("P")


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

    @functools.cached_property
    def uow(self) -> UnitOfWork:
        """The unit of work every transaction of the services goes through."""
        return UnitOfWork(
            self.engine,
            retry_attempts=self.settings.retry_attempts,
            lock_timeout=self.settings.lock_timeout,
        )

    async def read(self, work: Work[T]) -> T:
        """Run `work` in a read transaction (`UnitOfWork.read`)."""
        return await self.uow.read(work)

    async def write(self, work: Work[T], *, workspace: str = "") -> T:
        """Run idempotent `work` in a write transaction (`UnitOfWork.write`)."""
        return await self.uow.write(work, workspace=workspace)

    async def locked(self, workspace: str, work: Work[T]) -> T:
        """Run `work` in a write transaction holding the workspace lock (`UnitOfWork.locked`)."""
        return await self.uow.locked(workspace, work)


async def shielded(awaitable: Awaitable[T]) -> T:
    """Run cleanup to completion even if the caller is cancelled meanwhile."""
    return await asyncio.shield(awaitable)


# Above this many bytes, CPU-bound work on file bytes (hashing, archive reading) runs in a
# worker thread so a large package does not stall the event loop. BLAKE3 and zlib release
# the GIL while they work, so the loop keeps serving other requests meanwhile. A thread
# helps only work that lets go of the GIL: one long call into C that holds it (a regex
# search over a whole file) stalls the loop from a worker thread just the same, so such
# work must come in short calls (the content check does: registry/domain/windowed.py).
OFFLOAD_BYTES: Final = 256 * 1024


async def offloaded(size: int, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`func(*args, **kwargs)`, in a worker thread if it works on more than `OFFLOAD_BYTES`."""
    return await offloaded_above(OFFLOAD_BYTES, size, func, *args, **kwargs)


async def offloaded_above(
    limit: int, size: int, func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
) -> T:
    """`func(*args, **kwargs)`, in a worker thread if it works on more than `limit` bytes."""
    if size > limit:
        return await asyncio.to_thread(func, *args, **kwargs)
    return func(*args, **kwargs)
