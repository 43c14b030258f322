"""Learning rows: suppressions, pending writes, loads and the SKILL.md index (docs/history.md).

- `suppressions`: a behaviour the owner undid (a restore) or removed (a delete); a later
  learning write that would bring it back becomes a proposal marked `suppressed`.
- `pending_writes`: a learning write that needed a saved slot the scope did not have; it
  is applied, in order, once there is room.
- `loads`: which exact version an agent runtime loaded for a conversation.
- `skill_md_index`: what the registry read from a `SKILL.md` (its discovery triggers),
  keyed by the file's digest, so listings and reads need not fetch the blob.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import ORIGINS, Base, BigId, hex64_check, in_check

SUPPRESSION_CAUSES = ("restore", "delete")
SUPPRESSION_STATUSES = ("active", "lifted")
PENDING_WRITE_STATUSES = ("waiting", "applied", "proposed", "dropped", "failed")


class Suppression(Base):
    """A behaviour the owner undid: the change a restore reverted, or a deleted skill's package.

    `change` lists the files of the undone change (docs/history.md, "Suppression"): per
    path the digest it had in the undone package (null if the change removed it) and, for
    text files, sketches of the undone and the kept text, so that a later package can be
    compared without reading any blob. The row is matched by scope and slug, so it
    outlives a deleted skill. `status` `lifted`: the owner applied a proposal it labelled.
    """

    __tablename__ = "suppressions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    cause: Mapped[str] = mapped_column(sa.String(16))
    undone_version: Mapped[int] = mapped_column(sa.Integer)
    undone_hash: Mapped[str] = mapped_column(sa.String(64))
    change: Mapped[list[dict[str, Any]]] = mapped_column(sa.JSON, default=list)
    status: Mapped[str] = mapped_column(sa.String(16), default="active")
    actor: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[datetime]
    lifted_at: Mapped[datetime | None]
    lifted_by: Mapped[str | None] = mapped_column(sa.String(200))

    __table_args__ = (
        sa.Index("ix_suppressions_scope_slug", "workspace", "agent", "slug", "status"),
        sa.CheckConstraint(in_check("cause", SUPPRESSION_CAUSES), name="cause"),
        sa.CheckConstraint(in_check("status", SUPPRESSION_STATUSES), name="status"),
        sa.CheckConstraint(hex64_check("undone_hash"), name="undone_hash_hex"),
    )


class PendingWrite(Base):
    """A learning write waiting for a saved slot; no version exists until it is applied.

    `manifest_id` keeps the package's manifest (and so its blobs) while the write waits;
    it is cleared when the write is applied (the version holds the manifest then),
    proposed, dropped or failed. `skill_id` is set when the write would move an installed
    copy into the saved budget; `expected` is the write's compare-and-swap (`new`, `any`
    or a version number). `outcome` names what became of it: the version, the proposal,
    or the error code that refused it.
    """

    __tablename__ = "pending_writes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    skill_id: Mapped[int | None] = mapped_column(sa.ForeignKey("skills.id"))
    expected: Mapped[str] = mapped_column(sa.String(16))
    manifest_id: Mapped[int | None] = mapped_column(sa.ForeignKey("manifests.id"))
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    file_count: Mapped[int] = mapped_column(sa.Integer)
    total_size: Mapped[int] = mapped_column(sa.BigInteger)
    origin: Mapped[str] = mapped_column(sa.String(32))
    actor: Mapped[str] = mapped_column(sa.String(200))
    message: Mapped[str] = mapped_column(sa.Text, default="")
    sources: Mapped[list[str]] = mapped_column(sa.JSON, default=list)
    approvals: Mapped[list[dict[str, Any]]] = mapped_column(sa.JSON, default=list)
    status: Mapped[str] = mapped_column(sa.String(16), default="waiting")
    outcome: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # The write that recorded it: a write whose reply was lost finds its pending write by it.
    write_id: Mapped[str | None] = mapped_column(sa.String(36), unique=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        sa.Index("ix_pending_writes_workspace_status", "workspace", "status", "id"),
        sa.Index("ix_pending_writes_manifest_id", "manifest_id"),
        sa.CheckConstraint(in_check("status", PENDING_WRITE_STATUSES), name="status"),
        sa.CheckConstraint(in_check("origin", ORIGINS), name="origin"),
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
    )


class Load(Base):
    """A version an agent runtime loaded for a conversation (a load, never a success).

    Retention keeps every version a load names, so a read pinned to it keeps working.
    """

    __tablename__ = "loads"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    version: Mapped[int] = mapped_column(sa.Integer)
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    conversation: Mapped[str] = mapped_column(sa.String(200))
    loaded_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("skill_id", "version", "conversation"),
        sa.Index("ix_loads_workspace_conversation", "workspace", "conversation"),
        sa.CheckConstraint("version >= 1", name="version_positive"),
        {"info": {"pins_versions": {"skill": "skill_id", "version": "version"}}},
    )


class SkillMdIndex(Base):
    """What a `SKILL.md` says that listings show, keyed by the file's digest.

    Content-addressed like the blob it describes, so one row serves every version and
    workspace holding the same file; it goes with its blob row (`ON DELETE CASCADE`).
    """

    __tablename__ = "skill_md_index"

    digest: Mapped[str] = mapped_column(
        sa.ForeignKey("blobs.digest", ondelete="CASCADE"), primary_key=True
    )
    triggers: Mapped[list[str]] = mapped_column(sa.JSON, default=list)
    created_at: Mapped[datetime]
