"""Fault injection: scripted failpoints and an instrumented blob store.

Both drive failures and interleavings deterministically (events, counters), never sleeps.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from blobstore import BlobInfo, BlobStore, BlobStoreUnavailable


class InjectedFault(RuntimeError):
    """The error a test injects."""


@dataclass
class Park:
    """Hold a writer at a failpoint until the test releases it."""

    reached: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


class ScriptedFailpoints:
    """Failpoints a test arms: raise, cancel, park, or run a callback at the N-th hit."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.trace: list[str] = []
        self._actions: dict[tuple[str, int], Callable[[], object]] = {}
        self._parks: dict[tuple[str, int], Park] = {}
        self.on_hit: Callable[[str], None] | None = None

    def fail(self, name: str, *, nth: int = 1, error: BaseException | None = None) -> None:
        err = error or InjectedFault(f"injected at {name}#{nth}")

        def action() -> None:
            raise err

        self._actions[(name, nth)] = action

    def cancel(self, name: str, *, nth: int = 1) -> None:
        def action() -> None:
            raise asyncio.CancelledError

        self._actions[(name, nth)] = action

    def park(self, name: str, *, nth: int | None = None) -> Park:
        """Park the next hit of `name` (or its `nth` hit, counted from the first ever)."""
        park = Park()
        self._parks[(name, self.hits[name] + 1 if nth is None else nth)] = park
        return park

    async def hit(self, name: str) -> None:
        self.hits[name] += 1
        # This hit's ordinal, taken before parking: other tasks may hit `name` meanwhile.
        nth = self.hits[name]
        self.trace.append(name)
        if self.on_hit is not None:
            self.on_hit(name)
        park = self._parks.pop((name, nth), None)
        if park is not None:
            park.reached.set()
            await park.release.wait()
        action = self._actions.pop((name, nth), None)
        if action is not None:
            action()


class InstrumentedStore:
    """Wraps a blob store: counts calls, fails the N-th put, checks a guard on every call."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.put_digests: list[str] = []
        self.fail_puts: set[int] = set()
        self.cancel_puts: set[int] = set()
        self.guard: Callable[[str], None] | None = None
        self.before_put: Callable[[str], object] | None = None
        # Called with the digest before a delete reaches the store, and after it returned.
        self.before_delete: Callable[[str], object] | None = None
        self.after_delete: Callable[[str], object] | None = None

    def _enter(self, method: str) -> None:
        self.calls[method] += 1
        if self.guard is not None:
            self.guard(method)

    @property
    def url(self) -> str:
        return self.inner.url

    async def put(self, digest: str, data: bytes) -> bool:
        self._enter("put")
        n = self.calls["put"]
        await _call(self.before_put, digest)
        if n in self.cancel_puts:
            raise asyncio.CancelledError
        if n in self.fail_puts:
            raise BlobStoreUnavailable(f"injected failure of put #{n}")
        stored = await self.inner.put(digest, data)
        self.put_digests.append(digest)
        return stored

    async def get(self, digest: str) -> bytes:
        self._enter("get")
        return await self.inner.get(digest)

    async def exists(self, digest: str) -> bool:
        self._enter("exists")
        return await self.inner.exists(digest)

    async def stat(self, digest: str) -> BlobInfo | None:
        self._enter("stat")
        return await self.inner.stat(digest)

    async def delete(self, digest: str) -> None:
        self._enter("delete")
        await _call(self.before_delete, digest)
        await self.inner.delete(digest)
        await _call(self.after_delete, digest)

    async def iter_digests(self) -> AsyncIterator[BlobInfo]:
        self._enter("iter_digests")
        async for info in self.inner.iter_digests():
            yield info

    async def ensure(self) -> None:
        await self.inner.ensure()

    async def check(self) -> None:
        await self.inner.check()

    async def close(self) -> None:
        await self.inner.close()


async def _call(hook: Callable[[str], object] | None, digest: str) -> None:
    if hook is not None:
        result = hook(digest)
        if asyncio.iscoroutine(result):
            await result
