"""revocations: yanked versions, the `revocation` origin, when a target was last seen

- `revocations`: a version an owner or an admin revoked, with its kind and reason, who
  revoked it (declared and authenticated), when, the registry's signed statement, and
  its withdrawal (`unyanked_at`, `unyanked_by`, signed too) (docs/revocation.md).
- `versions.origin` may be `revocation`: the version that moves a head off a revoked one.
- `materialization_targets.seen_at`: when the target's host last asked for its desired
  state (to a granularity), for `skillreg status --revoked`.

SQLite cannot alter a CHECK constraint, and rebuilding `versions` would cascade deletes
through the rows that reference it (foreign keys are on): the origin list is widened in
the stored table definition instead, the procedure SQLite documents for changes that leave
every stored row valid ("ALTER TABLE", section 7).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 00:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ORIGINS: Final = (
    "'edit', 'save', 'learning', 'restore', 'import', 'marketplace_install', "
    "'marketplace_update', 'out_of_band'"
)
_WIDER: Final = f"{_ORIGINS}, 'revocation'"


def _origins(old: str, new: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint(op.f("ck_versions_origin"), "versions", type_="check")
        op.create_check_constraint(op.f("ck_versions_origin"), "versions", f"origin IN ({new})")
        return
    found = bind.execute(
        sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'versions'")
    ).scalar_one()
    if f"origin IN ({old})" not in found:
        msg = "versions.origin's CHECK is not the one this migration knows"
        raise RuntimeError(msg)
    schema_version = bind.execute(sa.text("PRAGMA schema_version")).scalar_one()
    op.execute("PRAGMA writable_schema = ON")
    bind.execute(
        sa.text("UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND name = 'versions'"),
        {"sql": found.replace(f"origin IN ({old})", f"origin IN ({new})")},
    )
    op.execute(f"PRAGMA schema_version = {int(schema_version) + 1}")
    op.execute("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    op.create_table(
        "revocations",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("agent", sa.String(length=128), nullable=False),
        sa.Column("skill_id", _ID, nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("envelope", sa.LargeBinary(), nullable=False),
        sa.Column("unyanked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unyanked_by", sa.String(length=200), nullable=True),
        sa.Column("unyank_envelope", sa.LargeBinary(), nullable=True),
        sa.CheckConstraint(
            "kind IN ('security', 'broken', 'policy')", name=op.f("ck_revocations_kind")
        ),
        sa.CheckConstraint("version >= 1", name=op.f("ck_revocations_version_positive")),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_revocations_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revocations")),
    )
    with op.batch_alter_table("revocations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_revocations_workspace_skill_id_version",
            ["workspace", "skill_id", "version"],
            unique=False,
        )
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.add_column(sa.Column("seen_at", sa.DateTime(timezone=True), nullable=True))
    _origins(_ORIGINS, _WIDER)


def downgrade() -> None:
    made = op.get_bind().execute(
        sa.text("SELECT count(*) FROM versions WHERE origin = 'revocation'")
    )
    if made.scalar_one():
        # Versions are history (invariant I7): a downgrade does not delete them.
        msg = "versions with origin 'revocation' exist; this revision cannot be undone"
        raise RuntimeError(msg)
    _origins(_WIDER, _ORIGINS)
    with op.batch_alter_table("materialization_targets", schema=None) as batch_op:
        batch_op.drop_column("seen_at")
    with op.batch_alter_table("revocations", schema=None) as batch_op:
        batch_op.drop_index("ix_revocations_workspace_skill_id_version")
    op.drop_table("revocations")
