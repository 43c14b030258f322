"""How fast the machine was during a run: three probes, at its start and at its end.

The machine is shared, and its speed moves from day to day: one revision's SQLite lock hold
read 1.84 ms one day and 4.2-6.6 ms the next, with the same probe of pure Python running
2.5 times slower. Ratios to references of the same run cancel that out; absolute figures
(issue 14's targets are in milliseconds) do not, so every run records these probes beside
its load average, and the report prints them:

- `cpu`: the time of a fixed loop of pure Python (`sum(range(100_000))`), best of five;
- `fsync`: a 4 KiB rewrite of one file and its `fdatasync`, median of twenty, in the run's
  scratch directory (the filesystem the local stores and SQLite databases use);
- `domain`: the write path's own work before any I/O (validate, hash, content check) on
  one fixed package of ten 4 KiB files, best of five. The loop of `cpu` does not follow
  the write path's speed from day to day: on one day it read 1.39 ms, faster than on a
  day when a write cost half the CPU, so the absolute figures of a run need a probe of
  code like the write path's own (many calls, objects and modules, not one tight loop).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Final

from bench.content import package
from registry.domain.limits import Limits
from registry.domain.manifest import build_manifest
from registry.domain.package import validate_package
from registry.domain.scanner import DefaultScanner, scan_package

_CPU_ROUNDS: Final = 5
_FSYNC_ROUNDS: Final = 20
_DOMAIN_ROUNDS: Final = 5


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


def domain_probe() -> float:
    """Seconds to validate, hash and content-check ten 4 KiB files, best of five."""
    files = package("probe", files=10, size=4096, tag="probe")
    scanner, limits = DefaultScanner(), Limits()
    best = float("inf")
    for _ in range(_DOMAIN_ROUNDS):
        started = time.perf_counter()
        validated = validate_package(files, "probe", limits)
        build_manifest(validated.files)
        scan_package(scanner, validated.files)
        best = min(best, time.perf_counter() - started)
    return best


def probe(directory: Path) -> dict[str, float]:
    """The three probes, in seconds."""
    return {"cpu": cpu_probe(), "fsync": fsync_probe(directory), "domain": domain_probe()}
