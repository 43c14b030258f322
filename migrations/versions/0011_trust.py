"""trust: signing keys, each version's attestation, the principal who wrote it

- `signing_keys`: the public keys the registry signs with, with their validity (the
  private key never enters the database).
- `attestations`: one DSSE envelope per version (an in-toto Statement signed with
  Ed25519), its SHA-256 and the package's canonical digest, written in the transaction
  that publishes the version.
- `versions.principal`: who really wrote a version (`token:<id>`, `os:<user>`), beside
  the declared `actor`. Null for the versions written before it.

Versions published before this revision have no attestation; `skillreg verify` says so.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 19:09:40.985293
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _hex64(column: str) -> str:
    # The model's `hex64_check`, written out: a migration never imports the model.
    stripped = column
    for digit in "0123456789abcdef":
        stripped = f"replace({stripped}, '{digit}', '')"
    return f"length({column}) = 64 AND {stripped} = ''"


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("key_id", sa.String(length=64), nullable=False),
        sa.Column("public_key", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(_hex64("key_id"), name=op.f("ck_signing_keys_key_id_hex")),
        sa.CheckConstraint(_hex64("public_key"), name=op.f("ck_signing_keys_public_key_hex")),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_signing_keys")),
    )
    op.create_table(
        "attestations",
        sa.Column("version_id", _ID, nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("key_id", sa.String(length=64), nullable=False),
        sa.Column("package_digest", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("envelope", sa.LargeBinary(), nullable=False),
        sa.CheckConstraint(_hex64("digest"), name=op.f("ck_attestations_digest_hex")),
        sa.CheckConstraint(
            _hex64("package_digest"), name=op.f("ck_attestations_package_digest_hex")
        ),
        sa.ForeignKeyConstraint(
            ["key_id"],
            ["signing_keys.key_id"],
            name=op.f("fk_attestations_key_id_signing_keys"),
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["versions.id"],
            name=op.f("fk_attestations_version_id_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("version_id", name=op.f("pk_attestations")),
    )
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("principal", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.drop_column("principal")
    op.drop_table("attestations")
    op.drop_table("signing_keys")
