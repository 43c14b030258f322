"""skill-registry: a transactional registry for agent skill packages.

The public face: `Registry`, its value types, and the exceptions in `registry.errors`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from registry.api import Registry
from registry.domain.approvals import FindingRef
from registry.domain.model import (
    ANY,
    DEFAULT_AGENT,
    AnyHead,
    ExpectedHead,
    FileInput,
    Origin,
    PackageFile,
    Publication,
    Scope,
)
from registry.errors import NotInitialized
from registry.services.history.diff import ProposalRef
from registry.services.materialize.lockfile import LockedSkill, LockFile
from registry.services.materialize.report import ReconcileReport, SkillOutcome
from registry.services.ops.status import Status
from registry.services.read import Package, PackageInfo, SkillPage, SkillSummary
from registry.settings import Settings

__all__ = [
    "ANY",
    "DEFAULT_AGENT",
    "AnyHead",
    "ExpectedHead",
    "FileInput",
    "FindingRef",
    "LockFile",
    "LockedSkill",
    "NotInitialized",
    "Origin",
    "Package",
    "PackageFile",
    "PackageInfo",
    "ProposalRef",
    "Publication",
    "ReconcileReport",
    "Registry",
    "Scope",
    "Settings",
    "SkillOutcome",
    "SkillPage",
    "SkillSummary",
    "Status",
    "__version__",
]
