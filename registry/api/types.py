"""The values the API takes and returns, in one place for the entry points.

The CLI, the HTTP service and the console import `registry.api` (and `registry.errors`,
`registry.domain` value types, `registry.wire`), never `registry.services` or `registry.db`
(the import-linter contracts in pyproject.toml). The results and requests of `Registry`
and its namespaces are defined by the services that produce them; this module names them
for the callers, each imported on first use (`registry.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from registry import lazy

if TYPE_CHECKING:
    from registry.domain.attestation import Verified
    from registry.domain.search import DEFAULT_LIMIT, MAX_LIMIT
    from registry.services.discovery.artifacts import Artifact
    from registry.services.discovery.index import DiscoveryIndex, IndexEntry
    from registry.services.discovery.legacy import LegacyIndex
    from registry.services.discovery.settings import DiscoverySettings
    from registry.services.discovery.snapshots import Snapshot, SnapshotList
    from registry.services.gc.collect import GcReport
    from registry.services.gc.figures import GcFigures
    from registry.services.gc.fsck import FsckReport
    from registry.services.history.controls import SkillStatus
    from registry.services.history.decisions import KINDS as PROPOSAL_KINDS
    from registry.services.history.decisions import DecisionOutcome, DecisionRequest
    from registry.services.history.diff import DiffTarget, FileChange, PackageDiff, ProposalRef
    from registry.services.history.exclusions import ExclusionReport
    from registry.services.history.proposals import (
        Changes,
        Decision,
        DecisionResult,
        ProposalDetail,
        ProposalPage,
        ProposalSummary,
    )
    from registry.services.history.rescan import (
        EVERY_WORKSPACE,
        RESCAN,
        ApproveResult,
        ReviewPage,
        ReviewRow,
    )
    from registry.services.history.revocations import Revocation, YankReport
    from registry.services.history.versions import HistoryPage, VersionSummary
    from registry.services.jobs.queue import Enqueued, JobOutcome, JobPage, JobRow
    from registry.services.learning.loads import LoadRecord
    from registry.services.learning.pending import PendingWriteInfo
    from registry.services.learning.status import LearningStatus
    from registry.services.learning.suppressions import SuppressionInfo
    from registry.services.marketplace.catalog import ListingVersion
    from registry.services.marketplace.copies import CopyStatus
    from registry.services.marketplace.install import DEFAULT_ACTOR, POLICIES, Policy
    from registry.services.materialize.forget import ForgetReport
    from registry.services.materialize.lockfile import LockedSkill, LockFile
    from registry.services.materialize.report import (
        ACTIONS,
        UNCHANGED,
        ReconcileReport,
        SkillOutcome,
    )
    from registry.services.ops.health import JobFigures, MaterializationFigures
    from registry.services.ops.revoked import RevokedVersion, TargetHold
    from registry.services.ops.status import Status, TargetTrust
    from registry.services.ops.tokens import TokenInfo
    from registry.services.read import Package, PackageInfo, SkillPage, SkillSummary
    from registry.services.search.query import SearchHit, SearchResults
    from registry.services.trust.attest import VersionAttestation
    from registry.services.trust.keys import KeyInfo
    from registry.services.write.uploads import ManifestFile

# Each name, its home module and its name there: imported when first used
# (registry/lazy.py), so an entry point imports only the services it runs.
_HOMES: Final = {
    "ACTIONS": ("registry.services.materialize.report", "ACTIONS"),
    "ApproveResult": ("registry.services.history.rescan", "ApproveResult"),
    "Artifact": ("registry.services.discovery.artifacts", "Artifact"),
    "Changes": ("registry.services.history.proposals", "Changes"),
    "CopyStatus": ("registry.services.marketplace.copies", "CopyStatus"),
    "DEFAULT_ACTOR": ("registry.services.marketplace.install", "DEFAULT_ACTOR"),
    "DEFAULT_LIMIT": ("registry.domain.search", "DEFAULT_LIMIT"),
    "Decision": ("registry.services.history.proposals", "Decision"),
    "DecisionOutcome": ("registry.services.history.decisions", "DecisionOutcome"),
    "DecisionRequest": ("registry.services.history.decisions", "DecisionRequest"),
    "DecisionResult": ("registry.services.history.proposals", "DecisionResult"),
    "DiffTarget": ("registry.services.history.diff", "DiffTarget"),
    "DiscoveryIndex": ("registry.services.discovery.index", "DiscoveryIndex"),
    "DiscoverySettings": ("registry.services.discovery.settings", "DiscoverySettings"),
    "EVERY_WORKSPACE": ("registry.services.history.rescan", "EVERY_WORKSPACE"),
    "Enqueued": ("registry.services.jobs.queue", "Enqueued"),
    "ExclusionReport": ("registry.services.history.exclusions", "ExclusionReport"),
    "FileChange": ("registry.services.history.diff", "FileChange"),
    "ForgetReport": ("registry.services.materialize.forget", "ForgetReport"),
    "FsckReport": ("registry.services.gc.fsck", "FsckReport"),
    "GcFigures": ("registry.services.gc.figures", "GcFigures"),
    "GcReport": ("registry.services.gc.collect", "GcReport"),
    "HistoryPage": ("registry.services.history.versions", "HistoryPage"),
    "IndexEntry": ("registry.services.discovery.index", "IndexEntry"),
    "JobFigures": ("registry.services.ops.health", "JobFigures"),
    "JobOutcome": ("registry.services.jobs.queue", "JobOutcome"),
    "JobPage": ("registry.services.jobs.queue", "JobPage"),
    "JobRow": ("registry.services.jobs.queue", "JobRow"),
    "KeyInfo": ("registry.services.trust.keys", "KeyInfo"),
    "LearningStatus": ("registry.services.learning.status", "LearningStatus"),
    "LegacyIndex": ("registry.services.discovery.legacy", "LegacyIndex"),
    "ListingVersion": ("registry.services.marketplace.catalog", "ListingVersion"),
    "LoadRecord": ("registry.services.learning.loads", "LoadRecord"),
    "LockFile": ("registry.services.materialize.lockfile", "LockFile"),
    "LockedSkill": ("registry.services.materialize.lockfile", "LockedSkill"),
    "MAX_LIMIT": ("registry.domain.search", "MAX_LIMIT"),
    "ManifestFile": ("registry.services.write.uploads", "ManifestFile"),
    "MaterializationFigures": ("registry.services.ops.health", "MaterializationFigures"),
    "POLICIES": ("registry.services.marketplace.install", "POLICIES"),
    "PROPOSAL_KINDS": ("registry.services.history.decisions", "KINDS"),
    "Package": ("registry.services.read", "Package"),
    "PackageDiff": ("registry.services.history.diff", "PackageDiff"),
    "PackageInfo": ("registry.services.read", "PackageInfo"),
    "PendingWriteInfo": ("registry.services.learning.pending", "PendingWriteInfo"),
    "Policy": ("registry.services.marketplace.install", "Policy"),
    "ProposalDetail": ("registry.services.history.proposals", "ProposalDetail"),
    "ProposalPage": ("registry.services.history.proposals", "ProposalPage"),
    "ProposalRef": ("registry.services.history.diff", "ProposalRef"),
    "ProposalSummary": ("registry.services.history.proposals", "ProposalSummary"),
    "RESCAN": ("registry.services.history.rescan", "RESCAN"),
    "ReconcileReport": ("registry.services.materialize.report", "ReconcileReport"),
    "ReviewPage": ("registry.services.history.rescan", "ReviewPage"),
    "ReviewRow": ("registry.services.history.rescan", "ReviewRow"),
    "Revocation": ("registry.services.history.revocations", "Revocation"),
    "RevokedVersion": ("registry.services.ops.revoked", "RevokedVersion"),
    "SearchHit": ("registry.services.search.query", "SearchHit"),
    "SearchResults": ("registry.services.search.query", "SearchResults"),
    "SkillOutcome": ("registry.services.materialize.report", "SkillOutcome"),
    "SkillPage": ("registry.services.read", "SkillPage"),
    "SkillStatus": ("registry.services.history.controls", "SkillStatus"),
    "SkillSummary": ("registry.services.read", "SkillSummary"),
    "Snapshot": ("registry.services.discovery.snapshots", "Snapshot"),
    "SnapshotList": ("registry.services.discovery.snapshots", "SnapshotList"),
    "Status": ("registry.services.ops.status", "Status"),
    "SuppressionInfo": ("registry.services.learning.suppressions", "SuppressionInfo"),
    "TargetHold": ("registry.services.ops.revoked", "TargetHold"),
    "TargetTrust": ("registry.services.ops.status", "TargetTrust"),
    "TokenInfo": ("registry.services.ops.tokens", "TokenInfo"),
    "UNCHANGED": ("registry.services.materialize.report", "UNCHANGED"),
    "Verified": ("registry.domain.attestation", "Verified"),
    "VersionAttestation": ("registry.services.trust.attest", "VersionAttestation"),
    "VersionSummary": ("registry.services.history.versions", "VersionSummary"),
    "YankReport": ("registry.services.history.revocations", "YankReport"),
}

__getattr__ = lazy.names(__name__, _HOMES)

__all__ = [
    "ACTIONS",
    "DEFAULT_ACTOR",
    "DEFAULT_LIMIT",
    "EVERY_WORKSPACE",
    "MAX_LIMIT",
    "POLICIES",
    "PROPOSAL_KINDS",
    "RESCAN",
    "UNCHANGED",
    "ApproveResult",
    "Artifact",
    "Changes",
    "CopyStatus",
    "Decision",
    "DecisionOutcome",
    "DecisionRequest",
    "DecisionResult",
    "DiffTarget",
    "DiscoveryIndex",
    "DiscoverySettings",
    "Enqueued",
    "ExclusionReport",
    "FileChange",
    "ForgetReport",
    "FsckReport",
    "GcFigures",
    "GcReport",
    "HistoryPage",
    "IndexEntry",
    "JobFigures",
    "JobOutcome",
    "JobPage",
    "JobRow",
    "KeyInfo",
    "LearningStatus",
    "LegacyIndex",
    "ListingVersion",
    "LoadRecord",
    "LockFile",
    "LockedSkill",
    "ManifestFile",
    "MaterializationFigures",
    "Package",
    "PackageDiff",
    "PackageInfo",
    "PendingWriteInfo",
    "Policy",
    "ProposalDetail",
    "ProposalPage",
    "ProposalRef",
    "ProposalSummary",
    "ReconcileReport",
    "ReviewPage",
    "ReviewRow",
    "Revocation",
    "RevokedVersion",
    "SearchHit",
    "SearchResults",
    "SkillOutcome",
    "SkillPage",
    "SkillStatus",
    "SkillSummary",
    "Snapshot",
    "SnapshotList",
    "Status",
    "SuppressionInfo",
    "TargetHold",
    "TargetTrust",
    "TokenInfo",
    "Verified",
    "VersionAttestation",
    "VersionSummary",
    "YankReport",
]
