"""A reconciler (or a sync) that SIGKILLs itself at a chosen step, in a process of its own.

The crash tests start `reconcile_until_killed` through multiprocessing's forkserver, which
imports this module (and with it the registry) once; each run is a fork of that server,
so a crash matrix of dozens of real processes stays fast. The process dies by SIGKILL at
the N-th hit of the named failpoint: no cleanup, no `finally`, exactly like `kill -9`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from pathlib import Path

from blobstore.local import LocalBlobStore
from registry.api import Registry
from registry.client import Sync
from registry.db.engine import create_engine
from registry.domain.model import Scope
from registry.settings import Settings
from tests.support.trust import registry_root


class KillAt:
    """Failpoints that kill the process at the `nth` hit of `name`."""

    def __init__(self, name: str, nth: int) -> None:
        self.name = name
        self.nth = nth
        self.hits: Counter[str] = Counter()

    async def hit(self, name: str) -> None:
        self.hits[name] += 1
        if name == self.name and self.hits[name] == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)


def reconcile_until_killed(
    database_url: str, blob_root: str, target: str, workspace: str, kill_at: tuple[str, int]
) -> None:
    """Reconcile `target` for `workspace`; die at `kill_at`. Returns only if never reached."""
    asyncio.run(_reconcile(database_url, Path(blob_root), Path(target), workspace, kill_at))


async def _reconcile(
    database_url: str, blob_root: Path, target: Path, workspace: str, kill_at: tuple[str, int]
) -> None:
    settings = Settings(database_url=database_url, blob_url=blob_root.as_uri())
    engine = create_engine(database_url)
    store = LocalBlobStore(blob_root)
    registry = Registry(engine, store, settings, failpoints=KillAt(*kill_at))
    try:
        await registry.reconcile(Scope(workspace), target)
    finally:
        await engine.dispose()


def sync_until_killed(
    url: str, token: str, target: str, workspace: str, kill_at: tuple[str, int]
) -> None:
    """Sync `target` from the registry at `url`; die at `kill_at`. Returns only if never reached."""
    asyncio.run(_sync(url, token, Path(target), workspace, kill_at))


async def _sync(
    url: str, token: str, target: Path, workspace: str, kill_at: tuple[str, int]
) -> None:
    syncer = Sync(
        url, token, Scope(workspace), target, failpoints=KillAt(*kill_at), trust=registry_root()
    )
    async with syncer:
        await syncer.once()
