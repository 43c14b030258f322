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
from registry.domain.arguments import (
    RULE_RANGE,
    RULE_TYPE,
    check_flag,
    check_members,
    check_text,
    check_texts,
    check_type,
    type_name,
)
from registry.domain.model import ExpectedHead, Origin, Scope, check_expected_head
from registry.domain.numbers import MAX_ID, check_int, names_row
from registry.domain.similarity import ChangedFile, Sketch
from registry.errors import ArgumentInvalid

MARKETPLACE_ORIGINS: Final = frozenset({Origin.MARKETPLACE_INSTALL, Origin.MARKETPLACE_UPDATE})

OWNER_ORIGINS: Final = frozenset(
    {Origin.EDIT, Origin.RESTORE, Origin.OUT_OF_BAND, Origin.IMPORT, Origin.MARKETPLACE_INSTALL}
)
"""Writes a person makes or asks for: each turns automatic improvements off (docs/history.md,
"Learning writes") unless the writer keeps them on (`WriteRequest.keep_auto_improve`)."""

FOREIGN_ORIGINS: Final = frozenset({Origin.IMPORT, Origin.MARKETPLACE_INSTALL})
"""Writes that bring in a skill from elsewhere: a skill they create starts with automatic
improvements off, so an automated change needs the owner's decision."""

Baseline = tuple[str, int, str]
"""The listing version an installed copy follows: (listing, listing version, manifest hash)."""


@dataclass(frozen=True, slots=True)
class SkillChanges:
    """Changes to the skill's controls made in the same transaction as its new version.

    `auto_improve` is what an existing skill's automatic improvements become (None leaves
    them as they are); `new_skill_auto_improve` is what a skill this write creates starts
    with. `WriteRequest.changes` derives both from the write (docs/history.md).
    """

    auto_improve: bool | None = None
    new_skill_auto_improve: bool = True


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


@dataclass(frozen=True, slots=True)
class Undone:
    """What an owner's restore undoes: the head it replaces and the change it reverts.

    Recorded as a suppression with the restore's version (docs/history.md, "Suppression").
    """

    version: int
    manifest_hash: str
    change: tuple[ChangedFile, ...]


@dataclass(frozen=True, slots=True)
class Revoking:
    """A yank of the head, made by the write that moves the head off it (docs/revocation.md).

    Recorded in the write's locked transaction (`write/revoke.py`), with its statement and
    its `version.revoked` event; `version` is the head the write's compare-and-swap names.
    """

    version: int
    kind: str
    reason: str
    actor: str


@dataclass(frozen=True)
class WriteRequest:
    """Everything a package write needs to know besides the files, as its caller gives it.

    History: `approve` names findings the writer approves; `keep_draft` records the package
    as a proposal if the compare-and-swap fails; `decides` makes this write the owner's
    decision on a pending proposal; `repair` marks a rollback after a source exclusion. A
    decision or a repair always appends a version, even if the head has the same package.
    `keep_auto_improve` keeps automatic improvements on through a write of an owner origin
    (`OWNER_ORIGINS`), which otherwise turns them off.

    Learning (docs/history.md, "Learning writes"): `applies_pending` makes this write the
    application of a waiting pending write (closed in the same transaction); `undoes` is
    the change an owner's restore reverts, recorded as a suppression with its version.

    Marketplace: `baseline` is the listing version an installed copy now follows; `propose`
    records the package as a proposal for the owner instead of publishing it (an update of
    an edited copy), carrying `baseline` to the version the proposal becomes if applied.

    `expected_skill` adds the skill's identity to the compare-and-swap: the id of the skill
    whose head `expected_head` names. A writer that read a skill and may find, by its
    write, the slug deleted and taken by another skill at the same head number (an
    update job that read a copy the owner then deleted and installed again) names it;
    another skill under the slug is a `HeadConflict`. None (the default) checks no identity.

    `revokes` makes this write the yank of the head it replaces (origin `revocation`).

    `revives` is the id of a deleted skill of the slug that this write brings back (a
    restore of an archived version, docs/history.md "Deleted skills"): the same skill row
    becomes live again with the new version as its head, its history continuing. The slug
    must have no live skill (`SlugTaken` otherwise), `expected_head` is compared with the
    deleted skill's head, and the write always appends a version.
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
    keep_auto_improve: bool = False
    approve: Sequence[FindingRef] = ()
    keep_draft: bool = False
    decides: ProposalDecision | None = None
    repair: bool = False
    propose: bool = False
    applies_pending: int | None = None
    undoes: Undone | None = None
    expected_skill: int | None = None
    revokes: Revoking | None = None
    revives: int | None = None

    def __post_init__(self) -> None:
        """Refuse what a caller got wrong before any work (docs/write-path.md, "Arguments").

        Every entry point builds its request first, so a wrong type, a text no database
        stores as given, or an expected head no version column holds is `ArgumentInvalid`
        before anything is read, hashed, claimed or uploaded. `sources` and `approve` are
        kept as tuples. The checks cost one pass over the metadata, no I/O.
        """
        check_type("scope", self.scope, Scope, "a Scope")
        check_type("slug", self.slug, str, "a str")
        object.__setattr__(self, "expected_head", check_expected_head(self.expected_head))
        _check_expected_skill(self.expected_skill, self.expected_head)
        if self.revives is not None and not names_row("revives", self.revives, MAX_ID):
            raise ArgumentInvalid("revives", RULE_RANGE, f"a skill id, from 1 to {MAX_ID}")
        check_type("origin", self.origin, Origin, "an Origin")
        check_text("actor", self.actor)
        check_text("message", self.message, multiline=True)
        object.__setattr__(self, "sources", check_texts("sources", self.sources))
        check_flag("keep_auto_improve", self.keep_auto_improve)
        approve = check_members("approve", self.approve, FindingRef, "FindingRef")
        object.__setattr__(self, "approve", approve)

    @property
    def changes(self) -> SkillChanges:
        """The control changes this write makes with its version (one rule for every entry).

        A write of an owner origin (an edit, a restore, an adopted out-of-band edit, an
        import, an install) turns automatic improvements off unless the writer keeps them
        on; an import or an install creates a skill with them off. Other writes (saves,
        learning, marketplace updates, an applied learning proposal) leave them alone, and
        the skills they create start with them on.
        """
        if self.origin not in OWNER_ORIGINS:
            return KEEP_CONTROLS
        foreign = self.origin in FOREIGN_ORIGINS
        if self.keep_auto_improve:
            return SkillChanges(auto_improve=None, new_skill_auto_improve=True)
        return SkillChanges(auto_improve=False, new_skill_auto_improve=not foreign)

    @property
    def automated(self) -> bool:
        """A learning write that no owner decided: the rules of docs/history.md apply."""
        return self.origin is Origin.LEARNING and self.decides is None

    @property
    def may_be_unchanged(self) -> bool:
        """True if re-saving the head's package is a no-op for this write."""
        return (
            self.decides is None
            and not self.repair
            and self.applies_pending is None
            and self.revives is None
        )

    @property
    def kind(self) -> str:
        return "installed" if self.origin in MARKETPLACE_ORIGINS else "saved"


def _check_expected_skill(value: object, expected_head: ExpectedHead) -> None:
    """Refuse an `expected_skill` that is not None or a skill id with the head it names.

    A skill id is an int from 1 to `MAX_ID` (not a bool), given with an `int` `expected_head`.
    """
    if value is None:
        return
    number = check_int("expected_skill", value)
    if not 1 <= number <= MAX_ID:
        where = "below 1" if number < 1 else f"above {MAX_ID}"
        raise ArgumentInvalid("expected_skill", RULE_RANGE, f"a skill id, not {where}")
    if not isinstance(expected_head, int):
        detail = f"given with an int expected_head, not {type_name(expected_head)}"
        raise ArgumentInvalid("expected_skill", RULE_TYPE, detail)


@dataclass(frozen=True, slots=True)
class Screening:
    """What the content check decided for one write; set by the write path, never by callers.

    `approvals` are stored with the new version (or proposal); `scanned_clean` are the
    digests found clean, recorded in the claim transaction (one commit fewer than a
    transaction of their own). `document` is the `SKILL.md` digest and its discovery
    triggers, indexed in the same transaction. `sketches` are the text sketches of a
    learning write's files (path, sketch), compared with suppressions under the lock.
    """

    approvals: tuple[Approval, ...] = ()
    scanned_clean: tuple[str, ...] = ()
    document: tuple[str, tuple[str, ...]] | None = None
    sketches: tuple[tuple[str, Sketch], ...] = ()

    @classmethod
    def of(cls, verdict: Verdict) -> Screening:
        return cls(approvals=tuple(verdict.kept), scanned_clean=tuple(verdict.fresh))


NOT_SCREENED: Final = Screening()
"""For a package whose blobs are all stored and referenced, with no approvals to carry."""
