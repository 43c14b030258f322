"""The registry's exceptions: a shallow hierarchy under `RegistryError`.

Every exception carries the data a caller needs to act on it (the path and rule that was
broken, the head that was found instead of the expected one) as attributes, and a readable
message. Entry points map the classes to exit codes (CLI) and status codes (HTTP) in one
table each; the `code` attribute is the stable machine-readable name used by both.

No exception ever carries file content: `ContentBlocked` names the path, the pattern class
and the ordinal of the finding, never the value that matched.

The form: an error that carries data is a `@dataclass(eq=False, repr=False)` whose fields
give its constructor (positional order and keyword names), its attributes and `details()`
(less a field marked `ATTRIBUTE_ONLY`). Its message is a `template` formatted with the
fields, or a `__str__` where the wording depends on the values; `__post_init__` stores it in
`args` as `Exception.__init__` would. `code` is a required class keyword, so no subclass
inherits its base's code by omission. `eq=False` keeps identity equality and hashing,
`repr=False` keeps `Exception`'s repr (the message), and `__reduce__` restores the fields
instead of calling the constructor with the message, so errors pickle and copy.
`SkillExists` and `ProposalStale` keep a written `__init__`: their argument order puts one
of their own before the fields inherited from `HeadConflict`, which a dataclass cannot do.
The category bases and `Inconsistency` carry no data: plain classes that take a message.

The classes live by category in `refused`, `conflicts` and `missing`, their form in `base`;
import them from `registry.errors`.
"""

from registry.errors.base import ATTRIBUTE_ONLY, RegistryError, all_errors, by_code
from registry.errors.conflicts import (
    ArchivedSkillAmbiguous,
    Conflict,
    DraftKept,
    EntryInTheWay,
    HeadConflict,
    JobLeaseLost,
    LockMismatch,
    NotInstalled,
    NotInUse,
    OwnershipConflict,
    ProposalStale,
    SkillExists,
    SlugLookAlike,
    SlugTaken,
    StateConflict,
    TargetBusy,
    TargetMismatch,
    VersionNotNewer,
)
from registry.errors.missing import (
    AccessDenied,
    ArchivedSkillNotFound,
    AttestationMissing,
    BlobUnknown,
    Forbidden,
    Inconsistency,
    JobNotFound,
    ListingNotFound,
    NotFound,
    NotInitialized,
    PendingWriteNotFound,
    ProposalNotFound,
    ReviewNotFound,
    ScopeNotFound,
    SigningKeyUnavailable,
    SkillNotFound,
    StorageUnavailable,
    SuppressionNotFound,
    TargetNotFound,
    TokenNotFound,
    Unauthenticated,
    VersionNotFound,
    VersionRevoked,
    VersionUnavailable,
    WorkspaceBusy,
    WorkspaceNotFound,
)
from registry.errors.refused import (
    ArchiveRejected,
    ArgumentInvalid,
    AttestationInvalid,
    BlobDigestMismatch,
    BlobsMissing,
    CapacityExceeded,
    ContentBlocked,
    FindingNotFound,
    FrontmatterInvalid,
    InvalidName,
    LearningIncomplete,
    LimitExceeded,
    LockFileInvalid,
    ManifestInvalid,
    PathRejected,
    QuotaExceeded,
    RefusedInput,
    RemoteRefused,
    SourceExcluded,
    TargetInvalid,
    TargetLimitReached,
)

__all__ = [
    "ATTRIBUTE_ONLY",
    "AccessDenied",
    "ArchiveRejected",
    "ArchivedSkillAmbiguous",
    "ArchivedSkillNotFound",
    "ArgumentInvalid",
    "AttestationInvalid",
    "AttestationMissing",
    "BlobDigestMismatch",
    "BlobUnknown",
    "BlobsMissing",
    "CapacityExceeded",
    "Conflict",
    "ContentBlocked",
    "DraftKept",
    "EntryInTheWay",
    "FindingNotFound",
    "Forbidden",
    "FrontmatterInvalid",
    "HeadConflict",
    "Inconsistency",
    "InvalidName",
    "JobLeaseLost",
    "JobNotFound",
    "LearningIncomplete",
    "LimitExceeded",
    "ListingNotFound",
    "LockFileInvalid",
    "LockMismatch",
    "ManifestInvalid",
    "NotFound",
    "NotInUse",
    "NotInitialized",
    "NotInstalled",
    "OwnershipConflict",
    "PathRejected",
    "PendingWriteNotFound",
    "ProposalNotFound",
    "ProposalStale",
    "QuotaExceeded",
    "RefusedInput",
    "RegistryError",
    "RemoteRefused",
    "ReviewNotFound",
    "ScopeNotFound",
    "SigningKeyUnavailable",
    "SkillExists",
    "SkillNotFound",
    "SlugLookAlike",
    "SlugTaken",
    "SourceExcluded",
    "StateConflict",
    "StorageUnavailable",
    "SuppressionNotFound",
    "TargetBusy",
    "TargetInvalid",
    "TargetLimitReached",
    "TargetMismatch",
    "TargetNotFound",
    "TokenNotFound",
    "Unauthenticated",
    "VersionNotFound",
    "VersionNotNewer",
    "VersionRevoked",
    "VersionUnavailable",
    "WorkspaceBusy",
    "WorkspaceNotFound",
    "all_errors",
    "by_code",
]

# Every error names its public home: reprs, tracebacks and pickles say `registry.errors.X`.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type):
        _value.__module__ = __name__
del _name, _value
