"""The content check never stalls the event loop, whatever a package's files hold.

A probe task records when it wakes up while writes of the largest files a package may hold,
each crafted against one of the scanner's patterns (tests/corpus/adversarial.py), run. Only
the scan is measured: a scanner that extends the default one notes when each file's scan
starts and ends and which thread runs it, and a gap between two wake-ups counts when it
overlaps that time.

A gap has two parts: the time the scanning thread kept the loop waiting (it runs while it
holds the GIL), and the time the machine ran something else (other processes, another
guest). The first is what the check controls; the probe reads it as the CPU time the
scanning thread used during the gap, and it must stay under `STALL_BOUND` (100 ms: a scan
step takes a few milliseconds, and a step that held the GIL for the whole file took
seconds). The gap itself must stay under `GAP_BOUND`, a margin generous enough for a
loaded machine, where an idle loop's gaps come close to 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from registry import Scope
from registry.domain.scanner import DefaultScanner, Finding
from registry.errors import ContentBlocked
from tests.corpus.adversarial import LONG_VALUES, NEAR_MISSES, Case
from tests.support.packages import skill_md

ACME = Scope("acme")
STALL_BOUND = 0.1
GAP_BOUND = 1.0
PROBE_INTERVAL = 0.002
FILES_PER_PACKAGE = 9  # and SKILL.md: 9 files of 2 MiB fit the 20 MiB a package may hold


class TimedScanner(DefaultScanner):
    """The default rules (and fingerprint), noting when and in which thread files are scanned."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.thread: int | None = None
        self.cpu_at_start = 0.0

    def scan(self, path: str, data: bytes) -> list[Finding]:
        if self.thread is None:
            self.cpu_at_start = time.thread_time()
            self.thread = threading.get_ident()
        started = time.monotonic()
        try:
            return super().scan(path, data)
        finally:
            self.spans.append((started, time.monotonic()))


@dataclass
class Wakeup:
    at: float
    scan_cpu: float | None
    """The scanning thread's CPU time then, once it has started."""


@dataclass
class Probe:
    scanner: TimedScanner
    wakeups: list[Wakeup] = field(default_factory=list)

    def wake(self) -> None:
        # The time first: a wake-up after the first scan started then knows its thread.
        at, thread, cpu = time.monotonic(), self.scanner.thread, None
        if thread is not None:
            cpu = time.clock_gettime(time.pthread_getcpuclockid(thread))
        self.wakeups.append(Wakeup(at, cpu))

    def gaps(self) -> list[tuple[float, float]]:
        """(gap, CPU time the scan used in it) for each gap that overlaps the scanning."""
        spans = self.scanner.spans
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        out = []
        for a, b in itertools.pairwise(self.wakeups):
            if b.at > start and a.at < end:
                assert b.scan_cpu is not None
                before = self.scanner.cpu_at_start if a.scan_cpu is None else a.scan_cpu
                out.append((b.at - a.at, b.scan_cpu - before))
        return out

    def check(self) -> None:
        gaps = self.gaps()
        assert len(gaps) > 1, "the probe never ran while the files were scanned"
        worst = sorted(gaps, key=lambda g: g[1])[-3:]
        assert max(cpu for _, cpu in gaps) < STALL_BOUND, worst
        assert max(gap for gap, _ in gaps) < GAP_BOUND, sorted(gaps)[-3:]


@contextlib.asynccontextmanager
async def loop_probe(scanner: TimedScanner) -> AsyncIterator[Probe]:
    """Wake up every `PROBE_INTERVAL` until the block ends, noting each wake-up."""
    probe = Probe(scanner)

    async def run() -> None:
        while True:
            probe.wake()
            await asyncio.sleep(PROBE_INTERVAL)

    task = asyncio.create_task(run())
    await asyncio.sleep(0)
    try:
        yield probe
        # One more wake-up after whatever ran last.
        await asyncio.sleep(PROBE_INTERVAL * 3)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def packages(cases: tuple[Case, ...]) -> list[tuple[str, dict[str, bytes]]]:
    groups = [cases[i : i + FILES_PER_PACKAGE] for i in range(0, len(cases), FILES_PER_PACKAGE)]
    out = []
    for n, group in enumerate(groups):
        slug = f"crafted-{n}"
        files = {"SKILL.md": skill_md(slug)}
        files |= {f"references/{case.id}.txt": case.make() for case in group}
        out.append((slug, files))
    return out


NEAR_MISS_PACKAGES = packages(NEAR_MISSES)

# The event loop while files are scanned: the database plays no part.
pytestmark = pytest.mark.one_database


@pytest.mark.parametrize(
    ("slug", "files"), NEAR_MISS_PACKAGES, ids=[slug for slug, _ in NEAR_MISS_PACKAGES]
)
async def test_scanning_crafted_files_never_stalls_the_loop(make_registry, slug, files):
    scanner = TimedScanner()
    registry = await make_registry(scanner=scanner)
    async with loop_probe(scanner) as probe:
        published = await registry.write_package(ACME, slug, files, expected_head=None, actor="u1")
    assert published.created
    assert len(scanner.spans) == len(files)
    probe.check()


async def test_judging_file_long_values_never_stalls_the_loop(make_registry):
    # A credential-shaped value as long as its file: found, hashed and judged in short steps.
    ((slug, files),) = packages(LONG_VALUES)
    scanner = TimedScanner()
    registry = await make_registry(scanner=scanner)
    async with loop_probe(scanner) as probe:
        with pytest.raises(ContentBlocked):
            await registry.write_package(ACME, slug, files, expected_head=None, actor="u1")
    probe.check()
