"""A write's deadlines: how long it may still run, and how long it may still wait for locks.

One package write makes several transactions (the claim, the publish, and after a failure
the release). Each may wait for a lock: the workspace's advisory lock on PostgreSQL, the
database's write lock on SQLite. Without a shared budget every transaction (and every retry
of it) would wait the whole `lock_timeout` again; with one, the write as a whole waits at
most `lock_timeout` for locks and then fails with `WorkspaceBusy` (docs/write-path.md,
"Deadlines"). The budget travels in a context variable, so every transaction the write opens,
in whatever task, draws on the same one; transactions outside a write have no budget and wait
`lock_timeout` each.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Budget:
    """What one write may still spend. `ends_at` is on the monotonic clock."""

    ends_at: float
    lock_left: float
    lock_timeout: float

    def left(self) -> float:
        """Seconds until the write's overall deadline."""
        return self.ends_at - time.monotonic()

    def charge_lock(self, waited: float) -> None:
        """Count `waited` seconds of lock waiting against the write."""
        self.lock_left = max(0.0, self.lock_left - waited)


_CURRENT: ContextVar[Budget | None] = ContextVar("skillreg_write_budget", default=None)


def current() -> Budget | None:
    """The running write's budget, if a write is running in this context."""
    return _CURRENT.get()


@contextmanager
def write_budget(*, total: float, lock_timeout: float) -> Iterator[Budget]:
    """Give the write running in this context its deadlines (a nested write shares them)."""
    existing = _CURRENT.get()
    if existing is not None:
        yield existing
        return
    budget = Budget(time.monotonic() + total, lock_left=lock_timeout, lock_timeout=lock_timeout)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


@contextmanager
def outside_write() -> Iterator[None]:
    """Run cleanup after a write failed with its own, fresh lock wait (not the write's rest)."""
    token = _CURRENT.set(None)
    try:
        yield
    finally:
        _CURRENT.reset(token)
