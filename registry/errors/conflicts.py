"""Conflicts: the request was valid but the state moved or forbids it (exit 4, HTTP 409)."""

from __future__ import annotations

from dataclasses import dataclass

from registry.errors.base import RegistryError

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
class SlugLookAlike(Conflict, code="slug_look_alike"):
    """A new skill's slug looks like a live skill's of its scope (docs/package-format.md).

    Equal after case folding, NFKC and Unicode's confusable mapping (TR 39's skeleton):
    `λόγοσ` beside `λόγος`, `pdf-report` spelt with a Cyrillic e (U+0435) beside the Latin
    one. Both read alike to a person, and a case-insensitive file system would put the
    first pair in one folder. `existing` is the live skill's slug.
    """

    template = "slug {slug!r} looks like the existing skill {existing!r} of this scope"
    slug: str
    existing: str


@dataclass(eq=False, repr=False)
class SlugTaken(Conflict, code="slug_taken"):
    """A deleted skill cannot come back: a new live skill has its slug (docs/history.md).

    `skill_id` is the deleted skill asked for; `live_skill` and `live_head` are the skill
    that holds the slug now. Delete or rename the live skill first, or read the deleted
    one's versions (they stay readable) and publish what is needed under another slug.
    """

    template = (
        "deleted skill {slug}~{skill_id} cannot come back: the slug {slug!r} is the live "
        "skill {live_skill} (version {live_head})"
    )
    slug: str
    skill_id: int
    live_skill: int
    live_head: int


@dataclass(eq=False, repr=False)
class ArchivedSkillAmbiguous(Conflict, code="archived_skill_ambiguous"):
    """Several deleted skills had the slug, and the request did not say which.

    `candidates` lists them, newest first: `skill_id`, `head` (its last version) and
    `deleted_at` (ISO 8601). Name one by its id (`ArchivedVersion(n, skill_id=...)`,
    `SLUG~ID` on the command line, `skill_id=` over HTTP).
    """

    slug: str
    candidates: list[dict[str, object]]

    def __str__(self) -> str:
        named = ", ".join(f"{self.slug}~{c.get('skill_id')}" for c in self.candidates)
        return (
            f"{len(self.candidates)} deleted skills had the slug {self.slug!r}: "
            f"name one by its id ({named})"
        )


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


@dataclass(eq=False, repr=False)
class VersionNotNewer(Conflict, code="version_not_newer"):
    """A ClawHub publish named a version not greater than the newest (docs/clawhub.md)."""

    template = "version {requested} is not newer than the latest, {latest}"
    requested: str
    latest: str
