"""Pending writes: learning writes waiting for a saved slot (docs/history.md).

A learning write that needs a new saved slot (a new skill, or a learned version that would
move an installed copy into the saved budget) at the scope's limit is not refused: the
write path records it as a **pending write** in its locked transaction, with its package's
manifest (so its blobs stay stored) and no version. It is invisible to readers.

`apply_pending` applies the waiting writes of a scope **in order**, each through the one
write path (`publish_manifest` with `applies_pending`: no upload, the content check under
today's rules, the owner's rules again, the pending write closed in the same transaction),
and stops at the first that still finds no room. It runs by itself after a delete frees a
slot, after a learning write that had to wait (so a raised capacity is used at once), and
when the HTTP service starts (a capacity change takes effect with a restart); and it can be
run by hand (`skillreg pending apply`). A pending write applies only to the skill its lock
saw (its `skill_id` and pinned head): one whose skill moved on meanwhile (the owner edited
the installed copy it was made on, deleted it, or the slug got another skill) **fails** with
the refusal's code; one whose package its skill's head already is closes as **applied** at
that head (no second version); one the owner's rules now divert becomes a **proposal**. The
owner may **drop** a waiting write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import pending as db_pending
from registry.db import skills as db_skills
from registry.domain.arguments import check_text
from registry.domain.manifest import Manifest
from registry.domain.model import ANY, ExpectedHead, FileInput, Origin, Publication, Scope
from registry.domain.numbers import MAX_ID, names_row
from registry.domain.similarity import MAX_SKETCH_BYTES
from registry.errors import (
    PendingWriteNotFound,
    RegistryError,
    StateConflict,
    StorageUnavailable,
)
from registry.services.context import Context
from registry.services.read import read_files
from registry.services.write import content, learning, publish, uploads
from registry.services.write.publish import publish_manifest
from registry.services.write.request import Screening, WriteRequest
from registry.services.write.uploads import ManifestFile

MAX_LISTED: Final = 500


@dataclass(frozen=True)
class PendingWriteInfo:
    """A pending write as the owner sees it.

    `status`: `waiting`, `applied` (`outcome.version`), `proposed` (`outcome.proposal`),
    `dropped` (`outcome.dropped_by`) or `failed` (`outcome.error`, the refusal's code, and
    `outcome.message`). `skill_head` is the head of the installed copy it would move into
    the saved budget (None for a new skill).
    """

    id: int
    workspace: str
    agent: str
    slug: str
    status: str
    origin: str
    actor: str
    message: str
    sources: list[str]
    manifest_hash: str
    file_count: int
    total_size: int
    expected: str
    outcome: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: db_pending.PendingRow) -> PendingWriteInfo:
        return cls(
            id=row.id,
            workspace=row.workspace,
            agent=row.agent,
            slug=row.slug,
            status=row.status,
            origin=row.origin,
            actor=row.actor,
            message=row.message,
            sources=list(row.sources),
            manifest_hash=row.manifest_hash,
            file_count=row.file_count,
            total_size=row.total_size,
            expected=row.expected,
            outcome=row.outcome,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


def _expected(text: str) -> ExpectedHead:
    if text == "new":
        return None
    if text == "any":
        return ANY
    return int(text)


async def list_pending(
    ctx: Context, workspace: str, *, agent: str | None = None, waiting_only: bool = True
) -> list[PendingWriteInfo]:
    """The pending writes of a workspace (one agent's, if given), oldest first."""
    statuses = ("waiting",) if waiting_only else None

    async def work(conn: AsyncConnection) -> list[db_pending.PendingRow]:
        return await db_pending.listed(
            conn, workspace, agent=agent, statuses=statuses, limit=MAX_LISTED
        )

    return [PendingWriteInfo.of(r) for r in await ctx.read(work)]


async def apply_pending(
    ctx: Context, workspace: str | None = None, agent: str | None = None
) -> list[PendingWriteInfo]:
    """Apply waiting writes, in order per scope, while there is room; return what changed.

    Of one workspace (and agent) or of every workspace. Each write is one write-path
    transaction; a scope stops at its first write that still finds no room.
    """

    async def work(conn: AsyncConnection) -> list[db_pending.PendingRow]:
        return await db_pending.listed(conn, workspace, agent=agent, limit=MAX_LISTED)

    full: set[Scope] = set()
    changed: list[PendingWriteInfo] = []
    for row in await ctx.read(work):
        if row.scope in full:
            continue
        outcome = await _apply_one(ctx, row)
        if outcome is None:
            full.add(row.scope)
        else:
            changed.append(outcome)
    return changed


async def write_package(
    ctx: Context, request: WriteRequest, files: Mapping[str, FileInput]
) -> Publication:
    """The write path (`write.publish.write_package`), then the waiting writes if it waited.

    A write that had to wait makes the scope's waiting writes be tried at once, so a raised
    capacity is used without waiting for the next run (this one included, in its turn).
    """
    publication = await publish.write_package(ctx, request, files)
    if publication.pending is not None:
        await apply_quietly(ctx, request.scope)
    return publication


async def publish_uploaded(
    ctx: Context, request: WriteRequest, files: Sequence[ManifestFile]
) -> Publication:
    """The two-phase upload's publish (`write.uploads`), then the waiting writes as above."""
    publication = await uploads.publish_uploaded(ctx, request, files)
    if publication.pending is not None:
        await apply_quietly(ctx, request.scope)
    return publication


async def apply_quietly(ctx: Context, scope: Scope) -> None:
    """`apply_pending` for one scope after another change committed (a delete, a write).

    That change is done whatever happens here: an outage leaves the writes waiting for the
    next run, which finishes them.
    """
    with contextlib.suppress(StorageUnavailable):
        await apply_pending(ctx, scope.workspace, scope.agent)


async def _apply_one(ctx: Context, row: db_pending.PendingRow) -> PendingWriteInfo | None:
    """Apply one waiting write; None if it still finds no room."""
    if row.manifest_id is None:  # pragma: no cover - a waiting write always has one
        return None
    manifest_id = row.manifest_id

    async def manifest_of(conn: AsyncConnection) -> Manifest:
        return await db_skills.manifest_entries(conn, row.workspace, manifest_id)

    try:
        manifest = await ctx.read(manifest_of)
        texts = Manifest(e for e in manifest.entries if e.size <= MAX_SKETCH_BYTES)
        kept = await content.check(ctx, manifest, None, allowed=row.approval_values())
        sketches = learning.sketches(await read_files(ctx, texts))
        request = WriteRequest(
            scope=row.scope,
            slug=row.slug,
            expected_head=_expected(row.expected),
            origin=Origin(row.origin),
            actor=row.actor,
            message=row.message,
            sources=tuple(row.sources),
            applies_pending=row.id,
        )
        await publish_manifest(
            ctx, request, manifest, {}, screening=Screening(approvals=kept, sketches=sketches)
        )
    except learning.StillWaiting:
        return None
    except learning.AlreadyApplied as done:
        # Its package is its skill's head already: applied there, no second version.
        with contextlib.suppress(StateConflict):
            await _close(
                ctx,
                row.workspace,
                row.id,
                status="applied",
                outcome={"version": done.version},
                actor=row.actor,
            )
    except StorageUnavailable:
        raise
    except RegistryError as exc:
        # A refusal closes the write as failed (a `StateConflict` too: the owner's pending
        # draft or update now blocks the proposal it would become). If the owner dropped
        # it meanwhile, the close is refused in turn and the drop stands.
        failure = {"error": exc.code, "message": str(exc)}
        with contextlib.suppress(StateConflict):
            await _close(
                ctx, row.workspace, row.id, status="failed", outcome=failure, actor=row.actor
            )
    return await _info(ctx, row.workspace, row.id)


async def _info(ctx: Context, workspace: str, pending_id: int) -> PendingWriteInfo:
    async def work(conn: AsyncConnection) -> db_pending.PendingRow | None:
        return await db_pending.get(conn, workspace, pending_id)

    found = await ctx.read(work)
    if found is None:
        raise PendingWriteNotFound(pending_id)
    return PendingWriteInfo.of(found)


async def drop_pending(
    ctx: Context, workspace: str, pending_id: int, *, actor: str
) -> PendingWriteInfo:
    """The owner drops a waiting write: it will never be applied (`StateConflict` if closed)."""
    check_text("actor", actor)
    if not names_row("pending_id", pending_id, MAX_ID):
        raise PendingWriteNotFound(pending_id)
    outcome: dict[str, Any] = {"dropped_by": actor}
    await _close(ctx, workspace, pending_id, status="dropped", outcome=outcome, actor=actor)
    return await _info(ctx, workspace, pending_id)


async def _close(
    ctx: Context,
    workspace: str,
    pending_id: int,
    *,
    status: str,
    outcome: dict[str, Any],
    actor: str,
) -> None:
    """Close a waiting write as `status`, with one event (`pending_write_<status>`)."""

    async def work(conn: AsyncConnection) -> None:
        now = ctx.clock.now()
        current = await db_pending.get(conn, workspace, pending_id)
        if current is None:
            raise PendingWriteNotFound(pending_id)
        if current.status != "waiting":
            raise StateConflict("drop" if status == "dropped" else "fail", current.status)
        await db_pending.close(conn, current, status=status, outcome=outcome, now=now)
        await db_skills.insert_event(
            conn,
            current.scope,
            current.slug,
            skill_id=current.skill_id,
            kind=f"pending_write_{status}",
            version=None,
            manifest_hash=current.manifest_hash,
            payload={"pending": current.id, "actor": actor, **outcome},
            now=now,
        )

    await ctx.locked(workspace, work)
