"""ended_sessions: console sessions signed out before their cookie expired

Signing out of the console records the session id, so that a copy of the cookie taken
before is refused by every process sharing the database (docs/console.md). `ends_at` is
when the cookie expires anyway; rows past it are deleted by later sign-outs.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 21:55:14.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ended_sessions",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_ended_sessions")),
    )
    with op.batch_alter_table("ended_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ended_sessions_ends_at"), ["ends_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ended_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ended_sessions_ends_at"))
    op.drop_table("ended_sessions")
