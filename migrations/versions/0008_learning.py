"""learning: suppressions, pending writes, loads, the SKILL.md index, proposal kinds

Also turns automatic improvements off on existing imported and installed skills whose
owner never turned them on (docs/history.md, "Learning writes": such skills need the
owner's decision before an automated change).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 16:23:39.359416
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "loads",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("conversation", sa.String(length=200), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_loads_version_positive")),
        sa.ForeignKeyConstraint(["skill_id"], ["skills.id"], name=op.f("fk_loads_skill_id_skills")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_loads")),
        sa.UniqueConstraint(
            "skill_id",
            "version",
            "conversation",
            name=op.f("uq_loads_skill_id_version_conversation"),
        ),
        info={"pins_versions": {"skill": "skill_id", "version": "version"}},
    )
    with op.batch_alter_table("loads", schema=None) as batch_op:
        batch_op.create_index(
            "ix_loads_workspace_conversation", ["workspace", "conversation"], unique=False
        )

    op.create_table(
        "pending_writes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("expected", sa.String(length=16), nullable=False),
        sa.Column(
            "manifest_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
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
        sa.Column("outcome", sa.JSON(), nullable=True),
        sa.Column("write_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_pending_writes_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "origin IN ('edit', 'save', 'learning', 'restore', 'import', 'marketplace_install', 'marketplace_update', 'out_of_band')",
            name=op.f("ck_pending_writes_origin"),
        ),
        sa.CheckConstraint(
            "status IN ('waiting', 'applied', 'proposed', 'dropped', 'failed')",
            name=op.f("ck_pending_writes_status"),
        ),
        sa.ForeignKeyConstraint(
            ["manifest_id"], ["manifests.id"], name=op.f("fk_pending_writes_manifest_id_manifests")
        ),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_pending_writes_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pending_writes")),
        sa.UniqueConstraint("write_id", name=op.f("uq_pending_writes_write_id")),
    )
    with op.batch_alter_table("pending_writes", schema=None) as batch_op:
        batch_op.create_index("ix_pending_writes_manifest_id", ["manifest_id"], unique=False)
        batch_op.create_index(
            "ix_pending_writes_workspace_status", ["workspace", "status", "id"], unique=False
        )

    op.create_table(
        "skill_md_index",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("triggers", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["digest"],
            ["blobs.digest"],
            name=op.f("fk_skill_md_index_digest_blobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_skill_md_index")),
    )
    op.create_table(
        "suppressions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("cause", sa.String(length=16), nullable=False),
        sa.Column("undone_version", sa.Integer(), nullable=False),
        sa.Column("undone_hash", sa.String(length=64), nullable=False),
        sa.Column("change", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lifted_by", sa.String(length=200), nullable=True),
        sa.CheckConstraint("cause IN ('restore', 'delete')", name=op.f("ck_suppressions_cause")),
        sa.CheckConstraint(
            "length(undone_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(undone_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_suppressions_undone_hash_hex"),
        ),
        sa.CheckConstraint("status IN ('active', 'lifted')", name=op.f("ck_suppressions_status")),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_suppressions_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suppressions")),
    )
    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_suppressions_scope_slug", ["workspace", "agent", "slug", "status"], unique=False
        )

    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("kind", sa.String(length=16), nullable=False, server_default="learning")
        )
        batch_op.add_column(
            sa.Column(
                "suppression_id",
                sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                nullable=True,
            )
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_proposals_suppression_id_suppressions"),
            "suppressions",
            ["suppression_id"],
            ["id"],
        )
        batch_op.create_check_constraint(
            op.f("ck_proposals_kind"), "kind IN ('learning', 'suppressed', 'update', 'draft')"
        )
    # Existing proposals: a marketplace update's, an owner's kept draft, or a learning one.
    op.execute("UPDATE proposals SET kind = 'update' WHERE origin = 'marketplace_update'")
    op.execute("UPDATE proposals SET kind = 'draft' WHERE origin = 'edit'")
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.alter_column("kind", server_default=None)
    # Imported and installed skills need the owner's decision before an automated change:
    # unless their owner turned automatic improvements on, they are off from now on.
    op.execute(
        "UPDATE skills SET auto_improve = false "
        "WHERE state <> 'deleted' AND auto_improve "
        "AND (kind = 'installed' OR EXISTS (SELECT 1 FROM versions v WHERE v.skill_id = skills.id "
        "AND v.number = 1 AND v.origin = 'import')) "
        "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.skill_id = skills.id "
        "AND e.kind = 'auto_improve_on')"
    )


def downgrade() -> None:
    with op.batch_alter_table("proposals", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("ck_proposals_kind"), type_="check")
        batch_op.drop_constraint(
            batch_op.f("fk_proposals_suppression_id_suppressions"), type_="foreignkey"
        )
        batch_op.drop_column("suppression_id")
        batch_op.drop_column("kind")

    with op.batch_alter_table("suppressions", schema=None) as batch_op:
        batch_op.drop_index("ix_suppressions_scope_slug")

    op.drop_table("suppressions")
    op.drop_table("skill_md_index")
    with op.batch_alter_table("pending_writes", schema=None) as batch_op:
        batch_op.drop_index("ix_pending_writes_workspace_status")
        batch_op.drop_index("ix_pending_writes_manifest_id")

    op.drop_table("pending_writes")
    with op.batch_alter_table("loads", schema=None) as batch_op:
        batch_op.drop_index("ix_loads_workspace_conversation")

    op.drop_table("loads")
