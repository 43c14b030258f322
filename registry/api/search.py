"""Full-text search on the face of `Registry` (docs/search.md).

A mixin of `Registry` (registry/api/registry.py), like `OwnerControls`; every method
delegates to `registry.services.search`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry import lazy
from registry.domain.search import DEFAULT_LIMIT

if TYPE_CHECKING:
    from registry.domain.model import Scope
    from registry.services.context import Context
    from registry.services.search import indexer
    from registry.services.search import query as search_query
    from registry.services.search.query import SearchResults
else:  # imported when first used (registry/lazy.py)
    indexer = lazy.module("registry.services.search.indexer")
    search_query = lazy.module("registry.services.search.query")


class Searching:
    """Search over the heads of a scope, and the index's rebuild."""

    ctx: Context

    async def search(
        self,
        scope: Scope,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        include_deleted: bool = False,
        include_paused: bool = False,
    ) -> SearchResults:
        """Full-text search over the heads of `scope`: ranked hits with snippets.

        Words are all required (`word*` for a prefix); the name, description, triggers
        and `SKILL.md` body are searched. Deleted skills and skills whose use is paused
        are left out unless asked for. The index first takes in the workspace's changes.
        """
        return await search_query.search(
            self.ctx,
            scope,
            query,
            limit=limit,
            include_deleted=include_deleted,
            include_paused=include_paused,
        )

    async def reindex_search(self, workspace: str) -> int:
        """Rewrite the search document of every skill of `workspace`; return how many."""
        return await indexer.rebuild(self.ctx, workspace)
