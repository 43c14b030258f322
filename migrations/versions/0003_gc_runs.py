"""gc runs: one row per garbage-collection run (issue 6)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 18:53:37.194869
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gc_runs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("grace_seconds", sa.Float(), nullable=False),
        sa.Column("claims_expired", sa.BigInteger(), nullable=False),
        sa.Column("versions_pruned", sa.BigInteger(), nullable=False),
        sa.Column("blobs_reclaimed", sa.BigInteger(), nullable=False),
        sa.Column("bytes_reclaimed", sa.BigInteger(), nullable=False),
        sa.Column("untracked_reclaimed", sa.BigInteger(), nullable=False),
        sa.Column("store_objects", sa.BigInteger(), nullable=True),
        sa.Column("store_bytes", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "outcome IN ('running', 'finished', 'failed')", name=op.f("ck_gc_runs_outcome")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gc_runs")),
    )
    with op.batch_alter_table("gc_runs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_gc_runs_outcome_finished_at", ["outcome", "finished_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("gc_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_gc_runs_outcome_finished_at")

    op.drop_table("gc_runs")
