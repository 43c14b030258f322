"""The registry's exceptions: a shallow hierarchy under `RegistryError`.

Every exception carries the data a caller needs to act on it (the path and rule that was
broken, the head that was found instead of the expected one) as attributes, and a readable
message. Entry points map the classes to exit codes (CLI) and status codes (HTTP) in one
table each; the `code` attribute is the stable machine-readable name used by both.

No exception ever carries file content: `ContentBlocked` names the path, the pattern class
and the ordinal of the finding, never the value that matched.
"""

from __future__ import annotations

from typing import ClassVar


class RegistryError(Exception):
    """Base class of every error the registry raises on purpose."""

    code: ClassVar[str] = "registry_error"

    def details(self) -> dict[str, object]:
        """Machine-readable fields of the error (JSON-safe)."""
        return {}


# ---------------------------------------------------------------- refused input (exit 3)


class RefusedInput(RegistryError):
    """The input was refused; nothing was stored."""

    code = "refused_input"


class InvalidName(RefusedInput):
    """A slug, workspace or agent name breaks the naming rules."""

    code = "invalid_name"

    def __init__(self, kind: str, value: str, rule: str) -> None:
        self.kind = kind
        self.value = value
        self.rule = rule
        super().__init__(f"invalid {kind} {value!r}: {rule}")

    def details(self) -> dict[str, object]:
        return {"kind": self.kind, "value": self.value, "rule": self.rule}


class PathRejected(RefusedInput):
    """A path inside a package breaks a path rule."""

    code = "path_rejected"

    def __init__(self, path: str, rule: str, detail: str = "") -> None:
        self.path = path
        self.rule = rule
        self.detail = detail
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"path {path!r} rejected: {rule}{suffix}")

    def details(self) -> dict[str, object]:
        return {"path": self.path, "rule": self.rule, "detail": self.detail}


class LimitExceeded(RefusedInput):
    """A package, or one file in it, is larger than a configured limit."""

    code = "limit_exceeded"

    def __init__(self, rule: str, limit: int, actual: int, path: str | None = None) -> None:
        self.rule = rule
        self.limit = limit
        self.actual = actual
        self.path = path
        where = f" at {path!r}" if path else ""
        super().__init__(f"{rule}{where}: {actual} exceeds the limit of {limit}")

    def details(self) -> dict[str, object]:
        return {"rule": self.rule, "limit": self.limit, "actual": self.actual, "path": self.path}


class FrontmatterInvalid(RefusedInput):
    """`SKILL.md` is missing, or its frontmatter is not valid."""

    code = "frontmatter_invalid"

    def __init__(self, rule: str, detail: str = "", line: int | None = None) -> None:
        self.path = "SKILL.md"
        self.rule = rule
        self.detail = detail
        self.line = line
        where = f" (line {line})" if line is not None else ""
        suffix = f": {detail}" if detail else ""
        super().__init__(f"SKILL.md{where} rejected: {rule}{suffix}")

    def details(self) -> dict[str, object]:
        return {"path": self.path, "rule": self.rule, "detail": self.detail, "line": self.line}


class ContentBlocked(RefusedInput):
    """A credential-like value was found. The value itself is never carried."""

    code = "content_blocked"

    def __init__(self, path: str, pattern_class: str, ordinal: int) -> None:
        self.path = path
        self.pattern_class = pattern_class
        self.ordinal = ordinal
        super().__init__(
            f"content blocked in {path!r}: finding #{ordinal} looks like a {pattern_class}"
        )

    def details(self) -> dict[str, object]:
        return {"path": self.path, "pattern_class": self.pattern_class, "ordinal": self.ordinal}


class CapacityExceeded(RefusedInput):
    """The scope already holds as many skills of this budget as it may."""

    code = "capacity_exceeded"

    def __init__(self, limit: int, budget: str = "saved") -> None:
        self.limit = limit
        self.budget = budget
        super().__init__(f"capacity exceeded: at most {limit} {budget} skills per scope")

    def details(self) -> dict[str, object]:
        return {"limit": self.limit, "budget": self.budget}


class QuotaExceeded(RefusedInput):
    """The workspace's storage quota would be exceeded by this write."""

    code = "quota_exceeded"

    def __init__(self, limit: int, used: int, needed: int) -> None:
        self.limit = limit
        self.used = used
        self.needed = needed
        super().__init__(
            f"storage quota exceeded: {used} bytes used, the write adds {needed}, "
            f"the limit is {limit}"
        )

    def details(self) -> dict[str, object]:
        return {"limit": self.limit, "used": self.used, "needed": self.needed}


class ArchiveRejected(RefusedInput):
    """An archive (marketplace import) breaks an extraction rule; nothing was extracted.

    `member` is the entry's name as the archive spells it (decoded leniently for display,
    empty when the rule is about the whole archive); `rule` is a stable name
    (docs/marketplace.md lists them).
    """

    code = "archive_rejected"

    def __init__(self, member: str, rule: str, detail: str = "") -> None:
        self.member = member
        self.rule = rule
        self.detail = detail
        where = f" entry {member!r}" if member else ""
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"archive{where} rejected: {rule}{suffix}")

    def details(self) -> dict[str, object]:
        return {"member": self.member, "rule": self.rule, "detail": self.detail}


class SourceExcluded(RefusedInput):
    """The write lists a source that is excluded from the workspace."""

    code = "source_excluded"

    def __init__(self, source: str) -> None:
        self.source = source
        super().__init__(f"source {source!r} is excluded from this workspace")

    def details(self) -> dict[str, object]:
        return {"source": self.source}


class FindingNotFound(RefusedInput):
    """An approval names a finding (path and ordinal) that the content check did not find."""

    code = "finding_not_found"

    def __init__(self, path: str, ordinal: int) -> None:
        self.path = path
        self.ordinal = ordinal
        super().__init__(f"no finding #{ordinal} in {path!r} to approve")

    def details(self) -> dict[str, object]:
        return {"path": self.path, "ordinal": self.ordinal}


class TargetInvalid(RefusedInput):
    """A materialisation target cannot be used: not a directory, or its private area is not."""

    code = "target_invalid"

    def __init__(self, path: str, rule: str, detail: str = "") -> None:
        self.path = path
        self.rule = rule
        self.detail = detail
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"target {path!r} cannot be used: {rule}{suffix}")

    def details(self) -> dict[str, object]:
        return {"path": self.path, "rule": self.rule, "detail": self.detail}


class LockFileInvalid(RefusedInput):
    """A lock file is malformed, or does not belong to the scope it is used with."""

    code = "lock_file_invalid"

    def __init__(self, rule: str, detail: str = "") -> None:
        self.rule = rule
        self.detail = detail
        suffix = f": {detail}" if detail else ""
        super().__init__(f"lock file rejected: {rule}{suffix}")

    def details(self) -> dict[str, object]:
        return {"rule": self.rule, "detail": self.detail}


class BlobDigestMismatch(RefusedInput):
    """Uploaded bytes do not hash to the digest they were sent under; nothing was stored."""

    code = "digest_mismatch"

    def __init__(self, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(f"digest mismatch: the bytes sent as {expected} hash to {actual}")

    def details(self) -> dict[str, object]:
        return {"expected": self.expected, "actual": self.actual}


class ManifestInvalid(RefusedInput):
    """A manifest sent by a client is malformed or contradicts the blobs it names."""

    code = "manifest_invalid"

    def __init__(self, rule: str, detail: str, path: str | None = None) -> None:
        self.rule = rule
        self.detail = detail
        self.path = path
        where = f" at {path!r}" if path else ""
        super().__init__(f"manifest rejected{where}: {rule} ({detail})")

    def details(self) -> dict[str, object]:
        return {"rule": self.rule, "detail": self.detail, "path": self.path}


class BlobsMissing(RefusedInput):
    """A manifest names blobs this workspace has not uploaded (or may not see).

    Content addressing is global, so a digest alone is no proof of having the bytes: a
    manifest may only name blobs the workspace uploaded or already references.
    """

    code = "blobs_missing"

    def __init__(self, digests: list[str]) -> None:
        self.digests = sorted(digests)
        super().__init__(
            f"{len(self.digests)} blobs named by the manifest were not uploaded to this workspace"
        )

    def details(self) -> dict[str, object]:
        return {"digests": self.digests}


# ---------------------------------------------------------------- conflicts (exit 4)


class Conflict(RegistryError):
    """The write lost a race or contradicts the current state; nothing was changed."""

    code = "conflict"


class HeadConflict(Conflict):
    """Compare-and-swap failed: the head is not the one the caller expected."""

    code = "head_conflict"

    def __init__(self, expected: int | None, current: int | None) -> None:
        self.expected = expected
        self.current = current
        want = "no skill" if expected is None else f"version {expected}"
        found = "no skill" if current is None else f"version {current}"
        super().__init__(f"head conflict: expected {want}, found {found}")

    def details(self) -> dict[str, object]:
        return {"expected": self.expected, "current": self.current}


class SkillExists(HeadConflict):
    """A create (expected head `None`) found the skill already there."""

    code = "skill_exists"

    def __init__(self, slug: str, current: int) -> None:
        self.slug = slug
        super().__init__(None, current)
        self.args = (f"skill {slug!r} already exists at version {current}",)

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "expected": None, "current": self.current}


class OwnershipConflict(Conflict):
    """A marketplace write would replace an owner-saved skill (or the reverse)."""

    code = "ownership_conflict"

    def __init__(self, slug: str, kind: str) -> None:
        self.slug = slug
        self.kind = kind
        super().__init__(f"skill {slug!r} is an owner-{kind} skill and cannot be replaced")

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "kind": self.kind}


class StateConflict(Conflict):
    """The action is not allowed in the skill's (or proposal's) current state."""

    code = "state_conflict"

    def __init__(self, action: str, state: str) -> None:
        self.action = action
        self.state = state
        super().__init__(f"{action} is not allowed in state {state!r}")

    def details(self) -> dict[str, object]:
        return {"action": self.action, "state": self.state}


class NotInstalled(Conflict):
    """A marketplace update names a skill that is not an installed copy of a listing."""

    code = "not_installed"

    def __init__(self, slug: str, kind: str) -> None:
        self.slug = slug
        self.kind = kind
        super().__init__(
            f"skill {slug!r} is an owner-{kind} skill, not an installed marketplace copy"
        )

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "kind": self.kind}


class JobLeaseLost(Conflict):
    """A worker lost its lease on a job (another may have taken it); its outcome is dropped."""

    code = "job_lease_lost"

    def __init__(self, job_id: int, owner: str) -> None:
        self.job_id = job_id
        self.owner = owner
        super().__init__(f"job {job_id}: worker {owner!r} no longer holds its lease")

    def details(self) -> dict[str, object]:
        return {"job_id": self.job_id, "owner": self.owner}


class DraftKept(HeadConflict):
    """An owner's edit lost its compare-and-swap; the draft was stored as proposal `proposal`."""

    code = "draft_kept"

    def __init__(self, expected: int | None, current: int | None, proposal: int) -> None:
        super().__init__(expected, current)
        self.proposal = proposal
        self.args = (f"{self.args[0]}; the draft was kept as proposal {proposal}",)

    def details(self) -> dict[str, object]:
        return {"expected": self.expected, "current": self.current, "proposal": self.proposal}


class ProposalStale(HeadConflict):
    """A proposal cannot be applied: the head moved away from the version it was made on."""

    code = "proposal_stale"

    def __init__(self, proposal: int, base: int, current: int | None) -> None:
        super().__init__(base, current)
        self.proposal = proposal
        self.args = (
            f"proposal {proposal} is stale: it was made on version {base}, the head is {current}",
        )

    def details(self) -> dict[str, object]:
        return {"proposal": self.proposal, "expected": self.expected, "current": self.current}


class TargetBusy(Conflict):
    """Another reconciler holds the target's lock file."""

    code = "target_busy"

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"another reconciler is running on target {path!r}; wait for it (or pass --wait)"
        )

    def details(self) -> dict[str, object]:
        return {"path": self.path}


class TargetMismatch(Conflict):
    """The target belongs to another scope, or was created in another mode."""

    code = "target_mismatch"

    def __init__(self, path: str, field: str, recorded: str, requested: str) -> None:
        self.path = path
        self.field = field
        self.recorded = recorded
        self.requested = requested
        super().__init__(
            f"target {path!r} was created with {field} {recorded!r}, not {requested!r}; "
            "use another directory"
        )

    def details(self) -> dict[str, object]:
        return {
            "path": self.path,
            "field": self.field,
            "recorded": self.recorded,
            "requested": self.requested,
        }


class EntryInTheWay(Conflict):
    """A file or folder the reconciler does not manage occupies a skill's place in a target."""

    code = "entry_in_the_way"

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        super().__init__(
            f"{path!r} is a {kind} the reconciler did not create; move it away to materialise "
            "the skill there"
        )

    def details(self) -> dict[str, object]:
        return {"path": self.path, "kind": self.kind}


class LockMismatch(Conflict):
    """A lock file names a version whose manifest hash is not the registry's."""

    code = "lock_mismatch"

    def __init__(self, slug: str, version: int, locked: str, actual: str) -> None:
        self.slug = slug
        self.version = version
        self.locked = locked
        self.actual = actual
        super().__init__(
            f"lock file pins {slug} version {version} at manifest {locked[:16]}, "
            f"the registry has {actual[:16]}"
        )

    def details(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "version": self.version,
            "locked": self.locked,
            "actual": self.actual,
        }


class NotInUse(Conflict):
    """A pinned skill is deleted, archived or its use is paused, so it is not materialised."""

    code = "not_in_use"

    def __init__(self, slug: str, reason: str) -> None:
        self.slug = slug
        self.reason = reason
        super().__init__(f"skill {slug!r} is not materialised: {reason}")

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "reason": self.reason}


# ---------------------------------------------------------------- not found (exit 5)


class NotFound(RegistryError):
    """The thing does not exist (or belongs to another workspace, which looks the same)."""

    code = "not_found"


class SkillNotFound(NotFound):
    code = "skill_not_found"

    def __init__(self, workspace: str, agent: str, slug: str) -> None:
        self.workspace = workspace
        self.agent = agent
        self.slug = slug
        super().__init__(f"skill {workspace}/{slug} (agent {agent!r}) not found")

    def details(self) -> dict[str, object]:
        return {"workspace": self.workspace, "agent": self.agent, "slug": self.slug}


class VersionNotFound(NotFound):
    code = "version_not_found"

    def __init__(self, slug: str, version: int) -> None:
        self.slug = slug
        self.version = version
        super().__init__(f"version {version} of skill {slug!r} not found")

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "version": self.version}


class ListingNotFound(NotFound):
    """The catalog has no listing with this id (or not this version of it)."""

    code = "listing_not_found"

    def __init__(self, listing: str, version: int | None = None) -> None:
        self.listing = listing
        self.version = version
        which = f"listing {listing!r}" if version is None else f"version {version} of {listing!r}"
        super().__init__(f"{which} not found in the catalog")

    def details(self) -> dict[str, object]:
        return {"listing": self.listing, "version": self.version}


class JobNotFound(NotFound):
    code = "job_not_found"

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        super().__init__(f"job {job_id} not found")

    def details(self) -> dict[str, object]:
        return {"job_id": self.job_id}


class VersionUnavailable(NotFound):
    """The version exists but may not be read or restored (it lists an excluded source)."""

    code = "version_unavailable"

    def __init__(self, slug: str, version: int, source: str) -> None:
        self.slug = slug
        self.version = version
        self.source = source
        super().__init__(
            f"version {version} of skill {slug!r} is unavailable: source {source!r} is excluded"
        )

    def details(self) -> dict[str, object]:
        return {"slug": self.slug, "version": self.version, "source": self.source}


class ProposalNotFound(NotFound):
    code = "proposal_not_found"

    def __init__(self, proposal: int) -> None:
        self.proposal = proposal
        super().__init__(f"proposal {proposal} not found")

    def details(self) -> dict[str, object]:
        return {"proposal": self.proposal}


class BlobUnknown(NotFound):
    """No blob with this digest is visible to the workspace (stored or not, it looks the same)."""

    code = "blob_not_found"

    def __init__(self, digest: str) -> None:
        self.digest = digest
        super().__init__(f"blob {digest} not found in this workspace")

    def details(self) -> dict[str, object]:
        return {"digest": self.digest}


class TokenNotFound(NotFound):
    code = "token_not_found"

    def __init__(self, token_id: str) -> None:
        self.token_id = token_id
        super().__init__(f"access token {token_id!r} not found")

    def details(self) -> dict[str, object]:
        return {"token_id": self.token_id}


# ---------------------------------------------------------------- access (HTTP 401/403; exit 1)


class AccessDenied(RegistryError):
    """The caller may not make this request. Only entry points that authenticate raise it."""

    code = "access_denied"


class Unauthenticated(AccessDenied):
    """No access token, or one that is malformed, unknown or revoked (never says which)."""

    code = "unauthenticated"

    def __init__(self) -> None:
        super().__init__("a valid access token is required")


class Forbidden(AccessDenied):
    """The token belongs to the workspace but its role is below the one the request needs."""

    code = "forbidden"

    def __init__(self, needed: str, held: str) -> None:
        self.needed = needed
        self.held = held
        super().__init__(f"this request needs the {needed!r} role; the token has {held!r}")

    def details(self) -> dict[str, object]:
        return {"needed": self.needed, "held": self.held}


# ---------------------------------------------------------------- infrastructure (exit 1)


class StorageUnavailable(RegistryError):
    """The database or the blob store failed in a way retrying did not fix."""

    code = "storage_unavailable"

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        self.detail = detail
        super().__init__(f"{what} unavailable: {detail}")

    def details(self) -> dict[str, object]:
        return {"what": self.what, "detail": self.detail}


class WorkspaceBusy(StorageUnavailable):
    """The workspace lock (or the database's write lock) was not granted in time."""

    code = "workspace_busy"

    def __init__(self, workspace: str, timeout: float) -> None:
        self.workspace = workspace
        self.timeout = timeout
        RegistryError.__init__(
            self, f"workspace {workspace!r} is busy: its lock was not granted within {timeout}s"
        )
        self.what = "workspace lock"
        self.detail = f"not granted within {timeout}s"

    def details(self) -> dict[str, object]:
        return {"workspace": self.workspace, "timeout": self.timeout}


class IntegrityError(RegistryError):
    """Stored data does not match what the registry recorded (a corrupted blob, say)."""

    code = "integrity_error"
