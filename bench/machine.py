"""How fast the machine was during a run: a CPU probe and a disk probe, at its start and end.

The machine is shared, and its speed moves from day to day: one revision's SQLite lock hold
read 1.84 ms one day and 4.2-6.6 ms the next, with the same probe of pure Python running
2.5 times slower. Ratios to references of the same run cancel that out; absolute figures
(issue 14's targets are in milliseconds) do not, so every run records these probes beside
its load average, and the report prints them:

- `cpu`: the time of a fixed loop of pure Python (`sum(range(100_000))`), best of five;
- `fsync`: a 4 KiB rewrite of one file and its `fdatasync`, median of twenty, in the run's
  scratch directory (the filesystem the local stores and SQLite databases use).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Final

_CPU_ROUNDS: Final = 5
_FSYNC_ROUNDS: Final = 20


def cpu_probe() -> float:
    """Seconds for `sum(range(100_000))`, best of five."""
    best = float("inf")
    for _ in range(_CPU_ROUNDS):
        started = time.perf_counter()
        sum(range(100_000))
        best = min(best, time.perf_counter() - started)
    return best


def fsync_probe(directory: Path) -> float:
    """Median seconds to rewrite 4 KiB of one file in `directory` and `fdatasync` it."""
    path = directory / "machine-probe"
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for round_ in range(_FSYNC_ROUNDS):
            started = time.perf_counter()
            os.pwrite(fd, bytes([round_]) * 4096, 0)
            os.fdatasync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(samples)


def probe(directory: Path) -> dict[str, float]:
    """Both probes, in seconds."""
    return {"cpu": cpu_probe(), "fsync": fsync_probe(directory)}
