"""Snapshots of a scope's discovery index: each state it served, numbered and kept.

Versioned discovery (agentskills PR #380) serves, beside the mutable `index.json`, an
immutable `v{N}.0.0/index.json` per state of the index and a `versions.json` listing
them. What the registry guarantees:

- **A snapshot once served never changes.** Its entries are rows written once (the
  version, digest, size and description of each skill), rendered by one pure function.
- **Every index served is a snapshot.** `current` builds the index and records it as
  snapshot N+1 unless it equals snapshot N (same entries, compared by fingerprint), so
  `index.json`, `versions.json`'s `latest` and `v{latest}/index.json` agree.
- **A listed snapshot is served whole.** A snapshot is listed (and served) only while
  every version it names is still served by the rules of the artifacts (published, in
  use, not pruned, readable); otherwise it is withdrawn, not rewritten: 404, like the
  artifacts it named. Since a listed snapshot's versions exist, their manifests and so
  their blobs are referenced, and garbage collection keeps them.

Why on read, and not in the transaction of each change: what a change does to the index
depends on the artifacts' digests and descriptions, which are read from the blob store
(never under the workspace lock), and an index changes through many writes (a publish, a
restore, a delete, a pause, an exclusion, a settings change, retention). Recording the
state the index is served in puts one rule in one place, numbers exactly the states
clients saw, and needs no change to the write paths. The record itself is taken under
the workspace lock from a fresh read of the state, so two servers racing to record
agree: the second finds the first's snapshot and records nothing, and snapshot numbers
follow the order of the states (a stale reader cannot record an older state after a
newer one, because it re-reads under the lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import discovery_snapshots as db_snapshots
from registry.domain import discovery
from registry.domain.model import Scope
from registry.errors import Inconsistency, NotFound, WorkspaceBusy
from registry.services.context import Context
from registry.services.discovery.index import (
    IndexEntry,
    build_index,
    enabled_settings,
    entries_of,
    listing,
    uncached,
)
from registry.services.discovery.settings import DiscoverySettings

# Rounds of "build outside the lock, record under it" before giving up: a round fails only
# when the heads moved between the two (a writer published meanwhile).
_ATTEMPTS: Final = 5


@dataclass(frozen=True)
class Snapshot:
    """One recorded state of a scope's index: its number and its entries, by slug."""

    settings: DiscoverySettings
    number: int
    entries: tuple[IndexEntry, ...]


@dataclass(frozen=True)
class SnapshotList:
    """The snapshots a scope serves: the newest (None: none listed) and all listed ones."""

    settings: DiscoverySettings
    latest: int | None
    numbers: tuple[int, ...]


def _fingerprint(entries: tuple[IndexEntry, ...]) -> str:
    return discovery.fingerprint(
        [
            (
                e.slug,
                e.skill_id,
                e.version,
                e.manifest_hash,
                e.type,
                e.description,
                e.sha256,
                e.size,
            )
            for e in entries
        ]
    )


def _row(entry: IndexEntry) -> db_snapshots.SnapshotEntryRow:
    return db_snapshots.SnapshotEntryRow(
        slug=entry.slug,
        skill_id=entry.skill_id,
        version=entry.version,
        manifest_hash=entry.manifest_hash,
        type=entry.type,
        description=entry.description,
        sha256=entry.sha256,
        size=entry.size,
    )


def _entry(row: db_snapshots.SnapshotEntryRow) -> IndexEntry:
    kind = (
        discovery.SKILL_MD_TYPE if row.type == discovery.SKILL_MD_TYPE else discovery.ARCHIVE_TYPE
    )
    return IndexEntry(
        slug=row.slug,
        skill_id=row.skill_id,
        version=row.version,
        manifest_hash=row.manifest_hash,
        type=kind,
        description=row.description,
        sha256=row.sha256,
        size=row.size,
    )


async def _record(conn: AsyncConnection, *, scope: Scope, now: datetime) -> Snapshot | None:
    """Record the state of `scope`'s index unless the latest snapshot is it (lock held).

    None when a head's artifact is not cached: the heads moved since the caller built the
    index, and building reads blobs, which is never done under the lock.
    """
    settings, heads, cached = await listing(conn, scope)
    if uncached(heads, cached):
        return None
    entries = entries_of(scope, heads, cached)
    fingerprint = _fingerprint(entries)
    latest = await db_snapshots.latest(conn, scope)
    if latest is not None and latest.fingerprint == fingerprint:
        return Snapshot(settings, latest.number, entries)
    number = 1 if latest is None else latest.number + 1
    rows = [_row(e) for e in entries]
    await db_snapshots.record(
        conn, scope, number=number, fingerprint=fingerprint, entries=rows, now=now
    )
    return Snapshot(settings, number, entries)


async def current(ctx: Context, scope: Scope) -> Snapshot:
    """The index of `scope` as it is now, recorded as a snapshot if it is a new state."""
    for _ in range(_ATTEMPTS):
        index = await build_index(ctx, scope)
        fingerprint = _fingerprint(index.entries)
        latest = await ctx.read(lambda conn: db_snapshots.latest(conn, scope))
        if latest is not None and latest.fingerprint == fingerprint:
            return Snapshot(index.settings, latest.number, index.entries)
        recorded = await ctx.locked(
            scope.workspace, partial(_record, scope=scope, now=ctx.clock.now())
        )
        if recorded is not None:
            return recorded
    raise WorkspaceBusy(workspace=scope.workspace, timeout=ctx.settings.lock_timeout)


async def listed(ctx: Context, scope: Scope) -> SnapshotList:
    """The snapshots `scope` serves, the current state recorded first."""
    await current(ctx, scope)

    async def work(conn: AsyncConnection) -> SnapshotList:
        settings = await enabled_settings(conn, scope)
        numbers = await db_snapshots.numbers(conn, scope)
        gone = await db_snapshots.withdrawn(conn, scope, everything=settings.everything)
        served = tuple(n for n in numbers if n not in gone)
        return SnapshotList(settings, max(served, default=None), served)

    return await ctx.read(work)


def not_served(scope: Scope, number: int) -> NotFound:
    """The error for a snapshot that was never recorded, or is withdrawn."""
    label = discovery.version_label(number)
    return NotFound(f"{scope.workspace}/{scope.agent} serves no discovery index version {label}")


async def snapshot(ctx: Context, scope: Scope, number: int) -> Snapshot:
    """Snapshot `number` of `scope`, while it is listed (`NotFound` otherwise)."""

    async def work(conn: AsyncConnection) -> Snapshot:
        settings = await enabled_settings(conn, scope)
        found = await db_snapshots.snapshot(conn, scope, number)
        if found is None:
            raise not_served(scope, number)
        if number in await db_snapshots.withdrawn(conn, scope, everything=settings.everything):
            raise not_served(scope, number)
        row, rows = found
        entries = tuple(_entry(r) for r in rows)
        if _fingerprint(entries) != row.fingerprint:
            msg = f"snapshot {number} of {scope.workspace}/{scope.agent} differs from its record"
            raise Inconsistency(msg)
        return Snapshot(settings, number, entries)

    return await ctx.read(work)
