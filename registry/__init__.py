"""skill-registry: a transactional registry for agent skill packages.

The public face: `Registry`, its value types, and the exceptions in `registry.errors`.

The names are imported on first use (PEP 562's module `__getattr__`): importing a part of
the package (`registry.cli.main`, `registry.settings`) does not import the whole API, its
database engine and its services, so `skillreg --help` starts in a fraction of the time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from registry.api import Registry
    from registry.domain.approvals import FindingRef
    from registry.domain.model import (
        ANY,
        DEFAULT_AGENT,
        AnyHead,
        ArchivedVersion,
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

# Each public name and the module that defines it.
_HOMES = {
    "Registry": "registry.api",
    "FindingRef": "registry.domain.approvals",
    "ANY": "registry.domain.model",
    "DEFAULT_AGENT": "registry.domain.model",
    "AnyHead": "registry.domain.model",
    "ArchivedVersion": "registry.domain.model",
    "ExpectedHead": "registry.domain.model",
    "FileInput": "registry.domain.model",
    "Origin": "registry.domain.model",
    "PackageFile": "registry.domain.model",
    "Publication": "registry.domain.model",
    "Scope": "registry.domain.model",
    "NotInitialized": "registry.errors",
    "ProposalRef": "registry.services.history.diff",
    "LockedSkill": "registry.services.materialize.lockfile",
    "LockFile": "registry.services.materialize.lockfile",
    "ReconcileReport": "registry.services.materialize.report",
    "SkillOutcome": "registry.services.materialize.report",
    "Status": "registry.services.ops.status",
    "Package": "registry.services.read",
    "PackageInfo": "registry.services.read",
    "SkillPage": "registry.services.read",
    "SkillSummary": "registry.services.read",
    "Settings": "registry.settings",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module 'registry' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # found once; later look-ups do not come here
    return value


__all__ = [
    "ANY",
    "DEFAULT_AGENT",
    "AnyHead",
    "ArchivedVersion",
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
