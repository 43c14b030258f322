"""The retention policy as a pure function: which versions of one skill may be pruned.

A version is kept if any rule keeps it: it is the head, it is protected (a marketplace
baseline, or named by another row such as an open proposal), it is among the newest
`keep_versions`, or it is younger than `keep_days`. With neither limit set the policy is
off and nothing is pruned.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Keep the newest `keep_versions` versions and/or those younger than `keep_days`."""

    keep_versions: int | None = None
    keep_days: float | None = None

    def __post_init__(self) -> None:
        if self.keep_versions is not None and self.keep_versions < 1:
            raise ValueError(f"keep_versions must be at least 1, not {self.keep_versions}")
        if self.keep_days is not None and self.keep_days <= 0:
            raise ValueError(f"keep_days must be positive, not {self.keep_days}")

    @property
    def enabled(self) -> bool:
        """False when no limit is set: retention is off."""
        return self.keep_versions is not None or self.keep_days is not None

    def describe(self) -> dict[str, object]:
        """The policy as JSON-safe data (for events and reports)."""
        return {"keep_versions": self.keep_versions, "keep_days": self.keep_days}


@dataclass(frozen=True, slots=True)
class VersionAge:
    """What the policy needs to know about one version."""

    number: int
    created_at: datetime


def prunable(
    versions: Iterable[VersionAge],
    *,
    head: int,
    protected: Collection[int],
    policy: RetentionPolicy,
    now: datetime,
) -> list[int]:
    """The numbers of the versions the policy prunes, ascending."""
    if not policy.enabled:
        return []
    ordered = sorted(versions, key=lambda v: v.number, reverse=True)
    newest = (
        {v.number for v in ordered[: policy.keep_versions]}
        if policy.keep_versions is not None
        else set()
    )
    cutoff = None if policy.keep_days is None else now - timedelta(days=policy.keep_days)
    doomed = [
        v.number
        for v in ordered
        if v.number != head
        and v.number not in protected
        and v.number not in newest
        and (cutoff is None or v.created_at < cutoff)
    ]
    return sorted(doomed)
