"""History rows: proposals, approvals, source exclusions and revocations (docs/history.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import (
    ORIGINS,
    REVOCATION_KINDS,
    Base,
    BigId,
    hex64_check,
    in_check,
)

PROPOSAL_STATUSES = ("open", "stale", "applied", "rejected", "superseded", "withdrawn")
PENDING_PROPOSAL_STATUSES = ("open", "stale")
PROPOSAL_DECISIONS = ("apply", "alternative", "keep_current")
# What a proposal asks the owner to decide (docs/history.md, "One list of decisions"):
# an automated change, one that would bring back a suppressed behaviour, a marketplace
# update of an edited copy, or an owner's draft kept after a lost compare-and-swap.
PROPOSAL_KINDS = ("learning", "suppressed", "update", "draft")


class Proposal(Base):
    """A complete candidate package waiting for the owner's decision.

    `manifest_id` is a real foreign key: the manifest and its entries are what keep the
    proposal's blobs alive (GC counts every manifest entry as a reference, and retention
    deletes only manifests no foreign-key-holding row names). `status`: `open` (its base is
    the head), `stale` (the head moved after it was made; it can no longer be applied),
    `applied`, `rejected` (the owner kept the current version), `superseded` (a newer
    proposal replaced it), `withdrawn` (its skill was deleted).
    """

    __tablename__ = "proposals"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    base_version: Mapped[int] = mapped_column(sa.Integer)
    manifest_id: Mapped[int] = mapped_column(sa.ForeignKey("manifests.id"))
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    file_count: Mapped[int] = mapped_column(sa.Integer)
    total_size: Mapped[int] = mapped_column(sa.BigInteger)
    origin: Mapped[str] = mapped_column(sa.String(32))
    actor: Mapped[str] = mapped_column(sa.String(200))
    message: Mapped[str] = mapped_column(sa.Text, default="")
    # Carried to the version the proposal becomes when applied.
    sources: Mapped[list[str]] = mapped_column(sa.JSON, default=list)
    approvals: Mapped[list[dict[str, Any]]] = mapped_column(sa.JSON, default=list)
    # Marketplace (docs/marketplace.md): the listing version an update proposal brings; the
    # copy's baseline moves to it when the proposal is decided.
    baseline: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    status: Mapped[str] = mapped_column(sa.String(16), default="open")
    kind: Mapped[str] = mapped_column(sa.String(16), default="learning")
    # The suppression a `suppressed` proposal would lift if applied.
    suppression_id: Mapped[int | None] = mapped_column(sa.ForeignKey("suppressions.id"))
    decision: Mapped[str | None] = mapped_column(sa.String(16))
    decided_by: Mapped[str | None] = mapped_column(sa.String(200))
    decided_at: Mapped[datetime | None]
    applied_version: Mapped[int | None] = mapped_column(sa.Integer)
    # The write that recorded it: a write whose reply was lost finds its proposal by it.
    write_id: Mapped[str | None] = mapped_column(sa.String(36), unique=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        # One pending (open or stale) proposal per skill: a newer one supersedes it.
        sa.Index(
            "uq_proposals_pending",
            "skill_id",
            unique=True,
            sqlite_where=sa.text("status IN ('open', 'stale')"),
            postgresql_where=sa.text("status IN ('open', 'stale')"),
        ),
        sa.Index("ix_proposals_workspace_status", "workspace", "status"),
        sa.Index("ix_proposals_manifest_id", "manifest_id"),
        sa.CheckConstraint(in_check("status", PROPOSAL_STATUSES), name="status"),
        sa.CheckConstraint(in_check("kind", PROPOSAL_KINDS), name="kind"),
        sa.CheckConstraint(
            f"decision IS NULL OR {in_check('decision', PROPOSAL_DECISIONS)}", name="decision"
        ),
        sa.CheckConstraint(in_check("origin", ORIGINS), name="origin"),
        sa.CheckConstraint("base_version >= 1", name="base_positive"),
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
        # Retention keeps the base version of every pending proposal (docs/gc.md).
        {
            "info": {
                "pins_versions": {
                    "skill": "skill_id",
                    "version": "base_version",
                    "where": "status IN ('open', 'stale')",
                }
            }
        },
    )


class ContentApproval(Base):
    """An owner's exception to the content check, stored with the version it applies to.

    Exact match only: the keyed hash of the value (never the value), the path it is in and
    how many occurrences of it in that file are approved.
    """

    __tablename__ = "content_approvals"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    version_id: Mapped[int] = mapped_column(sa.ForeignKey("versions.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(sa.String(2048))
    value_hash: Mapped[str] = mapped_column(sa.String(64))
    pattern_class: Mapped[str] = mapped_column(sa.String(64))
    occurrences: Mapped[int] = mapped_column(sa.Integer)
    actor: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("version_id", "path", "value_hash"),
        sa.CheckConstraint("occurrences >= 1", name="occurrences"),
        sa.CheckConstraint(hex64_check("value_hash"), name="value_hash_hex"),
    )


class SourceExclusion(Base):
    """A source excluded from a workspace: every version that lists it is unavailable."""

    __tablename__ = "source_exclusions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    source: Mapped[str] = mapped_column(sa.String(500))
    actor: Mapped[str] = mapped_column(sa.String(200))
    reason: Mapped[str] = mapped_column(sa.Text, default="")
    created_at: Mapped[datetime]

    __table_args__ = (sa.UniqueConstraint("workspace", "source"),)


class Revocation(Base):
    """A version an owner or an admin revoked (yanked), with why, and whether it was taken back.

    Written in the locked transaction that revokes (with the head's move when the version
    was the head); `envelope` is the registry's signed statement of the revocation, and
    `unyank_envelope` that of its withdrawal. A version has at most one revocation in
    force (`unyanked_at` null), checked under the workspace lock; withdrawn ones stay as
    history.
    """

    __tablename__ = "revocations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    slug: Mapped[str] = mapped_column(sa.String(64))
    version: Mapped[int] = mapped_column(sa.Integer)
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    kind: Mapped[str] = mapped_column(sa.String(16))
    reason: Mapped[str] = mapped_column(sa.Text)
    actor: Mapped[str] = mapped_column(sa.String(200))
    principal: Mapped[str] = mapped_column(sa.String(200))
    revoked_at: Mapped[datetime]
    envelope: Mapped[bytes] = mapped_column(sa.LargeBinary)
    unyanked_at: Mapped[datetime | None]
    unyanked_by: Mapped[str | None] = mapped_column(sa.String(200))
    unyank_envelope: Mapped[bytes | None] = mapped_column(sa.LargeBinary)

    __table_args__ = (
        sa.Index("ix_revocations_workspace_skill_id_version", "workspace", "skill_id", "version"),
        sa.CheckConstraint(in_check("kind", REVOCATION_KINDS), name="kind"),
        sa.CheckConstraint("version >= 1", name="version_positive"),
    )
