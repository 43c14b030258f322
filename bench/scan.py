"""What the content check costs, and how long it keeps the event loop waiting.

    python -m bench.scan [CASE ...]

Prints, as Markdown tables:

- the CPU time `DefaultScanner` takes for a common package: 10 files of 1 to 4 KiB of
  skill-like text (median and best of many runs);
- for each file crafted against a pattern (tests/corpus/adversarial.py, 2 MiB each): the
  scan's CPU time, its longest single call into C (CPU time, from `sys.setprofile`: the
  longest the scanning thread can hold the GIL without a chance to hand it over; a step of
  a `finditer` iterator is not a call the profiler sees, and the scanner takes none), and,
  scanning it in a worker thread as the write path does, the longest gap between the
  wake-ups of a task on the event loop and the most CPU time the scan used within one gap.

On a busy machine the gaps include time the machine spent elsewhere; the CPU columns do
not. docs/write-path.md quotes a run.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from bench.content import KiB, package
from registry.domain.model import PackageFile
from registry.domain.scanner import DefaultScanner, scan_package
from tests.corpus.adversarial import LONG_VALUES, NEAR_MISSES, Case

SCANNER = DefaultScanner()
PROBE_INTERVAL = 0.002


def small_package() -> dict[str, PackageFile]:
    """10 files of 1 to 4 KiB (25 KiB in all), the root `SKILL.md` among them."""
    files = {}
    for i, size in enumerate((1, 2, 3, 4, 1, 2, 3, 4, 2, 3)):
        made = package(f"small-{i}", files=2, size=size * KiB, tag=f"scan {i}")
        name = "SKILL.md" if i == 0 else next(p for p in made if p != "SKILL.md")
        files["SKILL.md" if i == 0 else f"references/part-{i}.md"] = PackageFile(made[name])
    return files


def small_package_cost(rounds: int = 15, repeat: int = 200) -> tuple[float, float, int]:
    """(median, best) CPU seconds to scan the small package, and its size in bytes."""
    files = small_package()
    runs = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(repeat):
            scan_package(SCANNER, files)
        runs.append((time.process_time() - started) / repeat)
    return statistics.median(runs), min(runs), sum(len(f.data) for f in files.values())


def longest_c_call(func: Callable[[], object]) -> tuple[float, str]:
    """Run `func`; return the CPU time of its longest call into C, and what it called.

    A call that runs Python code inside (`any` over a generator) is not counted: the
    interpreter may hand the GIL over there.
    """
    clock = time.thread_time
    stack: list[list[float]] = []  # [started, 1.0 if Python code ran inside]
    worst = (0.0, "")

    def profile(_frame: FrameType, event: str, arg: Any) -> None:
        nonlocal worst
        if event == "c_call":
            stack.append([clock(), 0.0])
        elif event == "call" and stack:
            stack[-1][1] = 1.0
        elif event in ("c_return", "c_exception") and stack:
            started, ran_python = stack.pop()
            spent = clock() - started
            if not ran_python and spent > worst[0]:
                worst = (spent, getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(profile)
    try:
        func()
    finally:
        sys.setprofile(None)
    return worst


async def loop_gaps(func: Callable[[], object]) -> tuple[float, float]:
    """Run `func` in a worker thread; return the longest gap between the loop's wake-ups
    and the most CPU time the worker used within one gap."""
    worker: list[int] = []
    samples: list[tuple[float, float]] = []
    done = False

    def work() -> None:
        worker.append(threading.get_ident())
        func()

    async def probe() -> None:
        while not done:
            cpu = time.clock_gettime(time.pthread_getcpuclockid(worker[0])) if worker else 0.0
            samples.append((time.monotonic(), cpu))
            await asyncio.sleep(PROBE_INTERVAL)

    task = asyncio.create_task(probe())
    # The probe must be waking up before the work starts, or a stall at its very start
    # (the first pattern searched) would pass unseen.
    await asyncio.sleep(PROBE_INTERVAL * 3)
    await asyncio.to_thread(work)
    await asyncio.sleep(PROBE_INTERVAL * 3)
    done = True
    await task
    pairs = list(itertools.pairwise(samples))
    return max(b[0] - a[0] for a, b in pairs), max(b[1] - a[1] for a, b in pairs)


def crafted_row(case: Case) -> str:
    data = case.make()
    started = time.thread_time()
    findings = SCANNER.scan(case.id, data)
    cpu = time.thread_time() - started
    call, name = longest_c_call(lambda: SCANNER.scan(case.id, data))
    gap, gap_cpu = asyncio.run(loop_gaps(lambda: SCANNER.scan(case.id, data)))
    return (
        f"| {case.id} | {case.pattern} | {len(findings)} | {cpu * 1000:.0f} "
        f"| {call * 1000:.1f} (`{name}`) | {gap * 1000:.0f} | {gap_cpu * 1000:.0f} |"
    )


def main(argv: list[str]) -> None:
    median, best, size = small_package_cost()
    print(f"Common package ({size} bytes in 10 files): scan CPU median {median * 1e6:.0f} µs,")
    print(f"best {best * 1e6:.0f} µs.\n")
    print(
        "| crafted file (2 MiB) | against | findings | scan CPU ms | longest C call, ms CPU "
        "| loop gap ms | scan CPU in a gap ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for case in NEAR_MISSES + LONG_VALUES:
        if not argv or case.id in argv:
            print(crafted_row(case), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
