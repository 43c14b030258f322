"""The core of the model: skills, versions, manifests, blobs and claims, the outbox."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from registry.db.tables.base import (
    BLOB_STATUSES,
    SKILL_KINDS,
    SKILL_STATES,
    VERSION_ORIGINS,
    Base,
    BigId,
    hex64_check,
    in_check,
)


class Skill(Base):
    """A skill in a scope: its head version, state, control flags and marketplace baseline."""

    __tablename__ = "skills"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    # The slug's look-alike skeleton (registry/domain/skeleton.py). Null only for a skill
    # whose skeleton another live skill of its scope already had when migration 0013 filled
    # the column in: the older skill keeps it (docs/package-format.md, "Look-alike slugs").
    slug_skeleton: Mapped[str | None] = mapped_column(sa.Text)
    kind: Mapped[str] = mapped_column(sa.String(16), default="saved")
    head: Mapped[int] = mapped_column(sa.Integer)
    head_size: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    state: Mapped[str] = mapped_column(sa.String(16), default="active")
    auto_improve: Mapped[bool] = mapped_column(sa.Boolean, default=True)
    learning_paused: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    use_paused: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    pause_reason: Mapped[str | None] = mapped_column(sa.Text)
    baseline_listing: Mapped[str | None] = mapped_column(sa.String(200))
    baseline_version: Mapped[int | None] = mapped_column(sa.Integer)
    baseline_manifest_hash: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]

    __table_args__ = (
        # A slug is unique among the skills of a scope that are not deleted; a deleted
        # skill keeps its history and frees the slug for a new one.
        sa.Index(
            "uq_skills_live_slug",
            "workspace",
            "agent",
            "slug",
            unique=True,
            sqlite_where=sa.text("state <> 'deleted'"),
            postgresql_where=sa.text("state <> 'deleted'"),
        ),
        # Nor may two live skills of a scope have slugs that look alike: one skeleton each.
        sa.Index(
            "uq_skills_live_skeleton",
            "workspace",
            "agent",
            "slug_skeleton",
            unique=True,
            sqlite_where=sa.text("state <> 'deleted'"),
            postgresql_where=sa.text("state <> 'deleted'"),
        ),
        # Capacity counts live skills of one budget in a scope.
        sa.Index("ix_skills_capacity", "workspace", "agent", "kind", "state"),
        sa.CheckConstraint(in_check("state", SKILL_STATES), name="state"),
        sa.CheckConstraint(in_check("kind", SKILL_KINDS), name="kind"),
        sa.CheckConstraint("head >= 1", name="head_positive"),
        sa.CheckConstraint("head_size >= 0", name="head_size"),
        sa.CheckConstraint("length(slug) BETWEEN 1 AND 64", name="slug_length"),
    )


class ScopeCount(Base):
    """How many skills of one capacity budget (`kind`) a scope holds that are not deleted.

    Kept by triggers on `skills` (migration 0010), in the transaction that changes a skill,
    so the capacity check reads one row instead of counting the scope's skills under the
    workspace lock. `skillreg fsck` compares it with a count of `skills`.
    """

    __tablename__ = "scope_counts"

    workspace: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    agent: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    kind: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    live_skills: Mapped[int] = mapped_column(sa.BigInteger)


class WorkspaceUsage(Base):
    """The bytes of the head packages of a workspace's skills that are not deleted.

    Kept by triggers on `skills` (migration 0010) like `ScopeCount`: the quota check reads
    one row instead of summing every skill of the workspace under its lock.
    """

    __tablename__ = "workspace_usage"

    workspace: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    live_bytes: Mapped[int] = mapped_column(sa.BigInteger)


class Blob(Base):
    """One stored object, global across workspaces, with its claim and GC bookkeeping.

    `status`: `pending` (claimed by a write, upload not yet confirmed by a commit),
    `live` (a committed write confirmed it is stored), `deleting` (GC decided to remove it;
    a writer that wants the digest again resurrects it to `pending` and uploads again).

    `purge_expires_at` is set only on a `deleting` row whose object a GC run is deleting
    right now, outside any transaction (the row is *fenced*): until that instant no claim
    resurrects the row, and the run that set it is the only one that deletes it
    (docs/gc.md, "The protocol").
    """

    __tablename__ = "blobs"

    digest: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    size: Mapped[int] = mapped_column(sa.BigInteger)
    status: Mapped[str] = mapped_column(sa.String(16), default="pending")
    created_at: Mapped[datetime]
    touched_at: Mapped[datetime]
    purge_expires_at: Mapped[datetime | None]

    __table_args__ = (
        sa.CheckConstraint(hex64_check("digest"), name="digest_hex"),
        sa.CheckConstraint("size >= 0", name="size"),
        sa.CheckConstraint(in_check("status", BLOB_STATUSES), name="status"),
        sa.Index("ix_blobs_gc", "status", "touched_at"),
    )


class BlobClaim(Base):
    """A write's claim on a digest: GC keeps the blob while an unexpired claim names it."""

    __tablename__ = "blob_claims"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    write_id: Mapped[str] = mapped_column(sa.String(36))
    digest: Mapped[str] = mapped_column(sa.ForeignKey("blobs.digest"))
    workspace: Mapped[str] = mapped_column(sa.String(128))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("write_id", "digest"),
        sa.Index("ix_blob_claims_digest_expires", "digest", "expires_at"),
        sa.Index("ix_blob_claims_expires_at", "expires_at"),
    )


class Manifest(Base):
    """A package state of one workspace, identified by its canonical hash.

    Versions and proposals point at manifests, so a restore or an identical re-save adds a
    version row without copying the manifest's rows.
    """

    __tablename__ = "manifests"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    hash: Mapped[str] = mapped_column(sa.String(64))
    file_count: Mapped[int] = mapped_column(sa.Integer)
    total_size: Mapped[int] = mapped_column(sa.BigInteger)
    created_at: Mapped[datetime]

    entries: Mapped[list[ManifestEntry]] = relationship(
        back_populates="manifest", order_by="ManifestEntry.path", lazy="raise"
    )

    __table_args__ = (
        sa.UniqueConstraint("workspace", "hash"),
        sa.CheckConstraint(hex64_check("hash"), name="hash_hex"),
        sa.CheckConstraint("file_count >= 1", name="file_count"),
        sa.CheckConstraint("total_size >= 0", name="total_size"),
    )


class ManifestEntry(Base):
    """One file of a manifest: path, blob digest, size and executable bit."""

    __tablename__ = "manifest_entries"

    manifest_id: Mapped[int] = mapped_column(
        sa.ForeignKey("manifests.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(sa.String(2048), primary_key=True)
    digest: Mapped[str] = mapped_column(sa.ForeignKey("blobs.digest"))
    size: Mapped[int] = mapped_column(sa.BigInteger)
    executable: Mapped[bool] = mapped_column(sa.Boolean, default=False)

    manifest: Mapped[Manifest] = relationship(back_populates="entries", lazy="raise")

    __table_args__ = (
        # GC asks "does anything still reference this digest?" for every candidate.
        sa.Index("ix_manifest_entries_digest", "digest"),
        sa.CheckConstraint("size >= 0", name="size"),
    )


class Version(Base):
    """An immutable version of a skill. Never updated after insert."""

    __tablename__ = "versions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    number: Mapped[int] = mapped_column(sa.Integer)
    parent: Mapped[int | None] = mapped_column(sa.Integer)
    origin: Mapped[str] = mapped_column(sa.String(32))
    actor: Mapped[str] = mapped_column(sa.String(200))
    # Who really wrote it: the authenticated token (`token:<id>`) or the operating system's
    # user (`os:<name>`). `actor` is what the writer declared. Null for versions older than
    # the column.
    principal: Mapped[str | None] = mapped_column(sa.String(200))
    message: Mapped[str] = mapped_column(sa.Text, default="")
    restored_from: Mapped[int | None] = mapped_column(sa.Integer)
    manifest_id: Mapped[int] = mapped_column(sa.ForeignKey("manifests.id"))
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    file_count: Mapped[int] = mapped_column(sa.Integer)
    total_size: Mapped[int] = mapped_column(sa.BigInteger)
    # The id of the write that created the version: a write whose reply was lost finds
    # out whether its commit happened by looking for its own id.
    write_id: Mapped[str | None] = mapped_column(sa.String(36), unique=True)
    created_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("skill_id", "number"),
        sa.Index("ix_versions_manifest_id", "manifest_id"),
        sa.CheckConstraint("number >= 1", name="number_positive"),
        sa.CheckConstraint("parent IS NULL OR parent < number", name="parent_before"),
        sa.CheckConstraint(in_check("origin", VERSION_ORIGINS), name="origin"),
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
    )


class VersionSource(Base):
    """A source (an opaque reference: a chat, a job, a listing) that contributed to a version."""

    __tablename__ = "version_sources"

    version_id: Mapped[int] = mapped_column(
        sa.ForeignKey("versions.id", ondelete="CASCADE"), primary_key=True
    )
    source: Mapped[str] = mapped_column(sa.String(500), primary_key=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    position: Mapped[int] = mapped_column(sa.Integer, default=0)

    __table_args__ = (sa.Index("ix_version_sources_workspace_source", "workspace", "source"),)


class Event(Base):
    """The outbox: one row per change, written in the transaction that made the change."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    skill_id: Mapped[int | None] = mapped_column(sa.ForeignKey("skills.id"))
    kind: Mapped[str] = mapped_column(sa.String(64))
    version: Mapped[int | None] = mapped_column(sa.Integer)
    manifest_hash: Mapped[str | None] = mapped_column(sa.String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(sa.JSON, default=dict)
    created_at: Mapped[datetime]

    __table_args__ = (sa.Index("ix_events_workspace_id", "workspace", "id"),)


class ScanResult(Base):
    """A digest the content check found clean with a given scanner fingerprint.

    Only clean results are cached: a blocked value must be found again (and reported with
    its path and ordinal) on every attempt, and nothing about it is stored.
    """

    __tablename__ = "scan_results"

    digest: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    scanner: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    scanned_at: Mapped[datetime]

    __table_args__ = (sa.CheckConstraint(hex64_check("digest"), name="digest_hex"),)
