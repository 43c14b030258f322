"""Write scenarios: publish a new package, update one file, re-save unchanged, lock hold time.

Every repetition times the registry and each reference on a package of the same shape (its
own unique content, so nothing is deduplicated away), one after the other; in the publish
and update scenarios the order rotates with the repetition (`harness.rotated`). The
first repetition of each case is a discarded warm-up (a warm process: imports done, pools
and clients connected, statements compiled). The lock scenario compares its file sizes with
each other (flatness), so there the sizes take turns, one write of each per round
(`harness.round_robin`), and the first round is the warm-up.
"""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa

from bench.content import KiB, MiB, package
from bench.harness import (
    Result,
    Run,
    compare,
    rotated,
    round_robin,
    scenario,
    stats,
    time_async,
)
from bench.references import (
    GitReference,
    add_probe_table,
    cas_transaction,
    checked_floor,
    digests_of,
    durable_locked_transaction,
    empty_locked_transaction,
    floor,
    naive_write,
)
from bench.services import PG_S3, SQLITE_LOCAL, Backend
from registry.api import Registry
from registry.domain.model import ANY, Publication, Scope
from tests.support.faults import InstrumentedStore

WORKSPACE: Final = "bench"
SCOPE: Final = Scope(WORKSPACE)
BACKENDS: Final = (SQLITE_LOCAL, PG_S3)


# The failpoints inside the locked transaction, in order: each phase of the hold time ends
# at one of them (`publish.committed` is the commit's return, when the lock is gone).
LOCKED_POINTS: Final = (
    "publish.locked",
    "publish.checked",
    "publish.version_rows",
    "publish.head_moved",
    "publish.before_commit",
    "publish.committed",
)


class LockClock:
    """Failpoints that time the workspace lock: from `publish.locked` to `publish.committed`.

    Only `time.perf_counter()` runs at those points, so production timing is unchanged.
    `holds` has one total per committed write; `writes` the phases of each (the time to
    reach each point from the previous one: checks, version rows, head move, event, commit).
    """

    def __init__(self) -> None:
        self.holds: list[float] = []
        self.writes: list[dict[str, float]] = []
        self._marks: dict[str, float] = {}

    async def hit(self, name: str) -> None:
        now = time.perf_counter()
        if name == "publish.begin":
            self._marks = {}
        elif name in LOCKED_POINTS:
            self._marks[name] = now
            if name == "publish.committed" and "publish.locked" in self._marks:
                self.holds.append(now - self._marks["publish.locked"])
                self.writes.append(
                    {
                        after: self._marks[after] - self._marks[before]
                        for before, after in itertools.pairwise(LOCKED_POINTS)
                        if before in self._marks and after in self._marks
                    }
                )


# Where a write's time goes: each stage ends at the failpoint named (`reply` ends when
# `write_package` returns). The stages are sequential, so they add up to the whole write.
STAGES: Final = (
    ("validate, hash, scan", "write.validated"),
    ("head, claim", "write.claimed"),
    ("upload", "write.uploaded"),
    ("begin, lock", "publish.locked"),
    ("locked transaction", "publish.committed"),
)


class StageClock:
    """Failpoints that time the stages of each write (`start()` before, `stop()` after)."""

    def __init__(self) -> None:
        self.writes: list[dict[str, float]] = []
        self._marks: dict[str, float] = {}

    def start(self) -> None:
        self._marks = {"start": time.perf_counter()}

    async def hit(self, name: str) -> None:
        self._marks[name] = time.perf_counter()

    def stop(self) -> None:
        self._marks["end"] = time.perf_counter()
        stages: dict[str, float] = {}
        previous = self._marks["start"]
        for stage, point in STAGES:
            if point in self._marks:
                stages[stage] = self._marks[point] - previous
                previous = self._marks[point]
        stages["reply"] = self._marks["end"] - previous
        self.writes.append(stages)


class RequestCounter:
    """Counts the HTTP requests an S3 store sends (botocore's `before-send` event).

    A bench-only look inside `S3BlobStore` (its botocore client): the count shows what a
    write costs in requests, which timing on moto cannot separate from moto's own speed.
    Other stores send no requests; `count` stays 0.
    """

    def __init__(self, store: object) -> None:
        self.count = 0
        client = getattr(store, "_client", None)
        if client is not None:
            client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, **_: Any) -> None:
        self.count += 1


def _reps(run: Run, size: int) -> int:
    # Fewer repetitions for the large packages keep `make bench` under its 15 minutes.
    if size <= MiB:
        return run.reps(8, 2)
    if size <= 10 * MiB:
        return run.reps(5, 2)
    return run.reps(3, 2)


def _floor_contender(backend: Backend, blobs: dict[str, bytes]) -> Callable[[], Awaitable[float]]:
    """The floor of storing `blobs` (digest to bytes), as a contender for `rotated`."""

    async def storage_floor() -> float:
        concurrency = backend.registry.settings.upload_concurrency
        return await floor(backend.store, backend.engine, WORKSPACE, blobs, concurrency=concurrency)

    return storage_floor


async def _publish_rep(
    backend: Backend,
    files_count: int,
    size: int,
    rep: int,
    slug: str,
    *,
    clock: StageClock,
    git: GitReference,
    counter: RequestCounter,
    scratch: Path,
) -> tuple[dict[str, float], Publication, int]:
    """One repetition: the registry's publish and each reference, in a rotated order."""
    files = package(slug, files=files_count, size=size, tag=f"{backend.name} {rep}")
    other = package(slug, files=files_count, size=size, tag=f"floor {backend.name} {rep}")
    made: list[tuple[Publication, int]] = []

    async def registry() -> float:
        sample: list[float] = []
        sent = counter.count
        clock.start()
        publication = await time_async(
            sample,
            backend.registry.write_package(SCOPE, slug, files, expected_head=None, actor="bench"),
        )
        clock.stop()
        made.append((publication, counter.count - sent))
        return sample[0]

    async def git_commit() -> float:
        git.add_package(slug, files)
        return git.commit()

    async def naive() -> float:
        return naive_write(scratch / "naive" / slug, files)

    storage_floor = _floor_contender(backend, digests_of(other))
    checked = package(slug, files=files_count, size=size, tag=f"checked {backend.name} {rep}")

    async def floor_with_checks() -> float:
        concurrency = backend.registry.settings.upload_concurrency
        return await checked_floor(
            backend.store, backend.engine, WORKSPACE, checked, concurrency=concurrency
        )

    contenders = {
        "registry": registry,
        "git": git_commit,
        "naive": naive,
        "floor": storage_floor,
        "checked floor": floor_with_checks,
    }
    times = await rotated(rep, contenders)
    publication, sent = made[0]
    return times, publication, sent


async def _publish_case(
    run: Run, backend: Backend, files_count: int, size: int, *, clock: StageClock, scratch: Path
) -> Result:
    git = GitReference(scratch / "git")
    reg: list[float] = []
    refs: dict[str, list[float]] = {"git": [], "naive": [], "floor": [], "checked floor": []}
    uploaded: list[int] = []
    requests: list[int] = []
    counter = RequestCounter(backend.store)
    reps = _reps(run, files_count * size)
    first = len(clock.writes) + 1  # after the warm-up
    for rep in range(reps + 1):
        slug = f"p{files_count}-{size}-{rep}"
        times, publication, sent = await _publish_rep(
            backend, files_count, size, rep, slug, clock=clock, git=git, counter=counter,
            scratch=scratch,
        )  # fmt: skip
        shutil.rmtree(scratch / "naive" / slug)
        if rep == 0:
            continue  # warm-up
        reg.append(times.pop("registry"))
        for name, seconds in times.items():
            refs[name].append(seconds)
        uploaded.append(publication.uploaded)
        requests.append(sent)
    shutil.rmtree(scratch)
    return compare(
        {"backend": backend.name, "files": files_count, "file_size": size},
        reg,
        refs,
        bytes=files_count * size,
        uploaded=uploaded,
        store_requests=requests,
        stages={
            stage: stats([w.get(stage, 0.0) for w in clock.writes[first:]])
            for stage in [*(name for name, _ in STAGES), "reply"]
        },
    )


@scenario("publish", "Publish a new package")
async def publish_new(run: Run) -> Result:
    counts = run.pick([1, 10, 100], [1, 10])
    sizes = run.pick([KiB, 64 * KiB, MiB], [KiB, 64 * KiB])
    comparisons = []
    for kind in BACKENDS:
        clock = StageClock()
        async with run.services.backend(kind, failpoints=clock) as backend:
            for files_count in counts:
                for size in sizes:
                    scratch = run.scratch / f"publish-{kind}-{files_count}-{size}"
                    comparisons.append(
                        await _publish_case(
                            run, backend, files_count, size, clock=clock, scratch=scratch
                        )
                    )
    return {"comparisons": comparisons}


# ---------------------------------------------------------------- update one file


@scenario("update", "Update one file of a package")
async def update_one(run: Run) -> Result:
    counts = run.pick([1, 10, 100], [1, 100])
    size = 16 * KiB
    comparisons = []
    for kind in BACKENDS:
        async with run.services.backend(kind) as backend:
            for files_count in counts:
                scratch = run.scratch / f"update-{kind}-{files_count}"
                comparisons.append(await _update_case(run, backend, files_count, size, scratch))
    return {"comparisons": comparisons}


async def _update_rep(
    backend: Backend,
    git: GitReference,
    scratch: Path,
    slug: str,
    *,
    changed: str,
    new: dict[str, bytes],
    head: int,
    rep: int,
) -> tuple[dict[str, float], Publication]:
    """One repetition of an update: the registry and each reference, in a rotated order."""
    made: list[Publication] = []
    blob = {changed: f"floor {rep} ".encode() + new[changed]}

    async def registry() -> float:
        sample: list[float] = []
        write = backend.registry.write_package(SCOPE, slug, new, expected_head=head, actor="bench")
        made.append(await time_async(sample, write))
        return sample[0]

    async def git_commit() -> float:
        git.write_file(f"{slug}/{changed}", new[changed])
        return git.commit()

    async def naive() -> float:
        return naive_write(scratch / "naive", {changed: new[changed]})

    storage_floor = _floor_contender(backend, digests_of(blob))
    times = await rotated(
        rep, {"registry": registry, "git": git_commit, "naive": naive, "floor": storage_floor}
    )
    return times, made[0]


async def _update_case(
    run: Run, backend: Backend, files_count: int, size: int, scratch: Path
) -> Result:
    slug = f"u{files_count}"
    files = package(slug, files=files_count, size=size, tag="base")
    first = await backend.registry.write_package(
        SCOPE, slug, files, expected_head=None, actor="bench"
    )
    head = first.version
    git = GitReference(scratch / "git")
    git.add_package(slug, files)
    git.commit()
    changed = max(files)  # the last path: a supporting file (or SKILL.md alone)
    reg: list[float] = []
    refs: dict[str, list[float]] = {"git": [], "naive": [], "floor": []}
    uploaded: list[int] = []
    reps = run.reps(15, 2)
    for rep in range(reps + 1):
        new = dict(files)
        if changed == "SKILL.md":
            new[changed] = package(slug, files=1, size=size, tag=f"edit {rep}")["SKILL.md"]
        else:
            new[changed] = f"edit {rep}\n".encode() + files[changed][16:]
        times, publication = await _update_rep(
            backend, git, scratch, slug, changed=changed, new=new, head=head, rep=rep
        )
        head = publication.version
        if rep == 0:
            continue
        reg.append(times.pop("registry"))
        for name, seconds in times.items():
            refs[name].append(seconds)
        uploaded.append(publication.uploaded)
    shutil.rmtree(scratch)
    return compare(
        {"backend": backend.name, "files": files_count, "file_size": size},
        reg,
        refs,
        uploaded=uploaded,
    )


# ---------------------------------------------------------------- no-op re-save


async def _count_versions(backend: Backend) -> int:
    async with backend.engine.connect() as conn:
        return int(await conn.scalar(sa.text("SELECT count(*) FROM versions")) or 0)


@scenario("noop", "Re-save an unchanged package")
async def noop_resave(run: Run) -> Result:
    files_count, size = 100, 16 * KiB
    comparisons = []
    for kind in BACKENDS:
        async with run.services.backend(kind) as backend:
            counting = InstrumentedStore(backend.store)
            registry = Registry(backend.engine, counting, backend.registry.settings)
            scratch = run.scratch / f"noop-{kind}"
            slug = "noop"
            files = package(slug, files=files_count, size=size, tag="noop")
            await registry.write_package(SCOPE, slug, files, expected_head=None, actor="bench")
            git = GitReference(scratch / "git")
            git.add_package(slug, files)
            git.commit()
            naive_write(scratch / "naive", files)
            puts_before = counting.calls["put"]
            versions_before = await _count_versions(backend)
            reg: list[float] = []
            refs: dict[str, list[float]] = {"git": [], "naive": [], "floor": []}
            unchanged = True
            reps = run.reps(20, 2)
            for rep in range(reps + 1):
                sample: list[float] = []
                publication = await time_async(
                    sample,
                    registry.write_package(SCOPE, slug, files, expected_head=ANY, actor="bench"),
                )
                unchanged = unchanged and publication.unchanged and publication.uploaded == 0
                git_time = git.commit()
                naive_time = naive_write(scratch / "naive", files)
                floor_sample: list[float] = []
                await time_async(floor_sample, empty_locked_transaction(backend.engine, WORKSPACE))
                if rep == 0:
                    continue
                reg += sample
                refs["git"].append(git_time)
                refs["naive"].append(naive_time)
                refs["floor"] += floor_sample
            puts = counting.calls["put"] - puts_before
            versions = await _count_versions(backend) - versions_before
            if not unchanged or puts or versions:
                msg = f"no-op re-save on {kind}: {puts} puts, {versions} new versions"
                raise AssertionError(msg)
            shutil.rmtree(scratch)
            comparisons.append(
                compare(
                    {"backend": kind, "files": files_count, "file_size": size},
                    reg,
                    refs,
                    puts=puts,
                    new_versions=versions,
                    unchanged=unchanged,
                )
            )
    return {"comparisons": comparisons}


# ---------------------------------------------------------------- lock hold time


@dataclass
class _LockSamples:
    """One file size's measured writes in the lock scenario."""

    holds: list[float] = field(default_factory=list)
    empty: list[float] = field(default_factory=list)
    durable: list[float] = field(default_factory=list)
    cas: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)

    def comparison(self, case: dict[str, Any]) -> Result:
        return compare(
            case,
            self.holds,
            {
                "empty locked transaction": self.empty,
                "durable locked transaction": self.durable,
                "CAS transaction": self.cas,
            },
            publish_total=stats(self.totals),
            phases={p: stats([w[p] for w in self.phases if p in w]) for p in LOCKED_POINTS[1:]},
        )


@scenario("lock", "Lock hold time against file size")
async def lock_hold(run: Run) -> Result:
    files_count = 10
    sizes = run.pick([KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 2 * MiB], [KiB, MiB])
    comparisons = []
    distributions: dict[str, list[float]] = {}
    for kind in BACKENDS:
        clock = LockClock()
        samples = {size: _LockSamples() for size in sizes}
        async with run.services.backend(kind, failpoints=clock) as backend:
            await add_probe_table(backend.engine)
            # The sizes take turns (the flatness compares them with each other); round 0
            # is the warm-up.
            for rep, size in round_robin(sizes, run.reps(12, 2) + 1):
                slug = f"l{size}-{rep}"
                files = package(slug, files=files_count, size=size, tag=f"lock {rep}")
                before = len(clock.holds)
                total: list[float] = []
                await time_async(
                    total,
                    backend.registry.write_package(
                        SCOPE, slug, files, expected_head=None, actor="bench"
                    ),
                )
                assert len(clock.holds) == before + 1
                empty: list[float] = []
                await time_async(empty, empty_locked_transaction(backend.engine, WORKSPACE))
                durable: list[float] = []
                await time_async(durable, durable_locked_transaction(backend.engine, WORKSPACE))
                cas: list[float] = []
                await time_async(cas, cas_transaction(backend.engine, WORKSPACE))
                if rep == 0:
                    continue
                sample = samples[size]
                sample.holds.append(clock.holds[-1])
                sample.phases.append(clock.writes[-1])
                sample.empty += empty
                sample.durable += durable
                sample.cas += cas
                sample.totals += total
        comparisons += [
            samples[size].comparison({"backend": kind, "files": files_count, "file_size": size})
            for size in sizes
        ]
        distributions[kind] = [hold for size in sizes for hold in samples[size].holds]
    return {
        "comparisons": comparisons,
        "distributions": {k: {"samples": v, "stats": stats(v)} for k, v in distributions.items()},
        "flatness": _flatness(comparisons),
    }


def _flatness(comparisons: list[Result]) -> dict[str, Any]:
    """Per backend: median hold at the largest size over the median at the smallest."""
    out: dict[str, Any] = {}
    for kind in BACKENDS:
        rows = [c for c in comparisons if c["case"]["backend"] == kind]
        if len(rows) >= 2:
            small, large = rows[0], rows[-1]
            out[kind] = {
                "smallest": small["case"]["file_size"],
                "largest": large["case"]["file_size"],
                "ratio": large["subject"]["median"] / small["subject"]["median"],
            }
    return out
