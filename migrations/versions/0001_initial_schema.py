"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 18:29:19.554252
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("touched_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(digest) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(digest, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_blobs_digest_hex"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'live', 'deleting')", name=op.f("ck_blobs_status")
        ),
        sa.CheckConstraint("size >= 0", name=op.f("ck_blobs_size")),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_blobs")),
    )
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.create_index("ix_blobs_gc", ["status", "touched_at"], unique=False)

    op.create_table(
        "manifests",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("total_size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_manifests_hash_hex"),
        ),
        sa.CheckConstraint("file_count >= 1", name=op.f("ck_manifests_file_count")),
        sa.CheckConstraint("total_size >= 0", name=op.f("ck_manifests_total_size")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_manifests")),
        sa.UniqueConstraint("workspace", "hash", name=op.f("uq_manifests_workspace_hash")),
    )
    op.create_table(
        "scan_results",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("scanner", sa.String(length=64), nullable=False),
        sa.Column("scanned_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(digest) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(digest, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_scan_results_digest_hex"),
        ),
        sa.PrimaryKeyConstraint("digest", "scanner", name=op.f("pk_scan_results")),
    )
    op.create_table(
        "skills",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("head", sa.Integer(), nullable=False),
        sa.Column("head_size", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("auto_improve", sa.Boolean(), nullable=False),
        sa.Column("learning_paused", sa.Boolean(), nullable=False),
        sa.Column("use_paused", sa.Boolean(), nullable=False),
        sa.Column("pause_reason", sa.Text(), nullable=True),
        sa.Column("baseline_listing", sa.String(length=200), nullable=True),
        sa.Column("baseline_version", sa.Integer(), nullable=True),
        sa.Column("baseline_manifest_hash", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('saved', 'installed')", name=op.f("ck_skills_kind")),
        sa.CheckConstraint(
            "state IN ('active', 'archived', 'deleted')", name=op.f("ck_skills_state")
        ),
        sa.CheckConstraint("head >= 1", name=op.f("ck_skills_head_positive")),
        sa.CheckConstraint("head_size >= 0", name=op.f("ck_skills_head_size")),
        sa.CheckConstraint("length(slug) BETWEEN 1 AND 64", name=op.f("ck_skills_slug_length")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skills")),
    )
    with op.batch_alter_table("skills", schema=None) as batch_op:
        batch_op.create_index(
            "ix_skills_capacity", ["workspace", "agent", "kind", "state"], unique=False
        )
        batch_op.create_index(
            "uq_skills_live_slug",
            ["workspace", "agent", "slug"],
            unique=True,
            sqlite_where=sa.text("state <> 'deleted'"),
            postgresql_where=sa.text("state <> 'deleted'"),
        )

    op.create_table(
        "blob_claims",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("write_id", sa.String(length=36), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["digest"], ["blobs.digest"], name=op.f("fk_blob_claims_digest_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_blob_claims")),
        sa.UniqueConstraint("write_id", "digest", name=op.f("uq_blob_claims_write_id_digest")),
    )
    with op.batch_alter_table("blob_claims", schema=None) as batch_op:
        batch_op.create_index(
            "ix_blob_claims_digest_expires", ["digest", "expires_at"], unique=False
        )
        batch_op.create_index("ix_blob_claims_expires_at", ["expires_at"], unique=False)

    op.create_table(
        "events",
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
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("manifest_hash", sa.String(length=64), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_events_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_workspace_id", ["workspace", "id"], unique=False)

    op.create_table(
        "manifest_entries",
        sa.Column(
            "manifest_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("path", sa.String(length=2048), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("executable", sa.Boolean(), nullable=False),
        sa.CheckConstraint("size >= 0", name=op.f("ck_manifest_entries_size")),
        sa.ForeignKeyConstraint(
            ["digest"], ["blobs.digest"], name=op.f("fk_manifest_entries_digest_blobs")
        ),
        sa.ForeignKeyConstraint(
            ["manifest_id"],
            ["manifests.id"],
            name=op.f("fk_manifest_entries_manifest_id_manifests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("manifest_id", "path", name=op.f("pk_manifest_entries")),
    )
    with op.batch_alter_table("manifest_entries", schema=None) as batch_op:
        batch_op.create_index("ix_manifest_entries_digest", ["digest"], unique=False)

    op.create_table(
        "versions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("parent", sa.Integer(), nullable=True),
        sa.Column("origin", sa.String(length=32), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("restored_from", sa.Integer(), nullable=True),
        sa.Column(
            "manifest_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("total_size", sa.BigInteger(), nullable=False),
        sa.Column("write_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_versions_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "origin IN ('edit', 'save', 'learning', 'restore', 'import', 'marketplace_install', 'marketplace_update', 'out_of_band')",
            name=op.f("ck_versions_origin"),
        ),
        sa.CheckConstraint("number >= 1", name=op.f("ck_versions_number_positive")),
        sa.CheckConstraint(
            "parent IS NULL OR parent < number", name=op.f("ck_versions_parent_before")
        ),
        sa.ForeignKeyConstraint(
            ["manifest_id"], ["manifests.id"], name=op.f("fk_versions_manifest_id_manifests")
        ),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_versions_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_versions")),
        sa.UniqueConstraint("skill_id", "number", name=op.f("uq_versions_skill_id_number")),
        sa.UniqueConstraint("write_id", name=op.f("uq_versions_write_id")),
    )
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.create_index("ix_versions_manifest_id", ["manifest_id"], unique=False)

    op.create_table(
        "version_sources",
        sa.Column(
            "version_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["versions.id"],
            name=op.f("fk_version_sources_version_id_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("version_id", "source", name=op.f("pk_version_sources")),
    )
    with op.batch_alter_table("version_sources", schema=None) as batch_op:
        batch_op.create_index(
            "ix_version_sources_workspace_source", ["workspace", "source"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("version_sources", schema=None) as batch_op:
        batch_op.drop_index("ix_version_sources_workspace_source")

    op.drop_table("version_sources")
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.drop_index("ix_versions_manifest_id")

    op.drop_table("versions")
    with op.batch_alter_table("manifest_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_manifest_entries_digest")

    op.drop_table("manifest_entries")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_workspace_id")

    op.drop_table("events")
    with op.batch_alter_table("blob_claims", schema=None) as batch_op:
        batch_op.drop_index("ix_blob_claims_expires_at")
        batch_op.drop_index("ix_blob_claims_digest_expires")

    op.drop_table("blob_claims")
    with op.batch_alter_table("skills", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_skills_live_slug",
            sqlite_where=sa.text("state <> 'deleted'"),
            postgresql_where=sa.text("state <> 'deleted'"),
        )
        batch_op.drop_index("ix_skills_capacity")

    op.drop_table("skills")
    op.drop_table("scan_results")
    op.drop_table("manifests")
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.drop_index("ix_blobs_gc")

    op.drop_table("blobs")
