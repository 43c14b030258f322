"""Concurrency on PostgreSQL: 1, 2, 4 and 8 writers, as processes and as tasks of one process.

Two runners for the same writers:

- `processes`: one writer per process (multiprocessing, `spawn`), each with its own
  registry, engine and event loop: what several service processes do;
- `tasks`: every writer a task of one process, sharing one registry (one engine, one
  pool, one event loop): what one service process serving concurrent requests does.

One writer is one process running one task, whichever the runner: it is measured once and
is the `1 writer` reference of both. Each level starts its worker processes once; every
process builds its registry on the same PostgreSQL database and local blob store, warms
up, and runs rounds on command. A round starts on a barrier, so all writers begin together;
throughput is the round's committed writes over the time from the barrier to the last
writer's finish. Modes:

- `same workspace`: every writer updates the same skill with `expected_head=ANY` (the
  workspace lock is contended on every write);
- `distinct skills`: each writer updates its own skill in the shared workspace (the
  workspace lock is contended, the skills' rows are not);
- `distinct workspaces`: each writer updates its own skill in its own workspace;
- `same workspace, CAS`: every writer reads the head and writes with `expected_head` set to
  it; a `HeadConflict` is counted and the writer re-reads and tries again at once;
- `same workspace, CAS with retry`: every writer calls `Registry.write_with_retry` on the
  same skill (re-read the package, re-apply the change, jittered exponential backoff); its
  conflicts are the attempts beyond the first, and a write that runs out of attempts is
  counted as given up, not as a write;
- `lock only`: each writer runs the empty locked transaction in the shared workspace: the
  most the lock alone allows, the reference for the shared-workspace modes.

Each write changes one file of a 10-file package. The blob store is local: one moto
process serving eight writers would measure moto. Each round also reports the CPU time
the writers' processes spent per committed write: on a 2-core machine shared with
PostgreSQL, that (and not the lock) bounds how far throughput can scale.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import traceback
from dataclasses import dataclass, field
from functools import cache
from multiprocessing.synchronize import Barrier
from typing import Any, Final

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, stats
from bench.references import empty_locked_transaction
from bench.services import PG_LOCAL, bench_settings, open_engine
from blobstore import open_blobstore
from registry.api import Registry
from registry.domain.model import ANY, FileInput, Scope
from registry.errors import HeadConflict
from registry.services.read import Package

SAME: Final = "same workspace"
DISTINCT_SKILLS: Final = "distinct skills"
DISTINCT: Final = "distinct workspaces"
CAS: Final = "same workspace, CAS"
CAS_RETRY: Final = "same workspace, CAS with retry"
LOCK_ONLY: Final = "lock only"
MODES: Final = (SAME, DISTINCT_SKILLS, DISTINCT, CAS, CAS_RETRY, LOCK_ONLY)
# The modes whose writers share one workspace: `lock only` is their ceiling.
SHARED_MODES: Final = (SAME, DISTINCT_SKILLS, CAS, CAS_RETRY)
PROCESSES: Final = "processes"
TASKS: Final = "tasks"
RUNNERS: Final = (PROCESSES, TASKS)
SHARED: Final = Scope("shared")
SLUG: Final = "hot"
FILES: Final = 10
SIZE: Final = 4 * KiB
PART: Final = "references/part-001.md"


@dataclass(frozen=True)
class Command:
    mode: str
    ops: int
    round: int


@dataclass
class Tally:
    """What one writer did in a round."""

    latencies: list[float] = field(default_factory=list)
    conflicts: int = 0
    gave_up: int = 0


def _target(mode: str, writer: int) -> tuple[Scope, str]:
    """The workspace and skill writer number `writer` writes to in `mode`."""
    if mode == DISTINCT:
        return Scope(f"writer-{writer}"), SLUG
    if mode == DISTINCT_SKILLS:
        return SHARED, f"{SLUG}-{writer}"
    return SHARED, SLUG


@cache
def _base(slug: str) -> dict[str, bytes]:
    """The package every write to `slug` starts from (its `SKILL.md` names the slug)."""
    return package(slug, files=FILES, size=SIZE, tag="base")


class Writer:
    """One writer: runs a round's operations in a mode, on the registry it is given."""

    def __init__(self, index: int, registry: Registry) -> None:
        self.index = index
        self.registry = registry
        self.count = 0

    def _stamped(self, base: dict[str, bytes]) -> bytes:
        self.count += 1
        return f"writer {self.index} write {self.count}\n".encode() + base[PART]

    async def run(self, mode: str, ops: int) -> Tally:
        tally = Tally()
        for _ in range(ops):
            started = time.perf_counter()
            if await self._once(mode, tally):
                tally.latencies.append(time.perf_counter() - started)
        return tally

    async def _once(self, mode: str, tally: Tally) -> bool:
        """One operation; False if it gave up (no write)."""
        scope, slug = _target(mode, self.index)
        base = _base(slug)
        actor = f"w{self.index}"
        if mode == LOCK_ONLY:
            await empty_locked_transaction(self.registry.engine, scope.workspace)
        elif mode == CAS:
            files = {**base, PART: self._stamped(base)}
            while True:
                head = (await self.registry.package_info(scope, slug)).head
                try:
                    await self.registry.write_package(
                        scope, slug, files, expected_head=head, actor=actor
                    )
                    break
                except HeadConflict:
                    tally.conflicts += 1
        elif mode == CAS_RETRY:
            attempts = 0

            def change(current: Package | None) -> dict[str, FileInput]:
                nonlocal attempts
                attempts += 1
                files: dict[str, FileInput] = dict(current.files if current else base)
                files[PART] = self._stamped(base)
                return files

            try:
                await self.registry.write_with_retry(scope, slug, change, actor=actor)
            except HeadConflict:
                tally.conflicts += attempts
                tally.gave_up += 1
                return False
            tally.conflicts += attempts - 1
        else:
            files = {**base, PART: self._stamped(base)}
            await self.registry.write_package(scope, slug, files, expected_head=ANY, actor=actor)
        return True


def _worker(
    writers: range, urls: tuple[str, str], commands: Any, results: Any, barrier: Barrier
) -> None:
    asyncio.run(_worker_main(writers, urls, commands, results, barrier))


async def _worker_main(
    writers: range, urls: tuple[str, str], commands: Any, results: Any, barrier: Barrier
) -> None:
    """A worker process: its writers (tasks of one registry) run each round it is sent."""
    database_url, blob_url = urls
    settings = bench_settings(database_url=database_url, blob_url=blob_url)
    engine = open_engine(settings)
    store = open_blobstore(blob_url)
    registry = Registry(engine, store, settings)
    hosted = [Writer(index, registry) for index in writers]
    try:
        while True:
            command = await asyncio.to_thread(commands.get)
            if command is None:
                break
            await asyncio.to_thread(barrier.wait)
            started = time.monotonic()
            cpu_started = time.process_time()
            try:
                tallies = await asyncio.gather(*(w.run(command.mode, command.ops) for w in hosted))
            except Exception:  # noqa: BLE001 - reported to the parent, which raises it
                results.put({"round": command.round, "error": traceback.format_exc()})
                continue
            results.put(
                {
                    "round": command.round,
                    "started": started,
                    "finished": time.monotonic(),
                    "cpu": time.process_time() - cpu_started,
                    "latencies": [x for t in tallies for x in t.latencies],
                    "conflicts": sum(t.conflicts for t in tallies),
                    "gave_up": sum(t.gave_up for t in tallies),
                }
            )
    finally:
        await store.close()
        await engine.dispose()


@scenario("concurrency", "Concurrent writers on PostgreSQL")
async def concurrency(run: Run) -> Result:
    levels = run.pick([1, 2, 4, 8], [1, 2])
    total_ops = 8 if run.quick else 48
    rounds = run.reps(3, 1)
    database_url, blob_url = await asyncio.to_thread(run.services.urls, PG_LOCAL)
    await _create_skills(database_url, blob_url, max(levels))
    figures: dict[tuple[str, str, int], dict[str, Any]] = {}
    for level in levels:
        for runner in RUNNERS if level > 1 else (PROCESSES,):
            figures |= await asyncio.to_thread(
                _run_level,
                (database_url, blob_url),
                runner,
                level,
                max(1, total_ops // level),
                rounds,
            )
    comparisons = []
    for runner in RUNNERS:
        for mode in MODES:
            for level in levels:
                if (mode, runner, level) not in figures:
                    continue
                data = figures[(mode, runner, level)]
                references = {"1 writer": figures[(mode, PROCESSES, 1)]["throughputs"]}
                if mode in SHARED_MODES:
                    references["lock only"] = figures[(LOCK_ONLY, runner, level)]["throughputs"]
                comparisons.append(
                    compare(
                        {"mode": mode, "runner": runner, "writers": level},
                        data["throughputs"],
                        references,
                        unit="writes/s",
                        latency=stats(data["latencies"]),
                        conflicts=data["conflicts"],
                        gave_up=data["gave_up"],
                        client_cpu_per_write=stats(data["cpu_per_write"]),
                        writes=len(data["latencies"]),
                    )
                )
    return {"comparisons": comparisons}


async def _create_skills(database_url: str, blob_url: str, writers: int) -> None:
    settings = bench_settings(database_url=database_url, blob_url=blob_url)
    engine = open_engine(settings)
    store = open_blobstore(blob_url)
    await store.ensure()
    registry = Registry(engine, store, settings)
    targets = {_target(mode, i) for mode in MODES for i in range(writers)}
    try:
        for scope, slug in sorted(targets, key=lambda t: (t[0].workspace, t[1])):
            await registry.write_package(scope, slug, _base(slug), expected_head=None, actor="seed")
    finally:
        await store.close()
        await engine.dispose()


def _run_level(
    urls: tuple[str, str], runner: str, level: int, ops: int, rounds: int
) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Every mode with `level` writers: one process each, or all as tasks of one process."""
    context = multiprocessing.get_context("spawn")
    hosted = [range(i, i + 1) for i in range(level)] if runner == PROCESSES else [range(level)]
    barrier = context.Barrier(len(hosted))
    results = context.Queue()
    queues = [context.Queue() for _ in hosted]
    workers = [
        context.Process(target=_worker, args=(writers, urls, queue, results, barrier), daemon=True)
        for writers, queue in zip(hosted, queues, strict=True)
    ]
    for worker in workers:
        worker.start()
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    try:
        # A warm-up round (imports done, pool connected, statements compiled), discarded.
        _round(queues, results, Command(SAME, 2, -1))
        for mode in MODES:
            throughputs: list[float] = []
            latencies: list[float] = []
            cpu_per_write: list[float] = []
            conflicts = gave_up = 0
            for number in range(rounds):
                reports = _round(queues, results, Command(mode, ops, number))
                span = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
                writes = sum(len(r["latencies"]) for r in reports)
                throughputs.append(writes / span)
                latencies += [x for r in reports for x in r["latencies"]]
                conflicts += sum(r["conflicts"] for r in reports)
                gave_up += sum(r["gave_up"] for r in reports)
                cpu_per_write.append(sum(r["cpu"] for r in reports) / max(writes, 1))
            out[(mode, runner, level)] = {
                "throughputs": throughputs,
                "latencies": latencies,
                "conflicts": conflicts,
                "gave_up": gave_up,
                "cpu_per_write": cpu_per_write,
            }
    finally:
        for queue in queues:
            queue.put(None)
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.terminate()
                worker.join()
    return out


def _round(queues: list[Any], results: Any, command: Command) -> list[dict[str, Any]]:
    for queue in queues:
        queue.put(command)
    reports = [results.get(timeout=600) for _ in queues]
    failed = [r["error"] for r in reports if "error" in r]
    if failed:
        # A writer's error, not a hang until the timeout.
        raise RuntimeError(f"a writer process failed in {command.mode!r}:\n{failed[0]}")
    return reports
