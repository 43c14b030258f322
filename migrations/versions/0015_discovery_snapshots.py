"""discovery_snapshots: the recorded states of a scope's discovery index

Each state of a scope's Agent Skills index that was served is numbered and kept, entry by
entry, so that `/.well-known/agent-skills/v{N}.0.0/index.json` serves the same bytes
for as long as it is listed (docs/distribution.md). Entries name their version by skill
and number, without a foreign key to `versions`: a snapshot does not hold a version back
from retention; one whose versions are no longer all served is withdrawn.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 00:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _hex64(column: str) -> str:
    expr = column
    for ch in "0123456789abcdef":
        expr = f"replace({expr}, '{ch}', '')"
    return f"length({column}) = 64 AND {expr} = ''"


def upgrade() -> None:
    op.create_table(
        "discovery_snapshots",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            _hex64("fingerprint"), name=op.f("ck_discovery_snapshots_fingerprint_hex")
        ),
        sa.CheckConstraint("number >= 1", name=op.f("ck_discovery_snapshots_number_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_discovery_snapshots")),
        sa.UniqueConstraint(
            "workspace",
            "agent",
            "number",
            name=op.f("uq_discovery_snapshots_workspace_agent_number"),
        ),
    )
    op.create_table(
        "discovery_snapshot_entries",
        sa.Column("snapshot_id", _ID, nullable=False),
        sa.Column("slug", sa.String(length=128), nullable=False),
        sa.Column("skill_id", _ID, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            _hex64("manifest_hash"),
            name=op.f("ck_discovery_snapshot_entries_manifest_hash_hex"),
        ),
        sa.CheckConstraint(_hex64("sha256"), name=op.f("ck_discovery_snapshot_entries_sha256_hex")),
        sa.CheckConstraint("size >= 0", name=op.f("ck_discovery_snapshot_entries_size")),
        sa.CheckConstraint(
            "version >= 1", name=op.f("ck_discovery_snapshot_entries_version_positive")
        ),
        sa.ForeignKeyConstraint(
            ["snapshot_id"],
            ["discovery_snapshots.id"],
            name=op.f("fk_discovery_snapshot_entries_snapshot_id_discovery_snapshots"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_discovery_snapshot_entries_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("snapshot_id", "slug", name=op.f("pk_discovery_snapshot_entries")),
    )
    with op.batch_alter_table("discovery_snapshot_entries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_discovery_snapshot_entries_version", ["skill_id", "version"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("discovery_snapshot_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_discovery_snapshot_entries_version")
    op.drop_table("discovery_snapshot_entries")
    op.drop_table("discovery_snapshots")
