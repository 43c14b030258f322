"""The peak resident memory of a stretch of work, on Linux, without slowing it down.

`VmHWM` (the process's peak RSS) can be reset to the current RSS by writing `5` to
`/proc/self/clear_refs`; after the work, `VmHWM - VmRSS at the reset` is how far the
process's footprint rose. It under-reads work that reuses memory an earlier scenario
freed but the allocator kept (so the GC scenario also reports `tracemalloc`'s peak);
what it cannot do is miss memory that grows with the input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

_STATUS: Final = Path("/proc/self/status")
_CLEAR_REFS: Final = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        lines = _STATUS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    return None


class PeakRss:
    """`reset()` before the work, `growth()` after: bytes the peak RSS rose (None off Linux)."""

    def __init__(self) -> None:
        self._base: int | None = None

    def reset(self) -> None:
        try:
            _CLEAR_REFS.write_text("5")
        except OSError:
            self._base = None
            return
        self._base = _status_kib("VmRSS")

    def growth(self) -> int | None:
        peak = _status_kib("VmHWM")
        if self._base is None or peak is None:
            return None
        return max(peak - self._base, 0) * 1024
