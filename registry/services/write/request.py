"""What a package write is asked to do, and what the write path decides about it.

`WriteRequest` is what callers give: the scope and slug, the compare-and-swap, the
metadata of the version, and the history options (docs/history.md) and marketplace options
(docs/marketplace.md). `Screening` is what the content check decided for this write (the
approvals stored with the version, the digests scanned clean); only the write path sets it.
`SkillChanges` are the control changes a write makes with its version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from registry.domain.approvals import Approval, FindingRef, Verdict
from registry.domain.model import ExpectedHead, Origin, Scope

MARKETPLACE_ORIGINS: Final = frozenset({Origin.MARKETPLACE_INSTALL, Origin.MARKETPLACE_UPDATE})

Baseline = tuple[str, int, str]
"""The listing version an installed copy follows: (listing, listing version, manifest hash)."""


@dataclass(frozen=True, slots=True)
class SkillChanges:
    """Changes to the skill's controls made in the same transaction as its new version.

    `auto_improve=None` leaves automatic improvements as they are (a new skill starts with
    them on); an owner's edit or restore turns them off (docs/history.md).
    """

    auto_improve: bool | None = None


KEEP_CONTROLS: Final = SkillChanges()
OWNER_TAKES_CONTROL: Final = SkillChanges(auto_improve=False)


@dataclass(frozen=True, slots=True)
class ProposalDecision:
    """The owner's decision to apply a pending proposal.

    `decision` is `apply` (the proposal as it is) or `alternative` (the owner's edit of it).
    """

    proposal: int
    decision: str
    actor: str


@dataclass(frozen=True)
class WriteRequest:
    """Everything a package write needs to know besides the files, as its caller gives it.

    History: `approve` names findings the writer approves; `keep_draft` records the package
    as a proposal if the compare-and-swap fails; `decides` makes this write the owner's
    decision on a pending proposal; `repair` marks a rollback after a source exclusion. A
    decision or a repair always appends a version, even if the head has the same package.

    Marketplace: `baseline` is the listing version an installed copy now follows; `propose`
    records the package as a proposal for the owner instead of publishing it (an update of
    an edited copy), carrying `baseline` to the version the proposal becomes if applied.
    """

    scope: Scope
    slug: str
    expected_head: ExpectedHead
    origin: Origin
    actor: str
    message: str = ""
    sources: Sequence[str] = ()
    restored_from: int | None = None
    baseline: Baseline | None = None
    changes: SkillChanges = KEEP_CONTROLS
    approve: Sequence[FindingRef] = ()
    keep_draft: bool = False
    decides: ProposalDecision | None = None
    repair: bool = False
    propose: bool = False

    @property
    def may_be_unchanged(self) -> bool:
        """True if re-saving the head's package is a no-op for this write."""
        return self.decides is None and not self.repair

    @property
    def kind(self) -> str:
        return "installed" if self.origin in MARKETPLACE_ORIGINS else "saved"


@dataclass(frozen=True, slots=True)
class Screening:
    """What the content check decided for one write; set by the write path, never by callers.

    `approvals` are stored with the new version (or proposal); `scanned_clean` are the
    digests found clean, recorded in the claim transaction (one commit fewer than a
    transaction of their own).
    """

    approvals: tuple[Approval, ...] = ()
    scanned_clean: tuple[str, ...] = ()

    @classmethod
    def of(cls, verdict: Verdict) -> Screening:
        return cls(approvals=tuple(verdict.kept), scanned_clean=tuple(verdict.fresh))


NOT_SCREENED: Final = Screening()
"""For a package whose blobs are all stored and referenced, with no approvals to carry."""
