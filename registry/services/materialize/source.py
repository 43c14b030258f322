"""The seam between the reconciler and the registry: where desired state and blobs come from.

The reconciler (`reconcile.py`) decides and acts on disk; everything it needs from the
registry goes through one `Source`:

    begin    register the target if it is new or moved, then the desired state (the heads
             in use, or a lock file's pins) and what the registry records as applied there
    manifest the files of one wanted package
    files    the bytes of a manifest's files, each verified against its digest
    record   the applied state of one skill, a compare-and-swap on the record `begin` gave
    finish   the run is over (a source with a cache trims it to the desired state)

Two sources implement it: `direct.DirectSource` reads the database and the blob store
(`skillreg reconcile`); `registry.client.remote.RemoteSource` speaks the registry's HTTP
API and keeps a local content-addressed cache of blobs (`skillreg sync`). The reconciler
cannot tell them apart, so both give the same guarantees and the same report.

Adopting an edit (publishing the disk's package as a new version) needs the registry's
write path with origin `out_of_band`, which only the direct source has: it is a separate
protocol, `Adopter`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from registry.domain.manifest import Manifest
from registry.domain.model import PackageFile
from registry.domain.paths import RULE_CASE_COLLISION, fold
from registry.errors import LockMismatch, NotInUse, PathRejected, RegistryError, SkillNotFound
from registry.services.materialize.drift import DriftItem
from registry.services.materialize.lockfile import LockFile
from registry.services.materialize.target import Target
from registry.wire import MAX_DRIFT_IN_EVENT

APPLIED: Final = "applied"
REMOVED: Final = "removed"
FAILED: Final = "failed"
OUTCOMES: Final = (APPLIED, REMOVED, FAILED)


@dataclass(frozen=True)
class Want:
    """The package one slug should have: a version and its manifest (loaded on demand).

    `skill_id` and `manifest_id` are the direct source's row ids; a remote source has
    neither and gives the manifest itself.
    """

    skill_id: int | None
    version: int
    manifest_hash: str
    manifest_id: int | None = None
    manifest: Manifest | None = None


@dataclass(frozen=True)
class Desired:
    """What a target should hold: wanted packages, and pins that cannot be honoured."""

    wants: dict[str, Want]
    blocked: dict[str, RegistryError] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Head:
    """A live skill of the scope and its head: the raw material of the desired state."""

    slug: str
    state: str
    use_paused: bool
    version: int
    manifest_hash: str
    skill_id: int | None = None
    manifest_id: int | None = None
    manifest: Manifest | None = None
    revoked: bool = False  # the head was revoked (docs/revocation.md): never wanted

    @property
    def in_use(self) -> bool:
        """Agents load this skill: active, its use not paused, its head not revoked."""
        return self.state == "active" and not self.use_paused and not self.revoked

    def want(self) -> Want:
        return Want(
            self.skill_id, self.version, self.manifest_hash, self.manifest_id, self.manifest
        )


@dataclass(frozen=True, slots=True)
class Applied:
    """What the registry records a target holds for one skill."""

    slug: str
    manifest_hash: str | None
    version: int | None
    outcome: str
    error: str | None

    @property
    def key(self) -> tuple[str | None, int | None, str, str | None]:
        """What a compare-and-swap on the record compares."""
        return (self.manifest_hash, self.version, self.outcome, self.error)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a target is, as the registry records it (and shows in `skillreg status`)."""

    target_id: str
    path: str
    host: str
    mode: str

    @classmethod
    def of(cls, target: Target) -> Place:
        return cls(target.target_id, str(target.path), target.host, target.mode)

    def where(self) -> dict[str, Any]:
        """The target, for event payloads."""
        return {
            "target_id": self.target_id,
            "target": self.path,
            "host": self.host,
            "mode": self.mode,
        }


@dataclass(frozen=True)
class Change:
    """Why a record changes, for its outbox event: the reconciler's action and findings."""

    action: str
    drift: tuple[DriftItem, ...] = ()
    error_code: str | None = None

    def payload(self) -> dict[str, Any]:
        """The event payload (at most `MAX_DRIFT_IN_EVENT` drift items)."""
        if self.error_code is not None:
            return {"action": self.action, "error": self.error_code}
        if self.action == REMOVED:
            return {"action": self.action}
        drift = [{"path": d.path, "kind": d.kind} for d in self.drift[:MAX_DRIFT_IN_EVENT]]
        return {"action": self.action, "drift": drift}


@dataclass(frozen=True)
class Snapshot:
    """What `Source.begin` answers: the desired state and the records of the target.

    `refused`: the items the source refused outright (a slug that breaks the naming rules:
    nothing is done under its name).
    """

    desired: Desired
    applied: dict[str, Applied]
    refused: tuple[RegistryError, ...] = ()


class Source(Protocol):
    """Desired state, blob bytes and applied state, for one scope (see the module docstring).

    `records_prove_ownership`: whether a record that says the target holds a skill is
    enough for the engine to replace or remove what is at `<target>/<slug>`. True for the
    registry's own database; False for a server over the network, whose word alone must
    not remove or overwrite a folder that the target's own cache does not know.
    """

    records_prove_ownership: bool

    async def begin(self, target: Target, lock: LockFile | None) -> Snapshot:
        """Register `target` if needed; the desired state and what is recorded as applied."""
        ...

    async def manifest(self, want: Want) -> Manifest:
        """The wanted package's files, checked against its manifest hash."""
        ...

    async def files(self, manifest: Manifest) -> dict[str, PackageFile]:
        """Every file of `manifest`, its bytes verified against its digest."""
        ...

    async def record(self, *, expected: Applied | None, new: Applied, change: Change) -> None:
        """Record `new` if the slug's record is still `expected` (`StateConflict` if not).

        `change` goes into the outbox event. Recording what is already recorded changes
        nothing (a retry after a lost reply included).
        """
        ...

    async def finish(self, desired: Desired) -> None:
        """The run is over; `desired` is what it aimed at."""
        ...

    @property
    def fetched(self) -> int:
        """Blobs fetched so far (a cache's hits are not fetched)."""
        ...


class Adopter(Protocol):
    """Publishes an edit found on disk as a new version (`reconcile --adopt`)."""

    @property
    def max_file_bytes(self) -> int:
        """The largest file the write path takes (larger ones are not even read)."""
        ...

    async def adopt(
        self,
        slug: str,
        files: Mapping[str, PackageFile],
        *,
        base: int,
        place: Place,
        actor: str,
        skill_id: int | None,
    ) -> Want:
        """Publish `files` over version `base` (`HeadConflict` if the head moved); the new head."""
        ...


Pinned = Callable[[str, int, int | None], Awaitable[Want]]
"""(slug, version, skill id) -> that version's package, or `VersionNotFound` and the like."""


async def resolve(heads: Mapping[str, Head], lock: LockFile | None, pinned: Pinned) -> Desired:
    """The desired state from the scope's live heads: those in use, or `lock`'s pins.

    A pin whose skill is gone, not in use, or whose version does not have the pinned
    manifest hash blocks its slug with the reason; the others go on.
    """
    if lock is None:
        return Desired({s: h.want() for s, h in heads.items() if h.in_use})
    wants: dict[str, Want] = {}
    blocked: dict[str, RegistryError] = {}
    scope = lock.scope
    for pin in lock.skills:
        head = heads.get(pin.slug)
        try:
            if head is None:
                raise SkillNotFound(scope.workspace, scope.agent, pin.slug)
            if not head.in_use:
                raise NotInUse(pin.slug, _not_in_use(head))
            want = await pinned(pin.slug, pin.version, head.skill_id)
            if want.manifest_hash != pin.manifest_hash:
                raise LockMismatch(pin.slug, pin.version, pin.manifest_hash, want.manifest_hash)
        except RegistryError as exc:
            blocked[pin.slug] = exc
        else:
            wants[pin.slug] = want
    return Desired(wants, blocked)


def _not_in_use(head: Head) -> str:
    if head.revoked:
        return f"its head v{head.version} is revoked"
    return "its use is paused" if head.use_paused else f"it is {head.state}"


def block_collisions(desired: Desired) -> Desired:
    """`desired` with every wanted slug that folds to the same name as another one blocked.

    Two slugs equal under case folding (`straße` and `strasse`, a final and a medial
    sigma) would be one folder on a case-insensitive filesystem: neither is written.
    """
    groups: dict[str, list[str]] = {}
    for slug in sorted(desired.wants):
        groups.setdefault(fold(slug), []).append(slug)
    blocked = dict(desired.blocked)
    for group in groups.values():
        if len(group) < 2:  # noqa: PLR2004 - a pair collides
            continue
        for slug in group:
            others = ", ".join(repr(o) for o in group if o != slug)
            detail = f"one folder with {others} on a case-insensitive filesystem"
            blocked[slug] = PathRejected(slug, RULE_CASE_COLLISION, detail)
    if blocked.keys() == desired.blocked.keys():
        return desired
    wants = {s: w for s, w in desired.wants.items() if s not in blocked}
    return Desired(wants, blocked)
