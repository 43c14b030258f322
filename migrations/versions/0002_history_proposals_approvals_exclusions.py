"""history proposals approvals exclusions

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 18:52:03.344828
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "source_exclusions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_source_exclusions")),
        sa.UniqueConstraint(
            "workspace", "source", name=op.f("uq_source_exclusions_workspace_source")
        ),
    )
    op.create_table(
        "proposals",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column(
            "manifest_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("total_size", sa.BigInteger(), nullable=False),
        sa.Column("origin", sa.String(length=32), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("approvals", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("applied_version", sa.Integer(), nullable=True),
        sa.Column("write_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "decision IS NULL OR decision IN ('apply', 'alternative', 'keep_current')",
            name=op.f("ck_proposals_decision"),
        ),
        sa.CheckConstraint(
            "length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_proposals_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "origin IN ('edit', 'save', 'learning', 'restore', 'import', 'marketplace_install', 'marketplace_update', 'out_of_band')",
            name=op.f("ck_proposals_origin"),
        ),
        sa.CheckConstraint(
            "status IN ('open', 'stale', 'applied', 'rejected', 'superseded', 'withdrawn')",
            name=op.f("ck_proposals_status"),
        ),
        sa.CheckConstraint("base_version >= 1", name=op.f("ck_proposals_base_positive")),
        sa.ForeignKeyConstraint(
            ["manifest_id"], ["manifests.id"], name=op.f("fk_proposals_manifest_id_manifests")
        ),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_proposals_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_proposals")),
        sa.UniqueConstraint("write_id", name=op.f("uq_proposals_write_id")),
    )
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.create_index("ix_proposals_manifest_id", ["manifest_id"], unique=False)
        batch_op.create_index(
            "ix_proposals_workspace_status", ["workspace", "status"], unique=False
        )
        batch_op.create_index(
            "uq_proposals_pending",
            ["skill_id"],
            unique=True,
            sqlite_where=sa.text("status IN ('open', 'stale')"),
            postgresql_where=sa.text("status IN ('open', 'stale')"),
        )

    op.create_table(
        "content_approvals",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column(
            "version_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("path", sa.String(length=2048), nullable=False),
        sa.Column("value_hash", sa.String(length=64), nullable=False),
        sa.Column("pattern_class", sa.String(length=64), nullable=False),
        sa.Column("occurrences", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(value_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(value_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_content_approvals_value_hash_hex"),
        ),
        sa.CheckConstraint("occurrences >= 1", name=op.f("ck_content_approvals_occurrences")),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["versions.id"],
            name=op.f("fk_content_approvals_version_id_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_approvals")),
        sa.UniqueConstraint(
            "version_id",
            "path",
            "value_hash",
            name=op.f("uq_content_approvals_version_id_path_value_hash"),
        ),
    )


def downgrade() -> None:
    op.drop_table("content_approvals")
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_proposals_pending",
            sqlite_where=sa.text("status IN ('open', 'stale')"),
            postgresql_where=sa.text("status IN ('open', 'stale')"),
        )
        batch_op.drop_index("ix_proposals_workspace_status")
        batch_op.drop_index("ix_proposals_manifest_id")

    op.drop_table("proposals")
    op.drop_table("source_exclusions")
