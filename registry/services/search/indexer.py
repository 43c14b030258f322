"""Keeping the search index up to date from the outbox, off the write path.

No write adds a statement for search: every change already writes an outbox event in its
own transaction (a publish, a restore, a delete, a pause, a source exclusion), so the
index follows the outbox instead. Each workspace has a cursor, the last event the index
took in. A search first asks, in its own read transaction, whether the workspace has
events after the cursor; if it has, `catch_up` reads them, re-reads the head of every
skill they name, rewrites the documents whose version changed (one `SKILL.md` read from
the blob store each) and moves the cursor, in one transaction, and the search runs after.

The lag is therefore none as a searcher sees it: a search reflects every change its
workspace committed before the search began. The cost of indexing falls on the first
search after a change, and grows with the number of skills changed, not with the size of
the scope; a search with nothing new to take in pays one indexed query on the outbox,
inside the transaction that searches.

Why a cursor per workspace can trust event ids: every event of a workspace is written
under that workspace's lock (`ctx.locked`, `ctx.uow.publish`), and the lock is held until
commit, so a workspace's events become visible in the order of their ids: nothing can
commit behind the cursor. Indexing is idempotent (a document is rewritten from the
current head, never from an event's payload, and never replaced by an older version), so
two searchers catching up at once do the same work, harmlessly.

`rebuild` re-reads every skill of a workspace: after an upgrade that changed what a
document holds, or for data written before the index existed without events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobCorrupted, BlobNotFound, BlobStoreError
from registry.db import exclusions as db_exclusions
from registry.db import search as db_search
from registry.domain.search import SearchText, search_text
from registry.errors import StorageUnavailable
from registry.services.context import Context

# Events taken in per step, and skills re-read per transaction.
BATCH: Final = 500
_READ_CONCURRENCY: Final = 16
# Events without a skill that change which heads may be read: every document is checked.
REFRESH_ALL: Final = frozenset({"source_excluded"})

_log = logging.getLogger("registry.search")


async def catch_up(ctx: Context, workspace: str) -> int:
    """Take in the workspace's events since its cursor; return the documents written."""
    written = 0
    while True:
        events = await ctx.read(lambda conn: db_search.pending_events(conn, workspace, BATCH))
        if not events:
            return written
        ids = {e.skill_id for e in events if e.skill_id is not None}
        if any(e.kind in REFRESH_ALL for e in events):
            ids |= set(await ctx.read(lambda conn: db_search.documented_ids(conn, workspace)))
        written += await refresh(ctx, workspace, sorted(ids), through=events[-1].id)
        if len(events) < BATCH:
            return written


async def rebuild(ctx: Context, workspace: str) -> int:
    """Rewrite the document of every skill of the workspace; return how many."""

    async def plan(conn: AsyncConnection) -> tuple[int, list[int]]:
        return await db_search.last_event_id(conn, workspace), await db_search.skill_ids(
            conn, workspace
        )

    through, ids = await ctx.read(plan)
    written = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        last = start + BATCH >= len(ids)
        written += await refresh(
            ctx, workspace, chunk, through=through if last else None, force=True
        )
    if not ids:
        await refresh(ctx, workspace, [], through=through)
    return written


async def refresh(
    ctx: Context,
    workspace: str,
    ids: Sequence[int],
    *,
    through: int | None,
    force: bool = False,
) -> int:
    """Bring the documents of `ids` to their heads; move the cursor to `through`."""

    async def plan(
        conn: AsyncConnection,
    ) -> tuple[list[db_search.HeadToIndex], dict[int, str]]:
        heads = await db_search.heads_to_index(conn, workspace, ids)
        excluded = await db_exclusions.unavailable(conn, workspace, [h.version_id for h in heads])
        return heads, excluded

    heads, excluded = await ctx.read(plan)
    # A head that lists an excluded source may not be read: its document goes.
    dropped = [h.skill_id for h in heads if h.version_id in excluded and h.indexed is not None]
    stale = [h for h in heads if h.version_id not in excluded and (force or h.indexed != h.head)]
    texts = await _texts(ctx, stale)
    now = ctx.clock.now()
    documents = [_document(workspace, head, texts[head.skill_id], now) for head in stale]

    async def store(conn: AsyncConnection) -> None:
        await db_search.store_documents(conn, documents, force=force)
        await db_search.drop_documents(conn, workspace, dropped)
        if through is not None:
            await db_search.advance_cursor(conn, workspace, through, now)

    if documents or dropped or through is not None:
        await ctx.write(store)
    return len(documents)


def _document(
    workspace: str, head: db_search.HeadToIndex, text: SearchText, now: Any
) -> dict[str, Any]:
    return {
        "skill_id": head.skill_id,
        "workspace": workspace,
        "agent": head.agent,
        "slug": head.slug,
        "version": head.head,
        "name": text.name,
        "description": text.description,
        "triggers": "\n".join(text.triggers),
        "body": text.body,
        "indexed_at": now,
    }


async def _texts(ctx: Context, heads: Iterable[db_search.HeadToIndex]) -> dict[int, SearchText]:
    gate = asyncio.Semaphore(_READ_CONCURRENCY)

    async def one(head: db_search.HeadToIndex) -> tuple[int, SearchText]:
        async with gate:
            try:
                data = await ctx.blobs.get(head.skill_md)
            except (BlobNotFound, BlobCorrupted) as exc:
                # fsck reports the damage; the skill stays findable by its name meanwhile.
                _log.warning("search: %s's SKILL.md is unreadable (%s)", head.slug, exc)
                data = b""
            except BlobStoreError as exc:
                raise StorageUnavailable("blob store", str(exc)) from exc
        return head.skill_id, search_text(head.slug, data)

    return dict(await asyncio.gather(*(one(h) for h in heads)))
