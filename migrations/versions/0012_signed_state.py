"""signed state: key endorsements, and each target's trust state as its host reports it

- `signing_keys.endorsement`: the DSSE envelope in which the key a new key replaced
  vouches for it, so hosts that trust the old key follow a rotation (docs/trust.md).
- `materialization_targets.trust_*`: what a syncing host last said of the desired state
  it was served: verified, stale (since when) or refused (why), and the sequence applied.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05 21:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("signing_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("endorsement", sa.LargeBinary(), nullable=True))
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trust_state", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("trust_since", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("trust_detail", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("trust_seq", sa.BigInteger(), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_materialization_targets_trust_state"),
            "trust_state IN ('verified', 'stale', 'refused')",
        )


def downgrade() -> None:
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_materialization_targets_trust_state"), type_="check")
        batch_op.drop_column("trust_seq")
        batch_op.drop_column("trust_detail")
        batch_op.drop_column("trust_since")
        batch_op.drop_column("trust_state")
    with op.batch_alter_table("signing_keys", schema=None) as batch_op:
        batch_op.drop_column("endorsement")
