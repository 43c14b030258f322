"""Cancellation that never interrupts a database statement in flight.

Cancelling a task while its driver call is in flight leaves the connection in an unknown
state: with aiosqlite the statement still runs in the connection's thread and may leave
`BEGIN IMMEDIATE` holding the database's write lock after the task is gone; with any
driver the transaction's outcome becomes unknowable. So every transaction runs in its own
task (`guarded`): cancelling the caller only *requests* cancellation, and the transaction
honours the request at the next safe point: before its next statement (an engine event
calls `check_cancelled`), at a failpoint, or before its commit. It then rolls back
normally and the caller sees `CancelledError`. A request that arrives once the commit has
been sent lets the commit finish: the caller still sees `CancelledError`, and the change
is complete (never partial).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class TransactionCancelled(Exception):
    """Raised inside a transaction at a safe point after its caller was cancelled."""


@dataclass
class CancelRequest:
    requested: bool = False


_REQUEST: contextvars.ContextVar[CancelRequest | None] = contextvars.ContextVar(
    "skillreg_cancel_request", default=None
)


def check_cancelled() -> None:
    """Raise `TransactionCancelled` if the running transaction's caller was cancelled."""
    request = _REQUEST.get()
    if request is not None and request.requested:
        raise TransactionCancelled


async def guarded(work: Callable[[], Awaitable[T]]) -> T:
    """Run one transaction so that cancelling the caller cannot cut a statement in half."""
    request = CancelRequest()

    async def run() -> T:
        _REQUEST.set(request)
        return await work()

    task = asyncio.ensure_future(run())
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done():
            raise
        request.requested = True
        # Wait for the transaction to reach a safe point and roll back, or to finish its
        # commit; further cancellations of the caller are absorbed meanwhile. Whatever
        # the transaction's own outcome, the caller was cancelled and learns only that.
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                continue
            except BaseException:  # noqa: BLE001, S112 - reported as the cancellation below
                continue
        raise
