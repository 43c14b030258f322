"""The relational model: SQLAlchemy 2.x typed mappings, one history for PostgreSQL and SQLite.

Constraints live in the database, not only in Python: unique live slugs per scope, unique
version numbers per skill, digest format checks, foreign keys from manifest rows to blobs.
Every tenant row carries its workspace; every query the services make filters by it.

Blob rows are global (content addressing shares bytes across workspaces); what a workspace
may see is decided through its versions and manifests, never by digest alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# Constraint and index names are derived, so Alembic's autogenerate and `alembic check`
# compare like with like on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only aliases the rowid (and so autoincrements) for a column declared exactly
# INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

ORIGINS = (
    "edit",
    "save",
    "learning",
    "restore",
    "import",
    "marketplace_install",
    "marketplace_update",
    "out_of_band",
)
SKILL_STATES = ("active", "archived", "deleted")
SKILL_KINDS = ("saved", "installed")
BLOB_STATUSES = ("pending", "live", "deleting")


class UtcDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on both dialects.

    SQLite has no timestamp type and hands back naive values; PostgreSQL returns aware
    ones. Values are normalised to aware UTC on the way in and on the way out.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            msg = "naive datetimes are not stored; pass an aware UTC datetime"
            raise ValueError(msg)
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(
        self,
        value: datetime | None,
        dialect: Dialect,  # noqa: ARG002 - the override's signature
    ) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _hex64_check(column: str) -> str:
    """A portable CHECK that `column` is 64 lower-case hex characters.

    PostgreSQL's `~` and SQLite's `GLOB` differ, so the expression strips every hex digit
    with nested `replace()` (which both have) and requires nothing to be left.
    """
    expr = column
    for ch in "0123456789abcdef":
        expr = f"replace({expr}, '{ch}', '')"
    return f"length({column}) = 64 AND {expr} = ''"


def _in_check(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime()}


class Skill(Base):
    """A skill in a scope: its head version, state, control flags and marketplace baseline."""

    __tablename__ = "skills"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
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
        # Capacity counts live skills of one budget in a scope.
        sa.Index("ix_skills_capacity", "workspace", "agent", "kind", "state"),
        sa.CheckConstraint(_in_check("state", SKILL_STATES), name="state"),
        sa.CheckConstraint(_in_check("kind", SKILL_KINDS), name="kind"),
        sa.CheckConstraint("head >= 1", name="head_positive"),
        sa.CheckConstraint("head_size >= 0", name="head_size"),
        sa.CheckConstraint("length(slug) BETWEEN 1 AND 64", name="slug_length"),
    )


class Blob(Base):
    """One stored object, global across workspaces, with its claim and GC bookkeeping.

    `status`: `pending` (claimed by a write, upload not yet confirmed by a commit),
    `live` (a committed write confirmed it is stored), `deleting` (GC decided to remove it;
    a writer that wants the digest again resurrects it to `pending` and uploads again).
    """

    __tablename__ = "blobs"

    digest: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    size: Mapped[int] = mapped_column(sa.BigInteger)
    status: Mapped[str] = mapped_column(sa.String(16), default="pending")
    created_at: Mapped[datetime]
    touched_at: Mapped[datetime]

    __table_args__ = (
        sa.CheckConstraint(_hex64_check("digest"), name="digest_hex"),
        sa.CheckConstraint("size >= 0", name="size"),
        sa.CheckConstraint(_in_check("status", BLOB_STATUSES), name="status"),
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
        sa.CheckConstraint(_hex64_check("hash"), name="hash_hex"),
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
        sa.CheckConstraint(_in_check("origin", ORIGINS), name="origin"),
        sa.CheckConstraint(_hex64_check("manifest_hash"), name="manifest_hash_hex"),
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

    __table_args__ = (sa.CheckConstraint(_hex64_check("digest"), name="digest_hex"),)


# ---------------------------------------------------------------- marketplace: durable jobs

JOB_STATUSES = ("queued", "running", "succeeded", "failed")


class Job(Base):
    """A durable job (marketplace install or update): claimed under a lease, retried.

    `idempotency_key` is unique: enqueueing the same key again returns this row. A worker
    claims a due job (`queued` and `run_after` passed, or `running` with an expired lease)
    by setting `lease_owner` and `lease_expires_at` and counting the attempt; the pair
    (`lease_owner`, `attempts`) fences a worker that lost its lease from recording an
    outcome. `workspace` is the workspace the job acts on, for listing and isolation.
    """

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(sa.String(64))
    idempotency_key: Mapped[str] = mapped_column(sa.String(400), unique=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    payload: Mapped[dict[str, Any]] = mapped_column(sa.JSON, default=dict)
    status: Mapped[str] = mapped_column(sa.String(16), default="queued")
    attempts: Mapped[int] = mapped_column(sa.Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(sa.Integer)
    run_after: Mapped[datetime]
    lease_owner: Mapped[str | None] = mapped_column(sa.String(200))
    lease_expires_at: Mapped[datetime | None]
    last_error: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]

    __table_args__ = (
        # Claims look for queued jobs by run_after and for running ones by lease expiry.
        sa.Index("ix_jobs_status_run_after", "status", "run_after"),
        sa.Index("ix_jobs_status_lease_expires_at", "status", "lease_expires_at"),
        sa.Index("ix_jobs_workspace_id", "workspace", "id"),
        sa.CheckConstraint(_in_check("status", JOB_STATUSES), name="status"),
        sa.CheckConstraint("attempts >= 0", name="attempts"),
        sa.CheckConstraint("max_attempts >= 1", name="max_attempts"),
        sa.CheckConstraint(
            "status <> 'running' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)",
            name="running_leased",
        ),
    )


# ---------------------------------------------------------------- history: proposals,
# content-check approvals and source exclusions (docs/history.md)

PROPOSAL_STATUSES = ("open", "stale", "applied", "rejected", "superseded", "withdrawn")
PENDING_PROPOSAL_STATUSES = ("open", "stale")
PROPOSAL_DECISIONS = ("apply", "alternative", "keep_current")


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
        sa.CheckConstraint(_in_check("status", PROPOSAL_STATUSES), name="status"),
        sa.CheckConstraint(
            f"decision IS NULL OR {_in_check('decision', PROPOSAL_DECISIONS)}", name="decision"
        ),
        sa.CheckConstraint(_in_check("origin", ORIGINS), name="origin"),
        sa.CheckConstraint("base_version >= 1", name="base_positive"),
        sa.CheckConstraint(_hex64_check("manifest_hash"), name="manifest_hash_hex"),
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
        sa.CheckConstraint(_hex64_check("value_hash"), name="value_hash_hex"),
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


# ---------------------------------------------------------------- garbage collection (issue 6)

GC_OUTCOMES = ("running", "finished", "failed")


class GcRun(Base):
    """One garbage-collection run: what it reclaimed, for `skillreg status` and audits.

    A run inserts its row when it starts and fills it in when it ends; a run that was
    killed stays `running` (the next run converges anyway: every step is idempotent).
    """

    __tablename__ = "gc_runs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str] = mapped_column(sa.String(16), default="running")
    grace_seconds: Mapped[float] = mapped_column(sa.Float)
    claims_expired: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    versions_pruned: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    blobs_reclaimed: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    bytes_reclaimed: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # Objects found in the store without a blob row (a crashed upload), part of the above.
    untracked_reclaimed: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # What the store listing saw during the run (None until the listing finished).
    store_objects: Mapped[int | None] = mapped_column(sa.BigInteger)
    store_bytes: Mapped[int | None] = mapped_column(sa.BigInteger)
    error: Mapped[str | None] = mapped_column(sa.Text)

    __table_args__ = (
        sa.CheckConstraint(_in_check("outcome", GC_OUTCOMES), name="outcome"),
        sa.Index("ix_gc_runs_outcome_finished_at", "outcome", "finished_at"),
    )


# ---------------------------------------------------------------- materialisation (issue 5)

MATERIALIZE_MODES = ("link", "copy")
MATERIALIZE_OUTCOMES = ("applied", "removed", "failed")


class MaterializationTarget(Base):
    """A directory that the reconciler keeps equal to one scope's desired state.

    A target is identified by the id stored in its own `.skillreg/target.json`, not by its
    path: many hosts share one database, and `/srv/agent/skills` on two machines is two
    targets. `path` and `host` say where it was last reconciled, for people.
    """

    __tablename__ = "materialization_targets"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    target_id: Mapped[str] = mapped_column(sa.String(36), unique=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    path: Mapped[str] = mapped_column(sa.Text)
    host: Mapped[str] = mapped_column(sa.String(255))
    mode: Mapped[str] = mapped_column(sa.String(8))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        sa.Index("ix_materialization_targets_scope", "workspace", "agent"),
        sa.CheckConstraint(_in_check("mode", MATERIALIZE_MODES), name="mode"),
    )


class Materialization(Base):
    """What a target holds for one skill: the manifest hash applied there, and the outcome.

    `manifest_hash` is what is on disk (None once the skill was removed from the target);
    a failed attempt keeps the hash that is still on disk and records the error. A skill
    is pending on a target while its desired manifest hash differs from this one.
    """

    __tablename__ = "materializations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    target_id: Mapped[str] = mapped_column(
        sa.ForeignKey("materialization_targets.target_id", ondelete="CASCADE")
    )
    workspace: Mapped[str] = mapped_column(sa.String(128))
    agent: Mapped[str] = mapped_column(sa.String(128))
    slug: Mapped[str] = mapped_column(sa.String(64))
    manifest_hash: Mapped[str | None] = mapped_column(sa.String(64))
    version: Mapped[int | None] = mapped_column(sa.Integer)
    outcome: Mapped[str] = mapped_column(sa.String(16))
    error: Mapped[str | None] = mapped_column(sa.Text)
    updated_at: Mapped[datetime]

    __table_args__ = (
        sa.UniqueConstraint("target_id", "workspace", "agent", "slug"),
        sa.Index("ix_materializations_scope_slug", "workspace", "agent", "slug"),
        sa.CheckConstraint(_in_check("outcome", MATERIALIZE_OUTCOMES), name="outcome"),
        sa.CheckConstraint(
            f"manifest_hash IS NULL OR ({_hex64_check('manifest_hash')})", name="manifest_hash_hex"
        ),
        sa.CheckConstraint("version IS NULL OR version >= 1", name="version_positive"),
    )


# ---------------------------------------------------------------- HTTP API access tokens (issue 8)

TOKEN_ROLES = ("read", "write", "owner", "admin")


class ApiToken(Base):
    """A bearer token for the HTTP API: one workspace, one role, the secret stored hashed.

    `id` is the public half of the token (`skr_<id>_<secret>`); `secret_hash` is the BLAKE3
    of the secret, compared in constant time. A revoked token keeps its row for audits.
    `last_used_at` is refreshed at most once a minute, so reads do not become writes.
    """

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    role: Mapped[str] = mapped_column(sa.String(16))
    name: Mapped[str] = mapped_column(sa.String(200), default="")
    secret_hash: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]

    __table_args__ = (
        sa.Index("ix_api_tokens_workspace", "workspace"),
        sa.CheckConstraint(_in_check("role", TOKEN_ROLES), name="role"),
        sa.CheckConstraint(_hex64_check("secret_hash"), name="secret_hash_hex"),
    )
