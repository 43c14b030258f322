"""Retrying a compare-and-swap write: re-read the head, re-apply the change, back off.

Many writers on one hot skill make compare-and-swap fail often: each writer's expected
head is stale by the time it takes the lock. Retrying at once makes it worse (every loser
comes back together). `write_with_retry` reads the head package, asks the caller's `change`
for the new files, writes with `expected_head` set to the version it read, and on a
`HeadConflict` waits a random time that grows with each attempt (tenacity, with the
registry's one backoff formula, `registry/services/backoff.py`) before it reads again.
The change is re-applied to what is current, never to what the caller saw first, so no
writer's change is lost and none overwrites another's (docs/write-path.md, "Retrying a
compare-and-swap").

Writers in one process take turns first (`registry/services/turns.py`, one `Turns` per
`Context`): each skill's retried writes run one at a time, in the order they asked, so they
never conflict with each other and none waits behind luckier ones. Without turns, one
unlucky writer could lose dozens of times in a row to tasks of its own process
(docs/write-path.md, "Turns within a process", has the figures).

On PostgreSQL the skill's turn is also taken among processes (`UnitOfWork.turn`, a
session-level advisory lock, one round trip to take and one to give back), so the writers of
several processes that contend for one skill queue instead of backing off against each
other, and conflict no more (docs/write-path.md, "Turns among processes", has the
figures).
Only writers that do not go through `write_with_retry` can still make an attempt fail, and
backoff handles those. A writer that cannot have the turn (a quarter of this process's
connections hold turns already, or the lock is not granted within `lock_timeout`) goes on
with backoff alone, as on SQLite.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
)

from registry.domain.model import ANY, FileInput, Origin, Publication, Scope
from registry.errors import HeadConflict, SkillNotFound
from registry.services.backoff import tenacity_wait
from registry.services.context import Context
from registry.services.read import Package, read_package
from registry.services.write.publish import write_package
from registry.services.write.request import WriteRequest

Change = Callable[[Package | None], Mapping[str, FileInput] | Awaitable[Mapping[str, FileInput]]]
"""Given the current package (None if the skill does not exist), the files to write."""


async def write_with_retry(
    ctx: Context,
    scope: Scope,
    slug: str,
    change: Change,
    *,
    actor: str,
    origin: Origin = Origin.EDIT,
    message: str = "",
    sources: Sequence[str] = (),
    attempts: int = 20,
    wait: float = 0.02,
    wait_max: float = 0.5,
) -> Publication:
    """Apply `change` to the current head as a compare-and-swap, retrying on conflicts.

    Each attempt reads the head, calls `change` with it and writes the result with
    `expected_head` set to the version read. A `HeadConflict` (another writer moved the head
    in between) waits between half and all of `wait * 2**(attempt-1)` seconds, capped at
    `wait_max` (`registry/services/backoff.py`),
    and tries again, at most `attempts` times; the last conflict is raised. Every other error
    is raised at once. The calls of one process for one skill take turns (in the order they
    came), and on PostgreSQL they also take the skill's turn among processes when they can.
    """
    retrying = AsyncRetrying(
        retry=retry_if_exception_type(HeadConflict),
        stop=stop_after_attempt(attempts),
        wait=tenacity_wait(wait, wait_max),
        reraise=True,
    )
    # Built once, before any read: a malformed argument is refused before the first attempt.
    request = WriteRequest(
        scope=scope, slug=slug, expected_head=ANY, origin=origin, actor=actor, message=message,
        sources=sources,
    )  # fmt: skip
    key = (scope.workspace, scope.agent, slug)
    # A write nested in its own change runs inside its caller's turns.
    shared = nullcontext() if ctx.turns.holds(key) else ctx.uow.turn("\0".join(key))
    async with ctx.turns.turn(key), shared:
        async for attempt in retrying:
            with attempt:
                try:
                    current: Package | None = await read_package(ctx, scope, slug)
                except SkillNotFound:
                    current = None
                files = change(current)
                if inspect.isawaitable(files):
                    files = await files
                expected = None if current is None else current.version
                return await write_package(ctx, replace(request, expected_head=expected), files)
    raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover
