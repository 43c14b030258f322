"""Full-text search over the head versions of a scope.

Owns the index's upkeep (`indexer`: from the outbox, lazily, before each search) and the
query (`query`: ranked hits with highlighted snippets). The text is the pure
`registry.domain.search`; the dialect's full-text engine is `registry.db.search`.
"""
