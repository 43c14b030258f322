"""The relational model: SQLAlchemy 2.x typed mappings, one history for PostgreSQL and SQLite.

Constraints live in the database, not only in Python: unique live slugs per scope, unique
version numbers per skill, digest format checks, foreign keys from manifest rows to blobs.
Every tenant row carries its workspace; every query the services make filters by it.

Blob rows are global (content addressing shares bytes across workspaces); what a workspace
may see is decided through its versions and manifests, never by digest alone.

`base` holds the declarative base and portable column types; `core` the skills, versions,
manifests, blobs and outbox; `history` proposals, approvals and exclusions; `learning`
suppressions, pending writes, loads and the SKILL.md index; `ops` jobs, GC runs,
materialisations, tokens and ended console sessions; `discovery` what a scope publishes
in its Agent Skills index and the snapshots of that index; `rescan` the rule set that
checked each package and the decisions a rescan opened; `search` the full-text documents;
`trust` signing keys and attestations. Every table is importable from `registry.db.tables`.
"""

from registry.db.tables.base import (
    BLOB_STATUSES,
    NAMING_CONVENTION,
    ORIGINS,
    SKILL_KINDS,
    SKILL_STATES,
    Base,
    BigId,
    UtcDateTime,
)
from registry.db.tables.core import (
    Blob,
    BlobClaim,
    Event,
    Manifest,
    ManifestEntry,
    ScanResult,
    ScopeCount,
    Skill,
    Version,
    VersionSource,
    WorkspaceUsage,
)
from registry.db.tables.discovery import (
    DiscoveryArtifact,
    DiscoveryScope,
    DiscoverySkill,
    DiscoverySnapshot,
    DiscoverySnapshotEntry,
)
from registry.db.tables.history import (
    PENDING_PROPOSAL_STATUSES,
    PROPOSAL_DECISIONS,
    PROPOSAL_KINDS,
    PROPOSAL_STATUSES,
    ContentApproval,
    Proposal,
    Revocation,
    SourceExclusion,
)
from registry.db.tables.learning import (
    PENDING_WRITE_STATUSES,
    SUPPRESSION_CAUSES,
    SUPPRESSION_STATUSES,
    Load,
    PendingWrite,
    SkillMdIndex,
    Suppression,
)
from registry.db.tables.ops import (
    GC_OUTCOMES,
    JOB_STATUSES,
    MATERIALIZE_MODES,
    MATERIALIZE_OUTCOMES,
    TOKEN_ROLES,
    ApiToken,
    EndedSession,
    GcRun,
    Job,
    Materialization,
    MaterializationTarget,
)
from registry.db.tables.rescan import REVIEW_STATUSES, ContentReview, PackageCheck, RescanRuleset
from registry.db.tables.search import SearchCursor, SearchDocument
from registry.db.tables.trust import Attestation, SigningKey

__all__ = [
    "BLOB_STATUSES",
    "GC_OUTCOMES",
    "JOB_STATUSES",
    "MATERIALIZE_MODES",
    "MATERIALIZE_OUTCOMES",
    "NAMING_CONVENTION",
    "ORIGINS",
    "PENDING_PROPOSAL_STATUSES",
    "PENDING_WRITE_STATUSES",
    "PROPOSAL_DECISIONS",
    "PROPOSAL_KINDS",
    "PROPOSAL_STATUSES",
    "REVIEW_STATUSES",
    "SKILL_KINDS",
    "SKILL_STATES",
    "SUPPRESSION_CAUSES",
    "SUPPRESSION_STATUSES",
    "TOKEN_ROLES",
    "ApiToken",
    "Attestation",
    "Base",
    "BigId",
    "Blob",
    "BlobClaim",
    "ContentApproval",
    "ContentReview",
    "DiscoveryArtifact",
    "DiscoveryScope",
    "DiscoverySkill",
    "DiscoverySnapshot",
    "DiscoverySnapshotEntry",
    "EndedSession",
    "Event",
    "GcRun",
    "Job",
    "Load",
    "Manifest",
    "ManifestEntry",
    "Materialization",
    "MaterializationTarget",
    "PackageCheck",
    "PendingWrite",
    "Proposal",
    "RescanRuleset",
    "Revocation",
    "ScanResult",
    "ScopeCount",
    "SearchCursor",
    "SearchDocument",
    "SigningKey",
    "Skill",
    "SkillMdIndex",
    "SourceExclusion",
    "Suppression",
    "UtcDateTime",
    "Version",
    "VersionSource",
    "WorkspaceUsage",
]
