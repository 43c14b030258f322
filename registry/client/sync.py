"""`skillreg sync`: keep a target equal to a scope's desired state over HTTP only.

The same engine as `reconcile` (`reconcile.materialize`) with the remote source
(`remote.py`): link and copy mode, package-atomic swaps, drift repaired, crash safety,
lock files, one reconciler per target, and the same report. What it applied is recorded
in the registry over HTTP, so `skillreg status` shows remote targets beside local ones.

`Sync.once()` is one run. `Sync.watch()` runs again and again: after a run that converged
it waits about `interval` seconds; after a failure (the registry away, a skill that did
not converge) it backs off exponentially, from `first` up to `cap`. Every wait is jittered
(half fixed, half random), so many hosts restarted together do not poll in step. Errors
that no retry can fix (a target bound to another scope or mode, an unusable target or
lock file) end the loop.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, NoReturn, Self

import httpx

from blobstore import BlobStoreError
from registry.client.http import RULE_RUN_DEADLINE, Bounds, RegistryClient
from registry.client.remote import RemoteSource
from registry.client.trust import RULE_NO_ROOT, RULE_PINNED, HostTrust, TrustRoot
from registry.domain.limits import Limits
from registry.domain.model import Scope
from registry.errors import (
    InvalidName,
    LockFileInvalid,
    RegistryError,
    RemoteRefused,
    TargetInvalid,
    TargetMismatch,
)
from registry.failpoints import NO_FAILPOINTS, Failpoints
from registry.services.backoff import delay
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.reconcile import RunTimeout, materialize
from registry.services.materialize.report import ReconcileReport


def _now() -> datetime:
    return datetime.now(UTC)


# No retry fixes these: the loop stops and says why.
PERMANENT: Final = (TargetMismatch, TargetInvalid, LockFileInvalid, InvalidName)
UNTRUSTED: Final = (RULE_NO_ROOT, RULE_PINNED)


@dataclass(frozen=True)
class Backoff:
    """How long the watch loop waits between runs (seconds)."""

    interval: float = 30.0  # after a run that converged
    first: float = 1.0  # after the first failure in a row; doubled for each further one
    cap: float = 300.0  # never longer than this

    def delay(self, failures: int, draw: Callable[[], float]) -> float:
        """The wait after a run, given the failures in a row (0: it converged).

        `draw()` is a number in [0, 1): half the delay is fixed, half is spread by it.
        """
        if failures == 0:
            return delay(1, first=self.interval, cap=self.cap, draw=draw())
        return delay(failures, first=self.first, cap=self.cap, draw=draw())


class Sync:
    """Sync one target from one registry; an async context manager (it holds a client)."""

    def __init__(
        self,
        url: str,
        token: str,
        scope: Scope,
        target: Path | str,
        *,
        mode: str | None = None,
        verify: bool = False,
        lock: LockFile | None = None,
        wait: bool = False,
        failpoints: Failpoints = NO_FAILPOINTS,
        user_agent: str = "skillreg-sync",
        transport: httpx.AsyncBaseTransport | None = None,
        limits: Limits | None = None,
        bounds: Bounds | None = None,
        allow_plain_http: bool = False,
        trust: TrustRoot | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        """Sync `target` from the registry at `url` (see `http.py` for what it refuses).

        `limits` are the host's package limits (what it takes from the registry);
        `bounds` how much and how long; `allow_plain_http` accepts http:// to another
        machine, where the token and the packages travel unencrypted. `trust` is the
        root of trust for a target that pinned none yet (`trust.py`); `clock` the time
        a signed state's expiry is compared with.
        """
        self.scope = scope
        self.target = target
        self.mode = mode
        self.verify = verify
        self.lock = lock
        self.wait = wait
        self.failpoints = failpoints
        self.limits = limits or Limits()
        self.trust_root = trust
        self.clock = clock
        self.trust: HostTrust | None = None  # the last run's checks and their conclusion
        self.client = RegistryClient(
            url,
            token,
            bounds=bounds,
            allow_plain_http=allow_plain_http,
            user_agent=user_agent,
            transport=transport,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.client.close()

    async def once(self) -> ReconcileReport:
        """One run: make the target hold the desired state (see `reconcile.materialize`).

        The run ends within `Bounds.run_timeout` once the target is locked
        (`RemoteRefused`, rule `run_deadline`), whatever the registry does.
        """
        self.trust = HostTrust(self.client, self.scope, self.trust_root, self.clock)
        source = RemoteSource(
            self.client,
            self.scope,
            trust=self.trust,
            limits=self.limits,
            failpoints=self.failpoints,
        )
        try:
            return await materialize(
                source,
                self.scope,
                self.target,
                mode=self.mode,
                verify=self.verify,
                lock=self.lock,
                wait=self.wait,
                failpoints=self.failpoints,
                limits=self.limits,
                run_deadline=self.client.bounds.run_timeout,
            )
        except RunTimeout as exc:
            detail = f"{exc}; the skills it had not reached keep what they held"
            raise RemoteRefused(f"sync from {self.client.url}", RULE_RUN_DEADLINE, detail) from None

    async def watch(
        self,
        *,
        backoff: Backoff,
        on_report: Callable[[ReconcileReport], None],
        on_error: Callable[[BaseException, float], None],
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        draw: Callable[[], float] = random.random,
    ) -> NoReturn:
        """Run `once` forever, waiting as `backoff` says; only a permanent error ends it.

        `on_report` gets every report, `on_error` every failed run with the wait that
        follows. `sleep` and `draw` are the clock and the dice (tests pass their own).
        """
        failures = 0
        while True:
            try:
                report = await self.once()
            except PERMANENT:
                raise
            except (RegistryError, BlobStoreError, OSError) as exc:
                if isinstance(exc, RemoteRefused) and exc.rule in UNTRUSTED:
                    raise  # the operator must pin keys: no retry will
                failures += 1
                delay = backoff.delay(failures, draw)
                on_error(exc, delay)
            else:
                failures = 0 if report.ok else failures + 1
                delay = backoff.delay(failures, draw)
                on_report(report)
            await sleep(delay)
