"""What the content check costs, and how long it keeps the event loop waiting.

    python -m bench.scan [CASE ...]
    python -m bench.scan --engines

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

`--engines` compares the engines that list the check's literals (registry/domain/literals.py,
every one installed: `literals.ENGINES`) on files and packages up to the limits (2 MiB a
file, 20 MiB a package) of several kinds of content: the scan's CPU time with each engine
(the findings must be equal), and a whole publish of the largest package on the embedded
default (SQLite and a local store, in a temporary folder). docs/benchmarks.md records the
run that decided which engines the registry keeps.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any
from unittest import mock

from bench.content import KiB, MiB, package
from registry import Origin, Registry, Scope
from registry.domain import literals, scanner
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


# ---------------------------------------------------------------- engines

# Names a script or a data file holds around the check's secret words (`token`, `key`,
# `auth`, `pass`), most of them harmless: what makes the assignment pattern try.
_NAMES = (
    *("token_count", "api_key_env", "password_file", "auth_header", "keyboard", "max_tokens"),
    *("passes", "author", "value", "result", "config", "secret_name"),
)


def _code(size: int, rng: random.Random) -> bytes:
    """Python-like lines: assignments whose names hold the secret words."""
    lines, length = [], 0
    while length < size:
        a, b = rng.choice(_NAMES), rng.choice(_NAMES)
        line = f"    {a} = compute({b}, index={rng.randrange(1000)})  # read the {b}\n"
        lines.append(line)
        length += len(line)
    return "".join(lines).encode("ascii")[:size]


def _json(size: int, rng: random.Random) -> bytes:
    """JSON records with `key`, `tokens` and `author` fields."""
    lines, length = [], 0
    while length < size:
        number = rng.randrange(10**6)
        line = f'{{"id": {number}, "key": "k{number % 999}", "tokens": {number % 97}, '
        line += f'"author": "a{number % 89}", "label": "row {number % 991}"}},\n'
        lines.append(line)
        length += len(line)
    return "".join(lines).encode("ascii")[:size]


def engine_cases() -> list[tuple[str, dict[str, PackageFile]]]:
    """Files of 2 MiB (the file limit) and packages of 20 MiB (the package limit)."""
    rng = random.Random(38)
    size = 2 * MiB
    prose_package = {
        path: PackageFile(data)
        for path, data in package("engines", files=10, size=size, tag="engines").items()
    }
    prose = prose_package["SKILL.md"].data
    code, data = _code(size, rng), _json(size, rng)
    encoded = base64.b64encode(rng.randbytes(size))[:size]
    binary = rng.randbytes(size)
    mixed = {"a.md": prose, "b.py": code, "c.json": data, "d.b64": encoded, "e.bin": binary}
    mixed |= {f"f{i}.md": f.data for i, f in enumerate(list(prose_package.values())[1:6])}
    return [
        ("common package (10 files, 25 KiB)", small_package()),
        ("prose, 2 MiB", {"a.md": PackageFile(prose)}),
        ("Python, 2 MiB", {"a.py": PackageFile(code)}),
        ("JSON, 2 MiB", {"a.json": PackageFile(data)}),
        ("base64, 2 MiB", {"a.b64": PackageFile(encoded)}),
        ("random bytes, 2 MiB", {"a.bin": PackageFile(binary)}),
        ("prose, 10 x 2 MiB", prose_package),
        (
            "mixed, 10 x 2 MiB (5 prose, one of each other)",
            {p: PackageFile(d) for p, d in mixed.items()},
        ),
    ]


@contextmanager
def engine(name: literals.Engine) -> Iterator[None]:
    """The content check with its literals listed by `name` (`search`: found one by one)."""
    mine = scanner._LITERALS  # noqa: SLF001 - the check's own literals, listed another way
    other = literals.Literals(mine.cased, mine.folded, engine=name)
    with mock.patch.object(scanner, "_LITERALS", other):
        yield


def _cpu(files: dict[str, PackageFile], rounds: int) -> float:
    runs = []
    for _ in range(rounds):
        started = time.process_time()
        scan_package(SCANNER, files)
        runs.append(time.process_time() - started)
    return statistics.median(runs)


async def _publish_largest(name: literals.Engine, rounds: int = 5) -> tuple[float, float]:
    """Median wall and CPU seconds of a new 10 x 2 MiB prose package, SQLite + local store."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as folder, engine(name):
        async with Registry.open(
            database_url=f"sqlite+aiosqlite:///{folder}/registry.db",
            blob_url=f"file://{folder}/blobs",
            initialize=True,
        ) as reg:
            for number in range(rounds + 1):
                slug = f"largest-{number}"
                files = package(slug, files=10, size=2 * MiB, tag=f"{name} {number}")
                wall, cpu = time.perf_counter(), time.process_time()
                await reg.write_package(
                    Scope("bench"), slug, files, expected_head=None, origin=Origin.EDIT, actor="b"
                )
                if number:  # the first one warms the caches up
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def engines_report() -> None:
    names = literals.ENGINES
    print("| content | bytes | " + " | ".join(f"{n}: scan CPU" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for label, files in engine_cases():
        size = sum(len(f.data) for f in files.values())
        findings = None
        cells = []
        for name in names:
            with engine(name):
                found = scan_package(SCANNER, files)
                assert findings is None or found == findings, (label, name)
                findings = found
                seconds = _cpu(files, rounds=200 if size < MiB else 5)
            rate = size / seconds / 1e6
            cells.append(f"{seconds * 1e3:.2f} ms ({rate:.0f} MB/s)")
        print(f"| {label} | {size} | " + " | ".join(cells) + " |", flush=True)
    print()
    crafted = [(case.id, {case.id: PackageFile(case.make())}) for case in NEAR_MISSES + LONG_VALUES]
    print(f"| crafted files ({len(crafted)} of 2 MiB) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    costs: dict[str, list[float]] = {name: [] for name in names}
    for _, files in crafted:
        for name in names:
            with engine(name):
                costs[name].append(_cpu(files, rounds=1))
    for label, pick in (("median", statistics.median), ("slowest", max)):
        cells = [f"{pick(costs[name]) * 1e3:.0f} ms" for name in names]
        print(f"| {label} scan CPU | " + " | ".join(cells) + " |")
    print()
    print("| publish 10 x 2 MiB of prose (SQLite, local store) | wall | CPU |")
    print("|---|---|---|")
    for name in names:
        wall, cpu = asyncio.run(_publish_largest(name))
        print(f"| {name} | {wall * 1e3:.0f} ms | {cpu * 1e3:.0f} ms |", flush=True)


def main(argv: list[str]) -> None:
    if argv == ["--engines"]:
        engines_report()
        return
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
