"""rescan: the rule set that checked each package, the decisions a rescan opens, job progress

`package_checks` (per workspace and package digest: the content rule set that last checked
it), `content_reviews` (a blocking finding a rescan found in a head: the owner's decision),
`rescan_rulesets` (the rule sets a whole-registry rescan finished under) and
`jobs.progress` (what a long job has done so far). docs/write-path.md, "Rescan when the
rules change".

Revision ID: 0017
Revises: 0014
Create Date: 2026-12-06 00:20:01.605613
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "package_checks",
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("package_digest", sa.String(length=64), nullable=False),
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("blocked_heads", sa.Integer(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_package_checks_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "length(package_digest) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(package_digest, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_package_checks_package_digest_hex"),
        ),
        sa.CheckConstraint(
            "findings >= 0 AND blocked_heads >= 0", name=op.f("ck_package_checks_counts")
        ),
        sa.PrimaryKeyConstraint("workspace", "manifest_hash", name=op.f("pk_package_checks")),
    )
    op.create_table(
        "rescan_rulesets",
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("ruleset", name=op.f("pk_rescan_rulesets")),
    )
    op.create_table(
        "content_reviews",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("skill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("package_digest", sa.String(length=64), nullable=False),
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("findings", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("paused_use", sa.Boolean(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_by", sa.String(length=200), nullable=True),
        sa.CheckConstraint(
            "length(manifest_hash) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(manifest_hash, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_content_reviews_manifest_hash_hex"),
        ),
        sa.CheckConstraint(
            "length(package_digest) = 64 AND replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(package_digest, '0', ''), '1', ''), '2', ''), '3', ''), '4', ''), '5', ''), '6', ''), '7', ''), '8', ''), '9', ''), 'a', ''), 'b', ''), 'c', ''), 'd', ''), 'e', ''), 'f', '') = ''",
            name=op.f("ck_content_reviews_package_digest_hex"),
        ),
        sa.CheckConstraint(
            "status IN ('open', 'approved', 'superseded', 'withdrawn')",
            name=op.f("ck_content_reviews_status"),
        ),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name=op.f("fk_content_reviews_skill_id_skills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_reviews")),
    )
    with op.batch_alter_table("content_reviews", schema=None) as batch_op:
        batch_op.create_index("ix_content_reviews_skill_id", ["skill_id"], unique=False)
        batch_op.create_index(
            "ix_content_reviews_workspace_status", ["workspace", "status", "id"], unique=False
        )

    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("progress", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("progress")

    with op.batch_alter_table("content_reviews", schema=None) as batch_op:
        batch_op.drop_index("ix_content_reviews_workspace_status")
        batch_op.drop_index("ix_content_reviews_skill_id")

    op.drop_table("content_reviews")
    op.drop_table("rescan_rulesets")
    op.drop_table("package_checks")
