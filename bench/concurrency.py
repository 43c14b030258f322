"""Concurrency on PostgreSQL: 1, 2, 4 and 8 writer processes.

Each level spawns its writer processes once (multiprocessing, `spawn`); every process
builds its own registry on the same PostgreSQL database and local blob store, warms up, and
then runs rounds on command. A round starts on a barrier, so all writers begin together;
throughput is the round's committed writes over the time from the barrier to the last
writer's finish. Modes:

- `same workspace`: every writer updates the same skill with `expected_head=ANY` (the
  workspace lock is contended on every write);
- `distinct workspaces`: each writer updates its own skill in its own workspace;
- `same workspace, CAS`: every writer reads the head and writes with `expected_head` set to
  it; a `HeadConflict` is counted and the writer re-reads and tries again;
- `lock only`: each writer runs the empty locked transaction in the shared workspace: the
  most the lock alone allows, the reference for the same-workspace modes.

Each write changes one file of a 10-file package. The blob store is local: one moto
process serving eight writers would measure moto. Each writer also reports the CPU time
its process spent per committed write: on a 2-core machine shared with PostgreSQL, that
(and not the lock) bounds how far throughput can scale.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from typing import Any, Final

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, stats
from bench.references import empty_locked_transaction
from bench.services import PG_LOCAL, bench_settings, open_engine
from blobstore import open_blobstore
from registry.api import Registry
from registry.domain.model import ANY, Scope
from registry.errors import HeadConflict

SAME: Final = "same workspace"
DISTINCT: Final = "distinct workspaces"
CAS: Final = "same workspace, CAS"
LOCK_ONLY: Final = "lock only"
MODES: Final = (SAME, DISTINCT, CAS, LOCK_ONLY)
SLUG: Final = "hot"
FILES: Final = 10
SIZE: Final = 4 * KiB


@dataclass(frozen=True)
class Command:
    mode: str
    ops: int
    round: int


def _scope(mode: str, index: int) -> Scope:
    return Scope(f"writer-{index}") if mode == DISTINCT else Scope("shared")


def _worker(
    index: int, urls: tuple[str, str], commands: Any, results: Any, barrier: Barrier
) -> None:
    asyncio.run(_worker_main(index, urls, commands, results, barrier))


async def _worker_main(
    index: int, urls: tuple[str, str], commands: Any, results: Any, barrier: Barrier
) -> None:
    database_url, blob_url = urls
    settings = bench_settings(database_url=database_url, blob_url=blob_url)

    engine = open_engine(settings)
    store = open_blobstore(blob_url)
    registry = Registry(engine, store, settings)
    base = package(SLUG, files=FILES, size=SIZE, tag="base")
    counter = 0
    try:
        while True:
            command = await asyncio.to_thread(commands.get)
            if command is None:
                break
            latencies: list[float] = []
            conflicts = 0
            scope = _scope(command.mode, index)
            await asyncio.to_thread(barrier.wait)
            started = time.monotonic()
            cpu_started = time.process_time()
            for _ in range(command.ops):
                counter += 1
                files = dict(base)
                files["references/part-001.md"] = (
                    f"writer {index} write {counter}\n".encode() + base["references/part-001.md"]
                )
                op_start = time.perf_counter()
                if command.mode == LOCK_ONLY:
                    await empty_locked_transaction(engine, scope.workspace)
                elif command.mode == CAS:
                    while True:
                        head = (await registry.package_info(scope, SLUG)).head
                        try:
                            await registry.write_package(
                                scope, SLUG, files, expected_head=head, actor=f"w{index}"
                            )
                            break
                        except HeadConflict:
                            conflicts += 1
                else:
                    await registry.write_package(
                        scope, SLUG, files, expected_head=ANY, actor=f"w{index}"
                    )
                latencies.append(time.perf_counter() - op_start)
            results.put(
                {
                    "index": index,
                    "round": command.round,
                    "started": started,
                    "finished": time.monotonic(),
                    "cpu": time.process_time() - cpu_started,
                    "latencies": latencies,
                    "conflicts": conflicts,
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
    figures: dict[tuple[str, int], dict[str, Any]] = {}
    for level in levels:
        figures |= await asyncio.to_thread(
            _run_level, database_url, blob_url, level, max(1, total_ops // level), rounds
        )
    comparisons = []
    for mode in MODES:
        for level in levels:
            data = figures[(mode, level)]
            references = {"1 writer": figures[(mode, 1)]["throughputs"]}
            if mode in (SAME, CAS):
                references["lock only"] = figures[(LOCK_ONLY, level)]["throughputs"]
            comparisons.append(
                compare(
                    {"mode": mode, "writers": level},
                    data["throughputs"],
                    references,
                    unit="writes/s",
                    latency=stats(data["latencies"]),
                    conflicts=data["conflicts"],
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
    base = package(SLUG, files=FILES, size=SIZE, tag="base")
    try:
        for scope in {_scope(SAME, 0), *(_scope(DISTINCT, i) for i in range(writers))}:
            await registry.write_package(scope, SLUG, base, expected_head=None, actor="seed")
    finally:
        await store.close()
        await engine.dispose()


def _run_level(
    database_url: str, blob_url: str, level: int, ops: int, rounds: int
) -> dict[tuple[str, int], dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(level)
    results = context.Queue()
    queues = [context.Queue() for _ in range(level)]
    workers = [
        context.Process(
            target=_worker,
            args=(i, (database_url, blob_url), queues[i], results, barrier),
            daemon=True,
        )
        for i in range(level)
    ]
    for worker in workers:
        worker.start()
    out: dict[tuple[str, int], dict[str, Any]] = {}
    try:
        # A warm-up round (imports done, pool connected, statements compiled), discarded.
        _round(queues, results, Command(SAME, 2, -1))
        for mode in MODES:
            throughputs: list[float] = []
            latencies: list[float] = []
            cpu_per_write: list[float] = []
            conflicts = 0
            for number in range(rounds):
                reports = _round(queues, results, Command(mode, ops, number))
                span = max(r["finished"] for r in reports) - min(r["started"] for r in reports)
                writes = sum(len(r["latencies"]) for r in reports)
                throughputs.append(writes / span)
                latencies += [x for r in reports for x in r["latencies"]]
                conflicts += sum(r["conflicts"] for r in reports)
                cpu_per_write.append(sum(r["cpu"] for r in reports) / writes)
            out[(mode, level)] = {
                "throughputs": throughputs,
                "latencies": latencies,
                "conflicts": conflicts,
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
    return [results.get(timeout=600) for _ in queues]
