"""The values the API takes and returns, in one place for the entry points.

The CLI, the HTTP service and the console import `registry.api` (and `registry.errors`,
`registry.domain` value types, `registry.wire`), never `registry.services` or `registry.db`
(the import-linter contracts in pyproject.toml). The results and requests of `Registry`
and its namespaces are defined by the services that produce them; this module names them
for the callers.
"""

from __future__ import annotations

from registry.domain.attestation import Verified
from registry.services.discovery.artifacts import Artifact
from registry.services.discovery.index import DiscoveryIndex, IndexEntry
from registry.services.discovery.settings import DiscoverySettings
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
from registry.services.search.query import DEFAULT_LIMIT, MAX_LIMIT, SearchHit, SearchResults
from registry.services.trust.attest import VersionAttestation
from registry.services.trust.keys import KeyInfo
from registry.services.write.uploads import ManifestFile

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
