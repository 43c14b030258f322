"""materializations

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 18:54:08.129404
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "materialization_targets",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("target_id", sa.String(length=36), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("mode", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "mode IN ('link', 'copy')", name=op.f("ck_materialization_targets_mode")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_materialization_targets")),
        sa.UniqueConstraint("target_id", name=op.f("uq_materialization_targets_target_id")),
    )
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.create_index(
            "ix_materialization_targets_scope", ["workspace", "agent"], unique=False
        )

    op.create_table(
        "materializations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("target_id", sa.String(length=36), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=True),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "manifest_hash IS NULL OR (length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = '')",
            name=op.f("ck_materializations_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "outcome IN ('applied', 'removed', 'failed')", name=op.f("ck_materializations_outcome")
        ),
        sa.CheckConstraint(
            "version IS NULL OR version >= 1", name=op.f("ck_materializations_version_positive")
        ),
        sa.ForeignKeyConstraint(
            ["target_id"],
            ["materialization_targets.target_id"],
            name=op.f("fk_materializations_target_id_materialization_targets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_materializations")),
        sa.UniqueConstraint(
            "target_id",
            "workspace",
            "agent",
            "slug",
            name=op.f("uq_materializations_target_id_workspace_agent_slug"),
        ),
    )
    with op.batch_alter_table("materializations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_materializations_scope_slug", ["workspace", "agent", "slug"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("materializations", schema=None) as batch_op:
        batch_op.drop_index("ix_materializations_scope_slug")

    op.drop_table("materializations")
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.drop_index("ix_materialization_targets_scope")

    op.drop_table("materialization_targets")
