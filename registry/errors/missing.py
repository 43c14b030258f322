"""Not found, access and infrastructure errors (exit 5, HTTP 401/403, exit 1)."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.errors.base import ATTRIBUTE_ONLY, RegistryError

# ---------------------------------------------------------------- not found (exit 5)


class NotFound(RegistryError, code="not_found"):
    """The thing does not exist (or belongs to another workspace, which looks the same)."""


def _nearest(names: list[str]) -> str:
    return f"; nearest: {', '.join(names)}" if names else ""


@dataclass(eq=False, repr=False)
class SkillNotFound(NotFound, code="skill_not_found"):
    """No live skill has this slug in the scope; `nearest` names the closest ones, if any."""

    workspace: str
    agent: str
    slug: str
    # Keyword-only: a subclass's own fields follow the slug (`ArchivedSkillNotFound`).
    nearest: list[str] = field(default_factory=list, kw_only=True)

    def __str__(self) -> str:
        where = f"skill {self.workspace}/{self.slug} (agent {self.agent!r}) not found"
        return where + _nearest(self.nearest)


@dataclass(eq=False, repr=False)
class WorkspaceNotFound(NotFound, code="workspace_not_found"):
    """Nothing was ever recorded for this workspace: no skill, no token, no settings.

    Most likely a misspelt name: `nearest` names the closest existing workspaces. What
    makes a workspace exist is in registry/db/workspaces.py.
    """

    workspace: str
    nearest: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"workspace {self.workspace!r} not found" + _nearest(self.nearest)


@dataclass(eq=False, repr=False)
class ArchivedSkillNotFound(SkillNotFound, code="archived_skill_not_found"):
    """No deleted skill of the slug (with that id, if one was named) in the scope."""

    skill_id: int | None

    def __str__(self) -> str:
        which = "" if self.skill_id is None else f"~{self.skill_id}"
        return f"no deleted skill {self.workspace}/{self.slug}{which} (agent {self.agent!r})"


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
class AttestationMissing(NotFound, code="attestation_missing"):
    """The version has no attestation: it was published before versions were signed."""

    template = "version {version} of skill {slug!r} has no attestation (published unsigned)"
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
class VersionRevoked(NotFound, code="version_revoked"):
    """The version was revoked (yanked): it is never served as something to use.

    History, diffs and `get` still show it, marked; HTTP answers 410 Gone where it would
    have served it (docs/revocation.md).
    """

    template = "version {version} of skill {slug!r} is revoked ({kind}): {reason}"
    slug: str
    version: int
    kind: str
    reason: str


@dataclass(eq=False, repr=False)
class ProposalNotFound(NotFound, code="proposal_not_found"):
    template = "proposal {proposal} not found"
    proposal: int


@dataclass(eq=False, repr=False)
class ReviewNotFound(NotFound, code="review_not_found"):
    """No content review (a rescan's decision) with this id in the workspace."""

    template = "content review {review} not found"
    review: int


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
class SigningKeyUnavailable(StorageUnavailable, code="signing_key_unavailable"):
    """The key that signs versions is missing, unreadable, or was retired (docs/trust.md).

    `what` names where the key was looked for (a file, `SKILLREG_SIGNING_KEY`, a key id);
    nothing is written unsigned: `skillreg init` or `skillreg keys create` makes one.
    """

    template = "signing key {what} unavailable: {detail}"


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
    # A SQLite file that does not exist (nothing was created looking for it).
    missing: str | None = field(default=None, metadata=ATTRIBUTE_ONLY)
    what: str = field(default="database", init=False)
    detail: str = field(default="not initialised", init=False)

    def __str__(self) -> str:
        if self.missing is not None:
            return f"no database at {self.missing}: run `skillreg init` to create it"
        return (
            f"the database has {schema_name(self.current)}, the registry needs "
            f"{schema_name(self.head)}: run `skillreg init`"
        )


def schema_name(revision: str | None) -> str:
    """A migration revision as a person reads it: `0010` is schema version 10."""
    if revision is None:
        return "no schema"
    return f"schema version {int(revision)}" if revision.isdigit() else f"schema {revision}"


class Inconsistency(RegistryError, code="integrity_error"):
    """Stored data does not match what the registry recorded (a corrupted blob, say).

    Not `IntegrityError`: that is SQLAlchemy's name for a violated constraint.
    """
