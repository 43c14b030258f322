"""Time as a dependency: services ask a `Clock`, so tests can drive grace periods and leases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """A source of aware UTC timestamps."""

    def now(self) -> datetime:
        """The current time (aware, UTC)."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)
