"""Turns: the compare-and-swap retries of one process write each skill one at a time.

`write_with_retry` (registry/services/write/retry.py) holds its skill's turn for all its
attempts. Writers in one process then never conflict with each other, and they go in the
order they asked; only writers of other processes make an attempt fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

_Key = tuple[str, str, str]
_HELD: ContextVar[frozenset[_Key]] = ContextVar("skillreg_retry_turns", default=frozenset())


class Turns:
    """One turn at a time per key (a skill: workspace, agent, slug).

    A turn is an `asyncio.Lock` (it wakes its waiters in the order they came), made when a
    skill's first writer asks and dropped when its last one is done. A writer that already
    holds a skill's turn (its `change` writes the same skill again) does not wait for it.
    """

    def __init__(self) -> None:
        self._turns: dict[_Key, tuple[asyncio.Lock, list[int]]] = {}

    def __len__(self) -> int:
        return len(self._turns)

    def holds(self, key: _Key) -> bool:
        """Whether the current task holds `key`'s turn (a write nested in another's change)."""
        return key in _HELD.get()

    @asynccontextmanager
    async def turn(self, key: _Key) -> AsyncIterator[None]:
        """Hold `key`'s turn for the block (at once if this task already holds it)."""
        held = _HELD.get()
        if key in held:
            yield
            return
        lock, users = self._turns.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                token = _HELD.set(held | {key})
                try:
                    yield
                finally:
                    _HELD.reset(token)
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._turns[key]
