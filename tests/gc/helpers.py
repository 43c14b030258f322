"""Shared pieces of the GC tests: a clock the test drives, settings, and store lookups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from registry import Registry, Scope
from registry.settings import Settings
from tests.support.scopes import ACME

HOUR = 3600.0
# GC's fence on the rows whose objects it is deleting (`gc_purge_lease`; no clock skew).
PURGE_LEASE = 600.0


class ManualClock:
    """A clock that moves only when told (and by `tick` at every reading, if set).

    It starts at the wall clock's now, so that store timestamps (file mtimes, S3's
    LastModified), which GC compares against it, are in the same era.
    """

    def __init__(self, *, tick: timedelta = timedelta(0)) -> None:
        self.current = datetime.now(UTC)
        self.tick = tick

    def now(self) -> datetime:
        self.current += self.tick
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


def gc_settings(**overrides: object) -> Settings:
    """Settings for GC tests: no clock-skew margin, so the clock alone decides expiry."""
    values: dict[str, object] = {
        "gc_clock_skew": 0.0,
        "gc_grace": HOUR,
        "claim_ttl": HOUR,
        "gc_purge_lease": PURGE_LEASE,
    }
    values.update(overrides)
    return Settings(**values)


async def referenced_digests(registry: Registry) -> set[str]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT DISTINCT digest FROM manifest_entries"))
        return {r.digest for r in rows}


async def read_all(registry: Registry, scope: Scope = ACME) -> dict[str, int]:
    """Read every live skill's head, verified; return slug -> head."""
    page = await registry.list_skills(scope, limit=500)
    heads = {}
    for item in page.items:
        await registry.read_package(scope, item.slug)
        heads[item.slug] = item.head
    return heads
