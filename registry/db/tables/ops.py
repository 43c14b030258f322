"""Operational rows: jobs, GC runs, materialisations, API tokens, ended console sessions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import (
    Base,
    BigId,
    hex64_check,
    in_check,
)

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
    # What a long job has done so far (a rescan: packages `done` of `total`), written by
    # its handler under the lease.
    progress: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]

    __table_args__ = (
        # Claims look for queued jobs by run_after and for running ones by lease expiry.
        sa.Index("ix_jobs_status_run_after", "status", "run_after"),
        sa.Index("ix_jobs_status_lease_expires_at", "status", "lease_expires_at"),
        sa.Index("ix_jobs_workspace_id", "workspace", "id"),
        sa.CheckConstraint(in_check("status", JOB_STATUSES), name="status"),
        sa.CheckConstraint("attempts >= 0", name="attempts"),
        sa.CheckConstraint("max_attempts >= 1", name="max_attempts"),
        sa.CheckConstraint(
            "status <> 'running' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)",
            name="running_leased",
        ),
    )


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
        sa.CheckConstraint(in_check("outcome", GC_OUTCOMES), name="outcome"),
        sa.Index("ix_gc_runs_outcome_finished_at", "outcome", "finished_at"),
    )


MATERIALIZE_MODES = ("link", "copy")
MATERIALIZE_OUTCOMES = ("applied", "removed", "failed")
TRUST_STATES = ("verified", "stale", "refused")


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
    # What a syncing host last said of the desired state it was served (docs/trust.md):
    # verified, stale (since its last good state expired) or refused (with the reason).
    # Null for a target that never reported (a local reconcile has no chain to check).
    trust_state: Mapped[str | None] = mapped_column(sa.String(16))
    trust_since: Mapped[datetime | None]
    trust_detail: Mapped[str | None] = mapped_column(sa.String(500))
    trust_seq: Mapped[int | None] = mapped_column(sa.BigInteger)
    # When its host last asked for its desired state, to a granularity (docs/revocation.md):
    # what `status --revoked` shows as "last seen", and how it finds a silent host.
    seen_at: Mapped[datetime | None]

    __table_args__ = (
        sa.Index("ix_materialization_targets_scope", "workspace", "agent"),
        sa.CheckConstraint(in_check("mode", MATERIALIZE_MODES), name="mode"),
        sa.CheckConstraint(in_check("trust_state", TRUST_STATES), name="trust_state"),
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
        sa.CheckConstraint(in_check("outcome", MATERIALIZE_OUTCOMES), name="outcome"),
        sa.CheckConstraint(
            f"manifest_hash IS NULL OR ({hex64_check('manifest_hash')})", name="manifest_hash_hex"
        ),
        sa.CheckConstraint("version IS NULL OR version >= 1", name="version_positive"),
    )


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
        sa.CheckConstraint(in_check("role", TOKEN_ROLES), name="role"),
        sa.CheckConstraint(hex64_check("secret_hash"), name="secret_hash_hex"),
    )


class EndedSession(Base):
    """A console session signed out before its cookie expired (docs/console.md).

    The cookie is signed and names its session id, so a copy taken before *Sign out* would
    still verify until it expires: signing out records the id here, and every console
    request of every process sharing the database refuses the ids it finds. `ends_at` is
    when the cookie expires anyway; after it, the row proves nothing, and the next sign-out
    deletes it.
    """

    __tablename__ = "ended_sessions"

    session_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    ends_at: Mapped[datetime]

    __table_args__ = (sa.Index("ix_ended_sessions_ends_at", "ends_at"),)
