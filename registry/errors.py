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
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields, is_dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Final

# Field metadata: the field is an attribute of the exception, not one of its `details()`.
ATTRIBUTE_ONLY: Final = MappingProxyType({"details": False})


class RegistryError(Exception):
    """Base class of every error the registry raises on purpose."""

    code: ClassVar[str] = "registry_error"
    # The message, formatted with the fields; empty: the message given to the constructor.
    template: ClassVar[str] = ""

    def __init_subclass__(cls, *, code: str, **kwargs: Any) -> None:
        # Every class names its own code: a subclass cannot silently reuse its base's.
        super().__init_subclass__(**kwargs)
        cls.code = code

    def __post_init__(self) -> None:
        # A dataclass's `__init__` does not call `Exception.__init__`; this stands in for it.
        self.args = (str(self),)

    def __str__(self) -> str:
        if not self.template:
            return super().__str__()
        return self.template.format_map({f.name: getattr(self, f.name) for f in _fields(self)})

    def details(self) -> dict[str, object]:
        """Machine-readable fields of the error (JSON-safe)."""
        data = [f for f in _fields(self) if f.metadata.get("details", True)]
        return {f.name: getattr(self, f.name) for f in data}

    def __reduce__(self) -> tuple[Any, ...]:
        # `BaseException` pickles as `cls(*args)`, which would hand the message to a
        # constructor that takes fields: rebuild without `__init__`, then restore `__dict__`.
        return (_rebuild, (type(self), self.args), self.__dict__)


def _rebuild(cls: type[RegistryError], args: tuple[object, ...]) -> RegistryError:
    exc = cls.__new__(cls)
    exc.args = args
    return exc


def _fields(exc: object) -> tuple[Field[Any], ...]:
    # `object`: mypy cannot tell that a subclass of the plain `RegistryError` is a dataclass.
    return fields(exc) if is_dataclass(exc) else ()  # the category bases carry no data


def _paren(detail: str) -> str:
    return f" ({detail})" if detail else ""


def _at(path: str | None) -> str:
    return f" at {path!r}" if path else ""


# ---------------------------------------------------------------- refused input (exit 3)


class RefusedInput(RegistryError, code="refused_input"):
    """The input was refused; nothing was stored."""


@dataclass(eq=False, repr=False)
class InvalidName(RefusedInput, code="invalid_name"):
    """A slug, workspace or agent name breaks the naming rules."""

    template = "invalid {kind} {value!r}: {rule}"
    kind: str
    value: str
    rule: str


@dataclass(eq=False, repr=False)
class PathRejected(RefusedInput, code="path_rejected"):
    """A path inside a package breaks a path rule."""

    path: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"path {self.path!r} rejected: {self.rule}{_paren(self.detail)}"


@dataclass(eq=False, repr=False)
class LimitExceeded(RefusedInput, code="limit_exceeded"):
    """A package, or one file in it, is larger than a configured limit."""

    rule: str
    limit: int
    actual: int
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.rule}{_at(self.path)}: {self.actual} exceeds the limit of {self.limit}"


@dataclass(eq=False, repr=False)
class FrontmatterInvalid(RefusedInput, code="frontmatter_invalid"):
    """`SKILL.md` is missing, or its frontmatter is not valid."""

    path: str = field(default="SKILL.md", init=False)  # always the root's; said for clients
    rule: str
    detail: str = ""
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        suffix = f": {self.detail}" if self.detail else ""
        return f"SKILL.md{where} rejected: {self.rule}{suffix}"


@dataclass(eq=False, repr=False)
class ContentBlocked(RefusedInput, code="content_blocked"):
    """A credential-like value was found. The value itself is never carried.

    `path`, `pattern_class` and `ordinal` name the first blocking finding; `findings` lists
    every blocking finding of the write (path, pattern class, ordinal, line), so that an
    owner can approve them all at once (`FindingRef(path, ordinal)`).
    """

    template = "content blocked in {path!r}: finding #{ordinal} looks like a {pattern_class}"
    path: str
    pattern_class: str
    ordinal: int
    findings: list[dict[str, object]] = field(default_factory=list)


@dataclass(eq=False, repr=False)
class LearningIncomplete(RefusedInput, code="learning_incomplete"):
    """A learning write's `SKILL.md` lacks its Steps or a concrete Verification section."""

    template = "learned skill refused: {section} missing ({detail})"
    section: str
    detail: str


@dataclass(eq=False, repr=False)
class CapacityExceeded(RefusedInput, code="capacity_exceeded"):
    """The scope already holds as many skills of this budget as it may."""

    template = "capacity exceeded: at most {limit} {budget} skills per scope"
    limit: int
    budget: str = "saved"


@dataclass(eq=False, repr=False)
class QuotaExceeded(RefusedInput, code="quota_exceeded"):
    """The workspace's storage quota would be exceeded by this write."""

    template = (
        "storage quota exceeded: {used} bytes used, the write adds {needed}, the limit is {limit}"
    )
    limit: int
    used: int
    needed: int


@dataclass(eq=False, repr=False)
class ArchiveRejected(RefusedInput, code="archive_rejected"):
    """An archive (marketplace import) breaks an extraction rule; nothing was extracted.

    `member` is the entry's name as the archive spells it (decoded leniently for display,
    empty when the rule is about the whole archive); `rule` is a stable name
    (docs/marketplace.md lists them).
    """

    member: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        where = f" entry {self.member!r}" if self.member else ""
        return f"archive{where} rejected: {self.rule}{_paren(self.detail)}"


@dataclass(eq=False, repr=False)
class SourceExcluded(RefusedInput, code="source_excluded"):
    """The write lists a source that is excluded from the workspace."""

    template = "source {source!r} is excluded from this workspace"
    source: str


@dataclass(eq=False, repr=False)
class FindingNotFound(RefusedInput, code="finding_not_found"):
    """An approval names a finding (path and ordinal) that the content check did not find."""

    template = "no finding #{ordinal} in {path!r} to approve"
    path: str
    ordinal: int


@dataclass(eq=False, repr=False)
class TargetInvalid(RefusedInput, code="target_invalid"):
    """A materialisation target cannot be used: not a directory, or its private area is not."""

    path: str
    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"target {self.path!r} cannot be used: {self.rule}{_paren(self.detail)}"


@dataclass(eq=False, repr=False)
class LockFileInvalid(RefusedInput, code="lock_file_invalid"):
    """A lock file is malformed, or does not belong to the scope it is used with."""

    rule: str
    detail: str = ""

    def __str__(self) -> str:
        return f"lock file rejected: {self.rule}" + (f": {self.detail}" if self.detail else "")


@dataclass(eq=False, repr=False)
class BlobDigestMismatch(RefusedInput, code="digest_mismatch"):
    """Uploaded bytes do not hash to the digest they were sent under; nothing was stored."""

    template = "digest mismatch: the bytes sent as {expected} hash to {actual}"
    expected: str
    actual: str


@dataclass(eq=False, repr=False)
class ManifestInvalid(RefusedInput, code="manifest_invalid"):
    """A manifest sent by a client is malformed or contradicts the blobs it names."""

    rule: str
    detail: str
    path: str | None = None

    def __str__(self) -> str:
        return f"manifest rejected{_at(self.path)}: {self.rule} ({self.detail})"


@dataclass(eq=False, repr=False)
class BlobsMissing(RefusedInput, code="blobs_missing"):
    """A manifest names blobs this workspace has not uploaded (or may not see).

    Content addressing is global, so a digest alone is no proof of having the bytes: a
    manifest may only name blobs the workspace uploaded or already references.
    """

    digests: list[str]

    def __post_init__(self) -> None:
        self.digests = sorted(self.digests)  # the same details whatever order they were found
        super().__post_init__()

    def __str__(self) -> str:
        n = len(self.digests)
        return f"{n} blobs named by the manifest were not uploaded to this workspace"


# ---------------------------------------------------------------- conflicts (exit 4)


class Conflict(RegistryError, code="conflict"):
    """The write lost a race or contradicts the current state; nothing was changed."""


@dataclass(eq=False, repr=False)
class HeadConflict(Conflict, code="head_conflict"):
    """Compare-and-swap failed: the head is not the one the caller expected."""

    expected: int | None
    current: int | None

    def __str__(self) -> str:
        want = "no skill" if self.expected is None else f"version {self.expected}"
        found = "no skill" if self.current is None else f"version {self.current}"
        return f"head conflict: expected {want}, found {found}"


@dataclass(eq=False, repr=False, init=False)
class SkillExists(HeadConflict, code="skill_exists"):
    """A create (expected head `None`) found the skill already there."""

    slug: str

    def __init__(self, slug: str, current: int) -> None:
        self.slug = slug
        super().__init__(None, current)

    def __str__(self) -> str:
        return f"skill {self.slug!r} already exists at version {self.current}"


@dataclass(eq=False, repr=False)
class OwnershipConflict(Conflict, code="ownership_conflict"):
    """A marketplace write would replace an owner-saved skill (or the reverse)."""

    template = "skill {slug!r} is an owner-{kind} skill and cannot be replaced"
    slug: str
    kind: str


@dataclass(eq=False, repr=False)
class StateConflict(Conflict, code="state_conflict"):
    """The action is not allowed in the skill's (or proposal's) current state."""

    template = "{action} is not allowed in state {state!r}"
    action: str
    state: str


@dataclass(eq=False, repr=False)
class NotInstalled(Conflict, code="not_installed"):
    """A marketplace update names a skill that is not an installed copy of a listing."""

    template = "skill {slug!r} is an owner-{kind} skill, not an installed marketplace copy"
    slug: str
    kind: str


@dataclass(eq=False, repr=False)
class JobLeaseLost(Conflict, code="job_lease_lost"):
    """A worker lost its lease on a job (another may have taken it); its outcome is dropped."""

    template = "job {job_id}: worker {owner!r} no longer holds its lease"
    job_id: int
    owner: str


@dataclass(eq=False, repr=False)
class DraftKept(HeadConflict, code="draft_kept"):
    """An owner's edit lost its compare-and-swap; the draft was stored as proposal `proposal`."""

    proposal: int

    def __str__(self) -> str:
        return f"{super().__str__()}; the draft was kept as proposal {self.proposal}"


@dataclass(eq=False, repr=False, init=False)
class ProposalStale(HeadConflict, code="proposal_stale"):
    """A proposal cannot be applied: the head moved away from the version it was made on."""

    proposal: int

    def __init__(self, proposal: int, base: int, current: int | None) -> None:
        self.proposal = proposal
        super().__init__(base, current)

    def __str__(self) -> str:
        return (
            f"proposal {self.proposal} is stale: it was made on version {self.expected}, "
            f"the head is {self.current}"
        )


@dataclass(eq=False, repr=False)
class TargetBusy(Conflict, code="target_busy"):
    """Another reconciler holds the target's lock file."""

    template = "another reconciler is running on target {path!r}; wait for it (or pass --wait)"
    path: str


@dataclass(eq=False, repr=False)
class TargetMismatch(Conflict, code="target_mismatch"):
    """The target belongs to another scope, or was created in another mode."""

    template = (
        "target {path!r} was created with {field} {recorded!r}, not {requested!r}; "
        "use another directory"
    )
    path: str
    field: str
    recorded: str
    requested: str


@dataclass(eq=False, repr=False)
class EntryInTheWay(Conflict, code="entry_in_the_way"):
    """A file or folder the reconciler does not manage occupies a skill's place in a target."""

    template = (
        "{path!r} is a {kind} the reconciler did not create; move it away to materialise "
        "the skill there"
    )
    path: str
    kind: str


@dataclass(eq=False, repr=False)
class LockMismatch(Conflict, code="lock_mismatch"):
    """A lock file names a version whose manifest hash is not the registry's."""

    # `.16` cuts the hashes to 16 characters.
    template = (
        "lock file pins {slug} version {version} at manifest {locked:.16}, "
        "the registry has {actual:.16}"
    )
    slug: str
    version: int
    locked: str
    actual: str


@dataclass(eq=False, repr=False)
class NotInUse(Conflict, code="not_in_use"):
    """A pinned skill is deleted, archived or its use is paused, so it is not materialised."""

    template = "skill {slug!r} is not materialised: {reason}"
    slug: str
    reason: str


# ---------------------------------------------------------------- not found (exit 5)


class NotFound(RegistryError, code="not_found"):
    """The thing does not exist (or belongs to another workspace, which looks the same)."""


@dataclass(eq=False, repr=False)
class SkillNotFound(NotFound, code="skill_not_found"):
    template = "skill {workspace}/{slug} (agent {agent!r}) not found"
    workspace: str
    agent: str
    slug: str


@dataclass(eq=False, repr=False)
class ScopeNotFound(NotFound, code="scope_not_found"):
    """A scope has no skills, no history and no target: probably a misspelt name."""

    template = (
        "workspace {workspace!r} (agent {agent!r}) has no skills, no history and no target; "
        "to bind a target to it anyway, ask to create it (`--create`)"
    )
    workspace: str
    agent: str


@dataclass(eq=False, repr=False)
class VersionNotFound(NotFound, code="version_not_found"):
    template = "version {version} of skill {slug!r} not found"
    slug: str
    version: int


@dataclass(eq=False, repr=False)
class ListingNotFound(NotFound, code="listing_not_found"):
    """The catalog has no listing with this id (or not this version of it)."""

    listing: str
    version: int | None = None

    def __str__(self) -> str:
        which = f"version {self.version} of " if self.version is not None else "listing "
        return f"{which}{self.listing!r} not found in the catalog"


@dataclass(eq=False, repr=False)
class JobNotFound(NotFound, code="job_not_found"):
    template = "job {job_id} not found"
    job_id: int


@dataclass(eq=False, repr=False)
class VersionUnavailable(NotFound, code="version_unavailable"):
    """The version exists but may not be read or restored (it lists an excluded source)."""

    template = "version {version} of skill {slug!r} is unavailable: source {source!r} is excluded"
    slug: str
    version: int
    source: str


@dataclass(eq=False, repr=False)
class ProposalNotFound(NotFound, code="proposal_not_found"):
    template = "proposal {proposal} not found"
    proposal: int


@dataclass(eq=False, repr=False)
class PendingWriteNotFound(NotFound, code="pending_write_not_found"):
    template = "pending write {pending} not found"
    pending: int


@dataclass(eq=False, repr=False)
class SuppressionNotFound(NotFound, code="suppression_not_found"):
    template = "suppression {suppression} not found"
    suppression: int


@dataclass(eq=False, repr=False)
class BlobUnknown(NotFound, code="blob_not_found"):
    """No blob with this digest is visible to the workspace (stored or not, it looks the same)."""

    template = "blob {digest} not found in this workspace"
    digest: str


@dataclass(eq=False, repr=False)
class TokenNotFound(NotFound, code="token_not_found"):
    template = "access token {token_id!r} not found"
    token_id: str


@dataclass(eq=False, repr=False)
class TargetNotFound(NotFound, code="target_not_found"):
    """No materialisation target with this id is registered in the workspace."""

    template = "target {target_id} is not registered in this workspace"
    target_id: str


# ---------------------------------------------------------------- access (HTTP 401/403; exit 1)


class AccessDenied(RegistryError, code="access_denied"):
    """The caller may not make this request. Only entry points that authenticate raise it."""


@dataclass(eq=False, repr=False)
class Unauthenticated(AccessDenied, code="unauthenticated"):
    """No access token, or one that is malformed, unknown or revoked (never says which)."""

    template = "a valid access token is required"


@dataclass(eq=False, repr=False)
class Forbidden(AccessDenied, code="forbidden"):
    """The token belongs to the workspace but its role is below the one the request needs."""

    template = "this request needs the {needed!r} role; the token has {held!r}"
    needed: str
    held: str


# ---------------------------------------------------------------- infrastructure (exit 1)


@dataclass(eq=False, repr=False)
class StorageUnavailable(RegistryError, code="storage_unavailable"):
    """The database or the blob store failed in a way retrying did not fix."""

    template = "{what} unavailable: {detail}"
    what: str
    detail: str


@dataclass(eq=False, repr=False)
class WorkspaceBusy(StorageUnavailable, code="workspace_busy"):
    """The workspace lock (or the database's write lock) was not granted in time."""

    template = "workspace {workspace!r} is busy: its lock was not granted within {timeout}s"
    workspace: str
    timeout: float
    # A `StorageUnavailable` has `what` and `detail`; this one reports the two above instead.
    what: str = field(default="workspace lock", init=False, metadata=ATTRIBUTE_ONLY)
    detail: str = field(init=False, metadata=ATTRIBUTE_ONLY)

    def __post_init__(self) -> None:
        self.detail = f"not granted within {self.timeout}s"
        super().__post_init__()


@dataclass(eq=False, repr=False)
class NotInitialized(StorageUnavailable, code="not_initialized"):
    """The database has no schema, or an older one: run `skillreg init`."""

    current: str | None = field(metadata=ATTRIBUTE_ONLY)
    head: str = field(metadata=ATTRIBUTE_ONLY)
    what: str = field(default="database", init=False)
    detail: str = field(default="not initialised", init=False)

    def __str__(self) -> str:
        return (
            f"the database is at revision {self.current or 'none'}, the registry needs "
            f"{self.head}: run `skillreg init`"
        )


class Inconsistency(RegistryError, code="integrity_error"):
    """Stored data does not match what the registry recorded (a corrupted blob, say).

    Not `IntegrityError`: that is SQLAlchemy's name for a violated constraint.
    """
