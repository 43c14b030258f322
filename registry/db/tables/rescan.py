"""The rescan: which rule set checked each package, and the decisions its findings opened.

`package_checks` records, per workspace and package, the content rule set
(`Scanner.fingerprint`) that last checked it and how many findings it had. A package is
keyed by its manifest hash (what versions store) and carries its package digest (SHA-256
of the same canonical encoding: the name attestations give it); the two name the same
package. A rescan
checks the packages whose record names another rule set, or none; a record is written in
the transaction that applies the check's consequences, so a killed rescan resumes after
the last package it finished.

`content_reviews` are the decisions a rescan opens: a blocking finding in a skill's head,
bound to the head's package digest and the rule set that found it (docs/write-path.md,
"Rescan when the rules change"). `rescan_rulesets` records the rule sets a whole-registry
rescan has finished under: a process that starts with another one queues a rescan.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from registry.db.tables.base import Base, BigId, hex64_check, in_check

REVIEW_STATUSES = ("open", "approved", "superseded", "withdrawn")
"""`open`: waiting for the owner; `approved`: the owner accepted the findings for this
package; `superseded`: the head moved to another package (a restore, a yank, any write);
`withdrawn`: the skill was deleted."""


class PackageCheck(Base):
    """The rule set that last checked a package of a workspace, and what it found.

    `findings`: what the rules found in its files; `blocked_heads`: how many of the
    workspace's heads holding it those findings blocked (their approvals did not cover
    them). Findings that blocked nothing are recorded here and stop nothing.
    """

    __tablename__ = "package_checks"

    workspace: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    manifest_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    package_digest: Mapped[str] = mapped_column(sa.String(64))
    ruleset: Mapped[str] = mapped_column(sa.String(64))
    findings: Mapped[int] = mapped_column(sa.Integer)
    blocked_heads: Mapped[int] = mapped_column(sa.Integer)
    checked_at: Mapped[datetime]

    __table_args__ = (
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
        sa.CheckConstraint(hex64_check("package_digest"), name="package_digest_hex"),
        sa.CheckConstraint("findings >= 0 AND blocked_heads >= 0", name="counts"),
    )


class ContentReview(Base):
    """A blocking finding a rescan found in a skill's head: the owner's decision.

    `findings` lists the blocking findings as `ContentBlocked` reports them (path, pattern
    class, ordinal, line; never a value). `paused_use`: the rescan stopped the skill's use
    (it was in use when the finding was found).
    """

    __tablename__ = "content_reviews"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    workspace: Mapped[str] = mapped_column(sa.String(128))
    skill_id: Mapped[int] = mapped_column(sa.ForeignKey("skills.id"))
    version: Mapped[int] = mapped_column(sa.Integer)
    manifest_hash: Mapped[str] = mapped_column(sa.String(64))
    package_digest: Mapped[str] = mapped_column(sa.String(64))
    ruleset: Mapped[str] = mapped_column(sa.String(64))
    findings: Mapped[list[dict[str, Any]]] = mapped_column(sa.JSON)
    status: Mapped[str] = mapped_column(sa.String(16), default="open")
    paused_use: Mapped[bool] = mapped_column(sa.Boolean)
    opened_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]
    closed_by: Mapped[str | None] = mapped_column(sa.String(200))

    __table_args__ = (
        sa.Index("ix_content_reviews_workspace_status", "workspace", "status", "id"),
        sa.Index("ix_content_reviews_skill_id", "skill_id"),
        sa.CheckConstraint(in_check("status", REVIEW_STATUSES), name="status"),
        sa.CheckConstraint(hex64_check("package_digest"), name="package_digest_hex"),
        sa.CheckConstraint(hex64_check("manifest_hash"), name="manifest_hash_hex"),
    )


class RescanRuleset(Base):
    """A rule set a rescan of every workspace finished under (by the job `job_id`)."""

    __tablename__ = "rescan_rulesets"

    ruleset: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    job_id: Mapped[int | None] = mapped_column(sa.BigInteger)
    finished_at: Mapped[datetime]
