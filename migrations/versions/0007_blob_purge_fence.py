"""blob purge fence

A `deleting` row whose object GC is deleting outside any transaction carries the instant
its fence expires (docs/gc.md). A nullable column: SQLite adds it in place, without
rebuilding a table that other tables reference.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("purge_expires_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.drop_column("purge_expires_at")
