"""A search: catch the index up, rank the scope's documents, and cut snippets for the page.

Scoped by construction: the ranking query names the workspace and the agent, so a search
never returns another workspace's skill (nor another agent's). Deleted (and archived)
skills and skills whose use is paused are left out unless asked for.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import search as db_search
from registry.domain.model import Scope
from registry.domain.search import DEFAULT_LIMIT, MAX_LIMIT, parse_query, split_highlights
from registry.services.context import Context
from registry.services.search.indexer import catch_up


@dataclass(frozen=True)
class SearchHit:
    """A skill that matches: its head, why it matched (a snippet), and its standing.

    `highlights` are [start, end) character ranges of `snippet` that matched the query.
    `score` orders the hits of one search (higher is better); it means nothing across
    searches or databases.
    """

    slug: str
    version: int
    description: str
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    score: float
    state: str
    use_paused: bool
    skill_id: int


@dataclass(frozen=True)
class SearchResults:
    """The hits of one search, best first; `terms` is what the query was read as."""

    scope: Scope
    query: str
    terms: tuple[str, ...]
    hits: tuple[SearchHit, ...]


async def search(
    ctx: Context,
    scope: Scope,
    text: str,
    *,
    limit: int = DEFAULT_LIMIT,
    include_deleted: bool = False,
    include_paused: bool = False,
) -> SearchResults:
    """Search the head versions of `scope` for `text` (see registry/domain/search.py)."""
    query = parse_query(text)
    limit = max(1, min(limit, MAX_LIMIT))
    terms = tuple(t.word + ("*" if t.prefix else "") for t in query.terms)
    if not query.terms:
        return SearchResults(scope, text, terms, ())

    async def work(
        conn: AsyncConnection, *, current: bool
    ) -> tuple[list[db_search.HitRow], dict[int, str]] | None:
        if not current and await db_search.pending_events(conn, scope.workspace, 1):
            return None  # the index must take in the workspace's changes first
        rows = await db_search.rank(
            conn,
            scope,
            query,
            limit=limit,
            include_deleted=include_deleted,
            include_paused=include_paused,
        )
        marked = await db_search.snippets(conn, query, [r.skill_id for r in rows])
        return rows, marked

    # One read transaction when the index is current (the usual case); otherwise the
    # index takes in every change committed so far, and the search runs after it.
    found = await ctx.read(functools.partial(work, current=False))
    if found is None:
        await catch_up(ctx, scope.workspace)
        found = await ctx.read(functools.partial(work, current=True))
    assert found is not None
    rows, marked = found
    hits = []
    for row in rows:
        snippet, highlights = split_highlights(marked.get(row.skill_id, ""))
        hits.append(
            SearchHit(
                slug=row.slug,
                version=row.version,
                description=row.description,
                snippet=snippet,
                highlights=highlights,
                score=row.score,
                state=row.state,
                use_paused=row.use_paused,
                skill_id=row.skill_id,
            )
        )
    return SearchResults(scope, text, terms, tuple(hits))
