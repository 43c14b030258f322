"""Search: one document per skill (its head's text), and how far each workspace is indexed.

`search_documents` holds what full-text search looks at for a skill: its name (the slug,
hyphens as spaces), and from its head's `SKILL.md` the description, the discovery
triggers (`metadata.triggers`, one phrase a line) and the body. The full-text index
itself is dialect-specific, so it lives outside this model and `alembic check` is told to
leave it alone (`OUTSIDE_MODEL`, used by migrations/env.py):

- SQLite: `search_fts`, an FTS5 table over this one (external content, rowid = skill id),
  kept in step by triggers on `search_documents`; FTS5 adds its shadow tables
  (`search_fts_data`, `_idx`, `_docsize`, `_config`).
- PostgreSQL: the column `document`, a stored `tsvector` generated from the four texts
  (weights A, B, B, D), and its GIN index `ix_search_documents_document`.

`search_cursors` records, per workspace, the last outbox event the index has taken in
(registry/services/search/indexer.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import Base, BigId

# Names `alembic check` must not compare: created by migration 0009 for one dialect only.
FTS_TABLE: Final = "search_fts"
TSVECTOR_COLUMN: Final = "document"
TSVECTOR_INDEX: Final = "ix_search_documents_document"


def outside_model(name: str | None, kind: str, parent_names: dict[str, str | None]) -> bool:
    """Whether a database object is part of the dialect-specific full-text index."""
    if name is None:
        return False
    if kind == "table":
        return name == FTS_TABLE or name.startswith(f"{FTS_TABLE}_")
    if kind == "column":
        return name == TSVECTOR_COLUMN and parent_names.get("table_name") == "search_documents"
    return kind == "index" and name == TSVECTOR_INDEX


class SearchDocument(Base):
    """The searchable text of one skill's head version."""

    __tablename__ = "search_documents"

    skill_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("skills.id"), primary_key=True, autoincrement=False
    )
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    version: Mapped[int] = mapped_column(sa.Integer)
    name: Mapped[str] = mapped_column(sa.Text)
    description: Mapped[str] = mapped_column(sa.Text)
    triggers: Mapped[str] = mapped_column(sa.Text)
    body: Mapped[str] = mapped_column(sa.Text)
    indexed_at: Mapped[datetime]

    __table_args__ = (
        sa.Index("ix_search_documents_scope", "workspace", "agent"),
        sa.CheckConstraint("version >= 1", name="version_positive"),
    )


class SearchCursor(Base):
    """The last outbox event of a workspace that the search index has taken in."""

    __tablename__ = "search_cursors"

    workspace: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    last_event_id: Mapped[int] = mapped_column(sa.BigInteger)
    updated_at: Mapped[datetime]
