"""Discovery: which skills a scope publishes in its Agent Skills index, and artifact digests.

`discovery_scopes` holds one row per scope whose owner configured discovery: whether every
skill of the scope is published (`everything`), whether the index and its artifacts are
served without a token (`public`), and a `revision` that each change increments (the
configuration's entity tag). `discovery_skills` lists skills published one by one, by
skill row id: a skill deleted and created again under the same slug is a new skill, and is
not published until its owner says so.

`discovery_artifacts` remembers what the index says about a package state, so an index
is served without reading every package's blobs: the SHA-256 and size of the artifact a
client downloads (the `SKILL.md` alone, or the reproducible zip) and the description in
its `SKILL.md`. Each is a function of the manifest (its paths, digests, sizes and modes),
so the rows are keyed by the manifest hash and the artifact format, carry no workspace
(like blob rows, they are shared and reveal nothing to a workspace that does not hold the
manifest), and are never updated.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import Base, BigId, hex64_check


class DiscoveryScope(Base):
    """A scope's discovery settings: everything published or not, public or not."""

    __tablename__ = "discovery_scopes"

    workspace: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    agent: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    everything: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    public: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    revision: Mapped[int] = mapped_column(sa.Integer, default=1)
    updated_at: Mapped[datetime]
    updated_by: Mapped[str] = mapped_column(sa.String(200))

    __table_args__ = (sa.CheckConstraint("revision >= 1", name="revision_positive"),)


class DiscoverySkill(Base):
    """A skill published on its own (its scope does not publish everything)."""

    __tablename__ = "discovery_skills"

    skill_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("skills.id"), primary_key=True, autoincrement=False
    )
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    created_at: Mapped[datetime]

    __table_args__ = (sa.Index("ix_discovery_skills_scope", "workspace", "agent"),)


class DiscoveryArtifact(Base):
    """The digest, size and description of a package state's discovery artifact."""

    __tablename__ = "discovery_artifacts"

    manifest_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    format: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    sha256: Mapped[str] = mapped_column(sa.String(64))
    size: Mapped[int] = mapped_column(sa.BigInteger)
    description: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime]

    __table_args__ = (
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
        sa.CheckConstraint(hex64_check("sha256"), name="sha256_hex"),
        sa.CheckConstraint("size >= 0", name="size"),
    )


class DiscoverySnapshot(Base):
    """One state of a scope's index, numbered per scope: what `v{number}.0.0/index.json` serves.

    Written under the workspace lock when an index is served whose entries differ from the
    scope's latest snapshot (registry/services/discovery/snapshots.py); never updated.
    `fingerprint` is the SHA-256 of the entries' canonical form, compared to tell whether
    the index moved on.
    """

    __tablename__ = "discovery_snapshots"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    number: Mapped[int] = mapped_column(sa.Integer)
    fingerprint: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("workspace", "agent", "number"),
        sa.CheckConstraint("number >= 1", name="number_positive"),
        sa.CheckConstraint(hex64_check("fingerprint"), name="fingerprint_hex"),
    )


class DiscoverySnapshotEntry(Base):
    """One skill of a snapshot: the version it names and what the index said about it.

    The version is named by skill and number, not by a foreign key to `versions`: a
    snapshot does not keep a version from retention. A snapshot whose versions are not all
    still served is withdrawn instead (docs/distribution.md).
    """

    __tablename__ = "discovery_snapshot_entries"

    snapshot_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("discovery_snapshots.id", ondelete="CASCADE"), primary_key=True
    )
    slug: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    skill_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("skills.id"))
    version: Mapped[int] = mapped_column(sa.Integer)
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    type: Mapped[str] = mapped_column(sa.String(16))
    description: Mapped[str] = mapped_column(sa.Text)
    sha256: Mapped[str] = mapped_column(sa.String(64))
    size: Mapped[int] = mapped_column(sa.BigInteger)

    __table_args__ = (
        sa.Index("ix_discovery_snapshot_entries_version", "skill_id", "version"),
        sa.CheckConstraint("version >= 1", name="version_positive"),
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
        sa.CheckConstraint(hex64_check("sha256"), name="sha256_hex"),
        sa.CheckConstraint("size >= 0", name="size"),
    )
