"""The reconciler's blocking work in threads: futures that outlive a cancelled caller.

Opening and locking a target, and waiting for another reconciler's lock, block; the
reconciler (registry/services/materialize/reconcile.py) runs them here so that a cancelled
run never leaves a target locked by a thread nobody waits for, nor hangs the interpreter's
exit on a wait that may never end.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from registry.domain.model import Scope
from registry.errors import TargetBusy
from registry.failpoints import Failpoints
from registry.services.materialize.target import Target, wait_until_free

T = TypeVar("T")


def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> asyncio.Future[T]:
    """Run blocking work in a worker thread, as a future that outlives a cancelled caller."""
    return in_pool(None, fn, *args, **kwargs)


def in_pool(
    pool: Executor | None, fn: Callable[..., T], /, *args: Any, **kwargs: Any
) -> asyncio.Future[T]:
    """`in_thread` in the threads of `pool` (None: the event loop's default executor).

    Like `asyncio.to_thread`, the work runs in a copy of the caller's context; unlike it,
    no task wraps the executor's future (one object less per hop).
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    future = loop.run_in_executor(pool, call)
    # Retrieve the outcome even if nobody awaits it any more (the caller was cancelled).
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


def thread_pool(workers: int) -> ThreadPoolExecutor:
    """The threads of one run's filesystem work (`reconcile._Run.blocking`).

    Its own, not the loop's default executor: that one has `cpu_count() + 4` threads,
    shared with the blob store's reads, so on a small machine a run's fsync waits would
    fill it and hold up the reads that feed the next skills.
    """
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skillreg-target")


async def open_target(
    failpoints: Failpoints,
    path: Path | str,
    scope: Scope,
    *,
    mode: str | None,
    wait: bool,
    bind: bool,
) -> Target:
    """Open and lock the target; with `wait`, wait for another reconciler to finish first."""
    while True:
        opening = in_thread(Target.open, path, scope, mode=mode, bind=bind)
        try:
            return await asyncio.shield(opening)
        except TargetBusy:
            if not wait:
                raise
        except asyncio.CancelledError:
            # The open goes on in its thread: release the target as soon as it is had,
            # rather than hold its lock for the rest of the process's life.
            opening.add_done_callback(_close_opened)
            raise
        await failpoints.hit("reconcile.lock_wait")
        await in_daemon_thread(wait_until_free, path)


def in_daemon_thread(fn: Callable[..., None], /, *args: Any) -> asyncio.Future[None]:
    """Run blocking work that may never end (waiting for a lock) without holding up exit.

    The default executor's threads are joined when the interpreter exits; a reconciler
    interrupted while it waits for another one's lock must not hang on that join.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if future.done():
            return  # the waiter was cancelled meanwhile
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits
            loop.call_soon_threadsafe(settle, error)

    threading.Thread(target=run, name="skillreg-target-wait", daemon=True).start()
    return future


def _close_opened(opening: asyncio.Future[Target]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()
