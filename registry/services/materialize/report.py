"""The report of one reconcile or sync run: what happened to each skill of the target.

`reconcile` and `sync` print it (`skillreg reconcile`, `skillreg sync`), HTTP records it per
skill, and the API returns it (`ReconcileReport`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from registry.errors import RegistryError
from registry.services.materialize.drift import DriftItem

WRITTEN: Final = "written"
UNCHANGED: Final = "unchanged"
REPAIRED: Final = "repaired"
ADOPTED: Final = "adopted"
REMOVED: Final = "removed"
FAILED: Final = "failed"
ACTIONS: Final = (WRITTEN, UNCHANGED, REPAIRED, ADOPTED, REMOVED, FAILED)


@dataclass(frozen=True)
class SkillOutcome:
    """What reconcile did for one skill of the target.

    `action`: `written` (a version not yet applied is now on disk), `unchanged`,
    `repaired` (drift restored to the desired package), `adopted` (drift published as a
    new version, then written), `removed`, or `failed` (`reason`, `error_code`; the disk
    holds what it held before). `drift` lists what was found different on disk.
    """

    slug: str
    action: str
    version: int | None = None
    manifest_hash: str | None = None
    previous_hash: str | None = None
    drift: tuple[DriftItem, ...] = ()
    reason: str | None = None
    error_code: str | None = None
    error: RegistryError | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ReconcileReport:
    """The outcome of one reconcile of a target."""

    target: str
    target_id: str
    mode: str
    workspace: str
    agent: str
    outcomes: tuple[SkillOutcome, ...]
    refused: tuple[RegistryError, ...] = ()  # items refused outright: nothing done for them
    swept: int = 0  # entries a crashed run left under .skillreg/, removed on open
    hashed: int = 0  # files whose content was hashed (the stat cache answered the rest)
    fetched: int = 0  # blobs fetched from the source (sync: those its cache lacked)

    def slugs(self, action: str) -> list[str]:
        """The slugs whose outcome was `action`."""
        return [o.slug for o in self.outcomes if o.action == action]

    @property
    def written(self) -> list[str]:
        return self.slugs(WRITTEN)

    @property
    def unchanged(self) -> list[str]:
        return self.slugs(UNCHANGED)

    @property
    def repaired(self) -> list[str]:
        return self.slugs(REPAIRED)

    @property
    def adopted(self) -> list[str]:
        return self.slugs(ADOPTED)

    @property
    def removed(self) -> list[str]:
        return self.slugs(REMOVED)

    @property
    def failed(self) -> dict[str, str]:
        """Failed slugs and their reasons."""
        return {o.slug: o.reason or "" for o in self.outcomes if o.action == FAILED}

    @property
    def ok(self) -> bool:
        return not self.failed and not self.refused

    def outcome(self, slug: str) -> SkillOutcome | None:
        return next((o for o in self.outcomes if o.slug == slug), None)
