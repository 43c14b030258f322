"""Content-check exceptions: an owner's approvals of findings, matched exactly.

An approval names a path, the keyed hash of a value found there (`Finding.value_hash`, never
the value) and how many occurrences of that value in that file are approved. It is stored
with the version it was granted for, and a write that builds on that version (an edit, a
learning improvement, a restore) inherits it only for occurrences that are still present:

- the same value at the same path, at most as many times as approved: passes;
- a new value, the same value once more than approved (duplicated), or the same value at
  another path (moved): is checked again, and blocks unless the writer approves it anew.

Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registry.domain.scanner import blocking_error
from registry.errors import ContentBlocked, FindingNotFound

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from registry.domain.scanner import Finding


@dataclass(frozen=True, slots=True, order=True)
class Approval:
    """`occurrences` occurrences of the value hashed `value_hash` are allowed in `path`."""

    path: str
    value_hash: str
    pattern_class: str
    occurrences: int

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "value_hash": self.value_hash,
            "pattern_class": self.pattern_class,
            "occurrences": self.occurrences,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Approval:
        return cls(
            str(data["path"]),
            str(data["value_hash"]),
            str(data["pattern_class"]),
            int(data["occurrences"]),
        )


@dataclass(frozen=True, slots=True)
class FindingRef:
    """A finding an owner approves, named as `ContentBlocked` reported it: path and ordinal."""

    path: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of the content check under approvals.

    `blocked` is the error for the first finding no approval covers (path, then ordinal
    order), or None; `kept` are the approvals that cover occurrences the checked package
    contains, one per (path, value), counting the covered occurrences: what the package
    carries forward (a blocked package is not stored, so its `kept` only matters to an
    owner approving findings one at a time). `fresh` are the digests this check scanned
    and found clean (set by the service that ran the scan; empty if it was blocked).
    """

    blocked: ContentBlocked | None
    kept: tuple[Approval, ...]
    fresh: tuple[str, ...] = ()


def _order(finding: Finding) -> tuple[bytes, int]:
    return finding.path.encode("utf-8"), finding.ordinal


def evaluate(
    findings: Iterable[Finding],
    allowed: Iterable[Approval] = (),
    approve: Iterable[FindingRef] = (),
) -> Verdict:
    """Check `findings` against inherited approvals `allowed` and the findings in `approve`.

    Raises `FindingNotFound` if `approve` names a finding that is not among `findings`
    (an approval is only ever granted for something the owner was shown).
    """
    ordered = sorted(findings, key=_order)
    by_ref = {(f.path, f.ordinal): f for f in ordered}
    budget: Counter[tuple[str, str]] = Counter()
    for approval in allowed:
        budget[approval.path, approval.value_hash] += approval.occurrences
    for ref in set(approve):
        finding = by_ref.get((ref.path, ref.ordinal))
        if finding is None:
            raise FindingNotFound(ref.path, ref.ordinal)
        budget[finding.path, finding.value_hash] += 1
    used: Counter[tuple[str, str]] = Counter()
    classes: dict[tuple[str, str], str] = {}
    blocking: list[Finding] = []
    for finding in ordered:
        key = (finding.path, finding.value_hash)
        if used[key] >= budget[key]:
            blocking.append(finding)
            continue
        used[key] += 1
        classes.setdefault(key, finding.pattern_class)
    kept = tuple(
        sorted(
            Approval(path, digest, classes[path, digest], n) for (path, digest), n in used.items()
        )
    )
    return Verdict(blocking_error(blocking), kept)
