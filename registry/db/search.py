"""Queries on search: the outbox the indexer reads, the documents it writes, the ranking.

The full-text index is the dialect's own (registry/db/tables/search.py): FTS5 with BM25 on
SQLite, a `tsvector` with `ts_rank_cd` on PostgreSQL. Both weight a word in the name above
one in the description or triggers, and those above the body. Ranking and snippets are two
statements: the first ranks and cuts to the page, the second builds snippets for that page
only, so the cost of a snippet never grows with the number of matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import Event, ManifestEntry, SearchCursor, SearchDocument, Skill, Version
from registry.domain.model import Scope
from registry.domain.search import MARK_END, MARK_START, SearchQuery

SNIPPET_WORDS: Final = 24


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An outbox event the index has not taken in yet."""

    id: int
    skill_id: int | None
    kind: str


@dataclass(frozen=True, slots=True)
class HeadToIndex:
    """A skill's head, where its `SKILL.md` is, and the version its document holds."""

    skill_id: int
    agent: str
    slug: str
    head: int
    version_id: int
    skill_md: str
    indexed: int | None


@dataclass(frozen=True, slots=True)
class HitRow:
    """One ranked document."""

    skill_id: int
    slug: str
    version: int
    description: str
    state: str
    use_paused: bool
    score: float


def _cursor(workspace: str) -> sa.ScalarSelect[int]:
    return (
        sa.select(SearchCursor.last_event_id)
        .where(SearchCursor.workspace == workspace)
        .scalar_subquery()
    )


async def pending_events(conn: AsyncConnection, workspace: str, limit: int) -> list[PendingEvent]:
    """The workspace's oldest events after its cursor, at most `limit`."""
    rows = await conn.execute(
        sa.select(Event.id, Event.skill_id, Event.kind)
        .where(Event.workspace == workspace, Event.id > sa.func.coalesce(_cursor(workspace), 0))
        .order_by(Event.id)
        .limit(limit)
    )
    return [PendingEvent(int(r.id), r.skill_id, r.kind) for r in rows]


async def last_event_id(conn: AsyncConnection, workspace: str) -> int:
    """The id of the workspace's newest event (0 if it has none)."""
    found = await conn.scalar(sa.select(sa.func.max(Event.id)).where(Event.workspace == workspace))
    return int(found or 0)


async def skill_ids(conn: AsyncConnection, workspace: str) -> list[int]:
    """Every skill of the workspace, deleted ones included (their documents are kept)."""
    rows = await conn.execute(
        sa.select(Skill.id).where(Skill.workspace == workspace).order_by(Skill.id)
    )
    return [int(r.id) for r in rows]


async def documented_ids(conn: AsyncConnection, workspace: str) -> list[int]:
    """The skills of the workspace that have a document."""
    rows = await conn.execute(
        sa.select(SearchDocument.skill_id)
        .where(SearchDocument.workspace == workspace)
        .order_by(SearchDocument.skill_id)
    )
    return [int(r.skill_id) for r in rows]


async def heads_to_index(
    conn: AsyncConnection, workspace: str, ids: Iterable[int]
) -> list[HeadToIndex]:
    """For each of the skills `ids` of `workspace`: its head and its document's version."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    rows = await conn.execute(
        sa.select(
            Skill.id.label("skill_id"),
            Skill.agent,
            Skill.slug,
            Skill.head,
            Version.id.label("version_id"),
            ManifestEntry.digest.label("skill_md"),
            SearchDocument.version.label("indexed"),
        )
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .join(
            ManifestEntry,
            sa.and_(
                ManifestEntry.manifest_id == Version.manifest_id, ManifestEntry.path == "SKILL.md"
            ),
        )
        .outerjoin(SearchDocument, SearchDocument.skill_id == Skill.id)
        .where(Skill.workspace == workspace, Skill.id.in_(wanted))
        .order_by(Skill.id)
    )
    return [HeadToIndex(**r._asdict()) for r in rows]


async def store_documents(
    conn: AsyncConnection, documents: Sequence[dict[str, Any]], *, force: bool
) -> None:
    """Insert or replace documents; a document never goes back to an older version.

    Heads only move forward, so a slower indexer holding an older head cannot overwrite a
    newer document. `force` also rewrites a document at the same version (a rebuild).
    """
    if not documents:
        return
    insert = upsert(conn, SearchDocument).values(list(documents))
    columns = ("agent", "slug", "version", "name", "description", "triggers", "body")
    newer = (
        insert.excluded.version >= SearchDocument.version
        if force
        else (insert.excluded.version > SearchDocument.version)
    )
    await conn.execute(
        insert.on_conflict_do_update(
            index_elements=["skill_id"],
            set_={c: insert.excluded[c] for c in (*columns, "indexed_at")},
            where=newer,
        )
    )


async def drop_documents(conn: AsyncConnection, workspace: str, ids: Iterable[int]) -> None:
    """Remove the documents of `ids` (their heads can no longer be read)."""
    gone = sorted(set(ids))
    if gone:
        await conn.execute(
            sa.delete(SearchDocument).where(
                SearchDocument.workspace == workspace, SearchDocument.skill_id.in_(gone)
            )
        )


async def advance_cursor(
    conn: AsyncConnection, workspace: str, event_id: int, now: datetime
) -> None:
    """Move the workspace's cursor to `event_id`, never backwards."""
    insert = upsert(conn, SearchCursor).values(
        workspace=workspace, last_event_id=event_id, updated_at=now
    )
    await conn.execute(
        insert.on_conflict_do_update(
            index_elements=["workspace"],
            set_={"last_event_id": insert.excluded.last_event_id, "updated_at": now},
            where=insert.excluded.last_event_id > SearchCursor.last_event_id,
        )
    )


_SQLITE_RANK = """
SELECT d.skill_id, d.slug, d.version, d.description, s.state, s.use_paused,
       -bm25(search_fts, 8.0, 4.0, 4.0, 1.0) AS score
FROM search_fts
JOIN search_documents AS d ON d.skill_id = search_fts.rowid
JOIN skills AS s ON s.id = d.skill_id
WHERE search_fts MATCH :query AND d.workspace = :workspace AND d.agent = :agent
  AND (:deleted OR s.state = 'active') AND (:paused OR NOT s.use_paused)
ORDER BY score DESC, d.slug
LIMIT :limit
"""
_POSTGRESQL_RANK = """
SELECT d.skill_id, d.slug, d.version, d.description, s.state, s.use_paused,
       ts_rank_cd(d.document, q, 1) AS score
FROM search_documents AS d
JOIN skills AS s ON s.id = d.skill_id
CROSS JOIN to_tsquery('english', :query) AS q
WHERE d.document @@ q AND d.workspace = :workspace AND d.agent = :agent
  AND (:deleted OR s.state = 'active') AND (:paused OR NOT s.use_paused)
ORDER BY score DESC, d.slug
LIMIT :limit
"""
_SQLITE_SNIPPETS = """
SELECT rowid AS skill_id,
       snippet(search_fts, -1, :start, :end, '…', :words) AS snippet
FROM search_fts
WHERE search_fts MATCH :query AND rowid IN :ids
"""
_POSTGRESQL_SNIPPETS = """
SELECT d.skill_id,
       ts_headline('english', d.description || E'\\n' || d.triggers || E'\\n' || d.body,
                   to_tsquery('english', :query), :options) AS snippet
FROM search_documents AS d
WHERE d.skill_id IN :ids
"""


def _rank_statement(dialect: str) -> sa.TextClause:
    sql = _POSTGRESQL_RANK if dialect == "postgresql" else _SQLITE_RANK
    return sa.text(sql).bindparams(
        sa.bindparam("deleted", type_=sa.Boolean), sa.bindparam("paused", type_=sa.Boolean)
    )


async def rank(
    conn: AsyncConnection,
    scope: Scope,
    query: SearchQuery,
    *,
    limit: int,
    include_deleted: bool,
    include_paused: bool,
) -> list[HitRow]:
    """The best `limit` documents of `scope` that contain every term of `query`."""
    dialect = conn.dialect.name
    rows = await conn.execute(
        _rank_statement(dialect),
        {
            "query": query.tsquery() if dialect == "postgresql" else query.fts5(),
            "workspace": scope.workspace,
            "agent": scope.agent,
            "deleted": include_deleted,
            "paused": include_paused,
            "limit": limit,
        },
    )
    return [
        HitRow(
            skill_id=int(r.skill_id),
            slug=r.slug,
            version=int(r.version),
            description=r.description,
            state=r.state,
            use_paused=bool(r.use_paused),
            score=float(r.score),
        )
        for r in rows
    ]


async def snippets(conn: AsyncConnection, query: SearchQuery, ids: Sequence[int]) -> dict[int, str]:
    """A snippet per document of `ids`, the matches between `MARK_START` and `MARK_END`."""
    if not ids:
        return {}
    ids_param: sa.BindParameter[list[int]] = sa.bindparam("ids", expanding=True)
    if conn.dialect.name == "postgresql":
        options = (
            f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords={SNIPPET_WORDS}, "
            'MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'
        )
        statement = sa.text(_POSTGRESQL_SNIPPETS).bindparams(ids_param)
        params: dict[str, Any] = {"query": query.tsquery(), "options": options}
    else:
        statement = sa.text(_SQLITE_SNIPPETS).bindparams(ids_param)
        params = {
            "query": query.fts5(),
            "start": MARK_START,
            "end": MARK_END,
            "words": SNIPPET_WORDS,
        }
    rows = await conn.execute(statement, {**params, "ids": list(ids)})
    return {int(r.skill_id): r.snippet or "" for r in rows}
