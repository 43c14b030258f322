"""Garbage collection over 10,000 and 100,000 blobs, on SQLite and PostgreSQL (local store).

The store holds `N` small objects: 99% referenced by the manifests of skills (100 files a
package), 1% orphans (a live row that nothing references: what a failed write or a pruned
version leaves behind) and 0.1% more objects with no row at all (an upload whose row GC
already removed, a crash). Everything is dated two days back, past the default grace
period of an hour, so a run reclaims every orphan and checks every listing page against
the rows: the most a run has to do for a store of this size. Both databases share one
store per size; before each run the orphans are put back (objects and rows), untimed.

Each repetition times one full run (`reg.gc.collect()`), then, in turn, its references:

- `listing`: the store's own listing (`iter_digests`) consumed alone;
- `count`: one `SELECT count(*), sum(size) FROM blobs`, a pass over the blob rows;
- `orphan query`: the question GC answers, in one statement (the rows no manifest
  entry references);
- `floor`: listing + orphan query from the same repetition: the least a run can do is
  look at every object and find the unreferenced rows.

Memory: the first run of each case (untimed, it also warms the caches) runs under
`tracemalloc`, whose peak is the most the run held on the Python heap at once (the
process's RSS would say little here: the process already holds what earlier scenarios
freed). Bounded memory shows as about the same peak at 10,000 and 100,000 blobs. A run
that reclaims anything but the orphans fails the scenario.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.harness import Result, Run, compare, scenario, stats
from bench.seed import AGE, blob_bytes, seed_blobs, seed_orphans, write_objects
from bench.services import PG_LOCAL, SQLITE_LOCAL, Backend
from blobstore.digest import compute_digest
from registry.domain.model import Scope

BACKENDS: Final = (SQLITE_LOCAL, PG_LOCAL)
SCOPE: Final = Scope("gc")
BLOB_SIZE: Final = 256
FILES_PER_PACKAGE: Final = 100
REFERENCES: Final = ("listing", "count", "orphan query")


@scenario("gc", "Garbage collection over 100,000 blobs")
async def garbage_collection(run: Run) -> Result:
    levels = run.pick([10_000, 100_000], [500, 1_000])
    at = datetime.now(UTC) - AGE
    comparisons: list[Result] = []
    for level in levels:
        orphans, untracked = max(1, level // 100), max(1, level // 1000)
        blobs = [blob_bytes("gc", i, BLOB_SIZE) for i in range(level)]
        loose = {
            compute_digest(data): data
            for data in (blob_bytes("untracked", i, BLOB_SIZE) for i in range(untracked))
        }
        root = run.scratch / f"store-{level}"
        blob_url = root.as_uri()
        for kind in BACKENDS:
            database_url = await asyncio.to_thread(
                run.services.new_sqlite_database
                if kind == SQLITE_LOCAL
                else run.services.new_pg_database
            )
            async with run.services.backend(kind, urls=(database_url, blob_url)) as backend:
                seeded = time.perf_counter()
                await seed_blobs(
                    backend.engine,
                    root,
                    SCOPE,
                    blobs,
                    referenced=level - orphans,
                    files_per_package=FILES_PER_PACKAGE,
                    at=at,
                )
                await _analyze(backend.engine)
                seeding = time.perf_counter() - seeded

                restore = functools.partial(
                    _restore, backend.engine, root, blobs[level - orphans :], loose, at
                )
                comparison = await _measure(
                    run, backend, restore, level=level, orphans=orphans, untracked=untracked
                )
                comparison["seeding_seconds"] = seeding
                comparisons.append(comparison)
        await asyncio.to_thread(shutil.rmtree, root)
    return {"comparisons": comparisons, "growth": _growth(comparisons)}


async def _restore(
    engine: AsyncEngine,
    root: Path,
    orphans: Sequence[bytes],
    loose: Mapping[str, bytes],
    at: datetime,
) -> None:
    """Put back what the previous run reclaimed: the orphans and the untracked objects."""
    await seed_orphans(engine, root, orphans, at=at)
    await asyncio.to_thread(write_objects, root, loose, mtime=at.timestamp())


async def _analyze(engine: AsyncEngine) -> None:
    # As autovacuum would after a bulk load: the planner sees the real table sizes.
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            await conn.execute(sa.text("ANALYZE"))
            await conn.commit()


async def _measure(
    run: Run,
    backend: Backend,
    restore: Callable[[], Awaitable[None]],
    *,
    level: int,
    orphans: int,
    untracked: int,
) -> Result:
    registry = backend.registry
    referenced = level - orphans
    gc_samples: list[float] = []
    refs: dict[str, list[float]] = {name: [] for name in (*REFERENCES, "floor")}
    traced_peak = 0
    for rep in range(run.reps(3, 1) + 1):
        await restore()
        warmup = rep == 0
        if warmup:
            tracemalloc.start()
        started = time.perf_counter()
        report = await registry.gc.collect()
        elapsed = time.perf_counter() - started
        if warmup:
            traced_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        if (report.blobs_reclaimed, report.untracked_reclaimed, report.store_objects) != (
            orphans + untracked,
            untracked,
            referenced + untracked,
        ):
            msg = (
                f"gc on {backend.name} at {level} blobs reclaimed {report.blobs_reclaimed} "
                f"({report.untracked_reclaimed} untracked) and listed {report.store_objects}; "
                f"expected {orphans + untracked} ({untracked}) and {referenced + untracked}"
            )
            raise AssertionError(msg)
        measured = await _references(backend, rotate=rep)
        if warmup:
            continue
        gc_samples.append(elapsed)
        for name, value in measured.items():
            refs[name].append(value)
        refs["floor"].append(measured["listing"] + measured["orphan query"])
    median = stats(gc_samples)["median"]
    return compare(
        {"backend": backend.name, "blobs": level},
        gc_samples,
        refs,
        orphans=orphans,
        untracked=untracked,
        blobs_per_second=level / median if median else None,
        listing_per_second=level / stats(refs["listing"])["median"],
        tracemalloc_peak_bytes=traced_peak,
    )


async def _references(backend: Backend, *, rotate: int) -> dict[str, float]:
    """Time each reference once, starting at a different one in each repetition."""

    async def listing() -> int:
        return sum([1 async for _ in backend.store.iter_digests()])

    async def count() -> Any:
        async with backend.engine.connect() as conn:
            return (await conn.execute(sa.text("SELECT count(*), sum(size) FROM blobs"))).one()

    async def orphan_query() -> Any:
        async with backend.engine.connect() as conn:
            return await conn.scalar(
                sa.text(
                    "SELECT count(*) FROM blobs WHERE NOT EXISTS "
                    "(SELECT 1 FROM manifest_entries e WHERE e.digest = blobs.digest)"
                )
            )

    work = {"listing": listing, "count": count, "orphan query": orphan_query}
    order = list(work)
    order = order[rotate % len(order) :] + order[: rotate % len(order)]
    times: dict[str, float] = {}
    for name in order:
        started = time.perf_counter()
        await work[name]()
        times[name] = time.perf_counter() - started
    return times


def _growth(comparisons: list[Result]) -> dict[str, Any]:
    """Per backend: time and memory at the largest size over the smallest."""
    out: dict[str, Any] = {}
    for kind in BACKENDS:
        rows = sorted(
            (c for c in comparisons if c["case"]["backend"] == kind),
            key=lambda c: c["case"]["blobs"],
        )
        if len(rows) < 2:
            continue
        small, large = rows[0], rows[-1]
        out[kind] = {
            "smallest": small["case"]["blobs"],
            "largest": large["case"]["blobs"],
            "time": large["subject"]["median"] / small["subject"]["median"],
            "tracemalloc_peak": large["tracemalloc_peak_bytes"]
            / max(small["tracemalloc_peak_bytes"], 1),
        }
    return out
