"""discovery and search

The discovery settings of a scope, the skills it publishes one by one, and the cached
digests of discovery artifacts; the search documents, the indexer's cursor per workspace,
and the dialect's full-text index over the documents:

- SQLite: an FTS5 table (external content: the rows of `search_documents`, rowid = skill
  id), with the Porter stemmer over the `unicode61` tokenizer (diacritics kept, as
  PostgreSQL's `english` configuration keeps them), and three triggers that keep it in
  step with `search_documents`.
- PostgreSQL: a stored, generated `tsvector` column (`english`; weights A name, B
  description and triggers, D body) and a GIN index on it, without a pending list.

Neither is part of the SQLAlchemy model (registry/db/tables/search.py says why);
migrations/env.py keeps `alembic check` away from them.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 17:12:40.327472
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _hex64(column: str) -> str:
    expr = column
    for ch in "0123456789abcdef":
        expr = f"replace({expr}, '{ch}', '')"
    return f"length({column}) = 64 AND {expr} = ''"


_FTS_INSERT = (
    "INSERT INTO search_fts(rowid, name, description, triggers, body) "
    "VALUES (new.skill_id, new.name, new.description, new.triggers, new.body);"
)
_FTS_DELETE = (
    "INSERT INTO search_fts(search_fts, rowid, name, description, triggers, body) "
    "VALUES ('delete', old.skill_id, old.name, old.description, old.triggers, old.body);"
)


def _sqlite_full_text() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE search_fts USING fts5(name, description, triggers, body, "
        "content='search_documents', content_rowid='skill_id', "
        "tokenize='porter unicode61 remove_diacritics 0')"
    )
    op.execute(
        "CREATE TRIGGER search_documents_ai AFTER INSERT ON search_documents "
        f"BEGIN {_FTS_INSERT} END"
    )
    op.execute(
        "CREATE TRIGGER search_documents_ad AFTER DELETE ON search_documents "
        f"BEGIN {_FTS_DELETE} END"
    )
    op.execute(
        "CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents "
        f"BEGIN {_FTS_DELETE} {_FTS_INSERT} END"
    )


def _postgresql_full_text() -> None:
    op.execute(
        "ALTER TABLE search_documents ADD COLUMN document tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('english', name), 'A') || "
        "setweight(to_tsvector('english', description), 'B') || "
        "setweight(to_tsvector('english', triggers), 'B') || "
        "setweight(to_tsvector('english', body), 'D')) STORED"
    )
    # No pending list: documents are written by the indexer, off the write path, and a
    # search should not scan a list of recent inserts that only VACUUM folds in.
    op.execute(
        "CREATE INDEX ix_search_documents_document ON search_documents "
        "USING gin (document) WITH (fastupdate = off)"
    )


def upgrade() -> None:
    op.create_table(
        "discovery_scopes",
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("everything", sa.Boolean(), nullable=False),
        sa.Column("public", sa.Boolean(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.CheckConstraint("revision >= 1", name=op.f("ck_discovery_scopes_revision_positive")),
        sa.PrimaryKeyConstraint("workspace", "agent", name=op.f("pk_discovery_scopes")),
    )
    op.create_table(
        "discovery_skills",
        sa.Column("skill_id", _ID, autoincrement=False, nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_discovery_skills_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("skill_id", name=op.f("pk_discovery_skills")),
    )
    with op.batch_alter_table("discovery_skills", schema=None) as batch_op:
        batch_op.create_index("ix_discovery_skills_scope", ["workspace", "agent"], unique=False)
    op.create_table(
        "discovery_artifacts",
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            _hex64("manifest_hash"), name=op.f("ck_discovery_artifacts_manifest_hash_hex")
        ),
        sa.CheckConstraint(_hex64("sha256"), name=op.f("ck_discovery_artifacts_sha256_hex")),
        sa.CheckConstraint("size >= 0", name=op.f("ck_discovery_artifacts_size")),
        sa.PrimaryKeyConstraint("manifest_hash", "format", name=op.f("pk_discovery_artifacts")),
    )
    op.create_table(
        "search_documents",
        sa.Column("skill_id", _ID, autoincrement=False, nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("triggers", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_search_documents_version_positive")),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_search_documents_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("skill_id", name=op.f("pk_search_documents")),
    )
    with op.batch_alter_table("search_documents", schema=None) as batch_op:
        batch_op.create_index("ix_search_documents_scope", ["workspace", "agent"], unique=False)
    op.create_table(
        "search_cursors",
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("last_event_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("workspace", name=op.f("pk_search_cursors")),
    )
    if op.get_context().dialect.name == "postgresql":
        _postgresql_full_text()
    else:
        _sqlite_full_text()


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for trigger in ("search_documents_ai", "search_documents_ad", "search_documents_au"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE search_fts")
    op.drop_table("search_cursors")
    with op.batch_alter_table("search_documents", schema=None) as batch_op:
        batch_op.drop_index("ix_search_documents_scope")
    op.drop_table("search_documents")
    op.drop_table("discovery_artifacts")
    with op.batch_alter_table("discovery_skills", schema=None) as batch_op:
        batch_op.drop_index("ix_discovery_skills_scope")
    op.drop_table("discovery_skills")
    op.drop_table("discovery_scopes")
