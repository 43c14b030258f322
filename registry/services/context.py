"""What every service needs, assembled once by `Registry` and passed in explicitly."""

from __future__ import annotations

import asyncio
import functools
import getpass
import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Final, ParamSpec, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from blobstore import BlobStore, BlobStoreUnavailable
from registry.db.budget import Budget, write_budget
from registry.db.cancel import check_cancelled
from registry.db.unit import UnitOfWork, Work
from registry.domain.clock import Clock, SystemClock
from registry.domain.limits import Limits
from registry.domain.scanner import DefaultScanner, Scanner
from registry.errors import StorageUnavailable
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.signing import Signing
from registry.services.turns import Turns
from registry.settings import Settings

T = TypeVar("T")
P = ParamSpec("P")


def local_principal() -> str:
    """The principal of a process acting for itself: its operating system's user."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's, say)
        user = f"uid-{os.getuid()}"
    return f"os:{user}"


class Cleanups:
    """Cleanup work started by failed or cancelled operations, kept until it finishes.

    A cleanup (releasing a write's claims, recording a failed GC run) runs in a task of its
    own so the caller's cancellation cannot stop it halfway. The event loop keeps only a
    weak reference to a task, so this set holds them, and `Registry.close()` waits for them
    (`drain`) before it disposes of the engine they use.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, awaitable: Awaitable[T]) -> asyncio.Task[T]:
        """Run `awaitable` to completion in a task of its own, tracked until it ends."""
        task: asyncio.Task[T] = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self, within: float) -> int:
        """Wait up to `within` seconds for every cleanup; return how many are still running."""
        pending = set(self._tasks)
        if pending:
            _, still = await asyncio.wait(pending, timeout=within)
            return len(still)
        return 0


@dataclass(frozen=True)
class Context:
    """The injected dependencies of the services."""

    engine: AsyncEngine
    blobs: BlobStore
    settings: Settings = field(default_factory=Settings)
    scanner: Scanner = field(default_factory=DefaultScanner)
    clock: Clock = field(default_factory=SystemClock)
    failpoints: Failpoints = NO_FAILPOINTS
    cleanups: Cleanups = field(default_factory=Cleanups, compare=False)
    turns: Turns = field(default_factory=Turns, compare=False)
    # Who is acting: `token:<id>` for a caller over HTTP, `os:<user>` for the process's
    # own user (the CLI, the library). Recorded with every version it writes, and signed.
    principal: str = field(default_factory=local_principal)
    signing: Signing = field(default_factory=Signing, compare=False)

    def acting_as(self, principal: str) -> Context:
        """This context for another principal, sharing everything else.

        The unit of work is shared too: its connection gate is the registry's, not a
        request's.
        """
        other = replace(self, principal=principal)
        other.__dict__["uow"] = self.uow  # the cached property, set on the copy as it is
        return other

    @property
    def limits(self) -> Limits:
        return self.settings.limits()

    async def hit(self, name: str) -> None:
        """Reach a named failpoint (a no-op outside tests); a safe point for cancellation."""
        check_cancelled()
        await self.failpoints.hit(name)
        check_cancelled()

    @functools.cached_property
    def uow(self) -> UnitOfWork:
        """The unit of work every transaction of the services goes through."""
        settings = self.settings
        return UnitOfWork(
            self.engine,
            retry_attempts=settings.retry_attempts,
            lock_timeout=settings.lock_timeout,
            sqlite_busy_timeout=settings.sqlite_busy_timeout,
            connections=settings.db_pool_size + settings.db_max_overflow,
            connect_timeout=settings.db_pool_timeout,
        )

    async def read(self, work: Work[T]) -> T:
        """Run `work` in a read transaction (`UnitOfWork.read`)."""
        return await self.uow.read(work)

    async def write(self, work: Work[T], *, workspace: str = "") -> T:
        """Run idempotent `work` in a write transaction (`UnitOfWork.write`)."""
        return await self.uow.write(work, workspace=workspace)

    async def read_one(self, work: Work[T]) -> T:
        """Run `work`, one read statement, as its own transaction (`UnitOfWork.read_one`)."""
        return await self.uow.read_one(work)

    async def locked(self, workspace: str, work: Work[T]) -> T:
        """Run `work` in a write transaction holding the workspace lock (`UnitOfWork.locked`)."""
        return await self.uow.locked(workspace, work)

    def deadline(self) -> AbstractContextManager[Budget]:
        """The deadlines of one write (`write_timeout` overall, `lock_timeout` of lock waits).

        Every transaction the write opens draws on them; a write nested in another (an
        edit's publish) shares its caller's.
        """
        return write_budget(
            total=self.settings.write_timeout, lock_timeout=self.settings.lock_timeout
        )

    async def shielded(self, awaitable: Awaitable[T]) -> T:
        """Run cleanup to completion even if the caller is cancelled meanwhile (tracked)."""
        return await asyncio.shield(self.cleanups.start(awaitable))


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


def blob_store_failed(exc: BaseException) -> StorageUnavailable:
    """A blob store failure as the services report it: `StorageUnavailable("blob store", ...)`.

    `BlobStoreUnavailable`'s message opens with "blob store unavailable:", as
    `StorageUnavailable`'s does: its bare `detail` is taken, so that the message says it once.
    """
    detail = exc.detail if isinstance(exc, BlobStoreUnavailable) else str(exc)
    return StorageUnavailable("blob store", detail)
