"""Reconcile a target of 1,000 skills: fill it, find no drift, find and repair 1% drift.

One scope of 1,000 skills of 5 files of 4 KiB (the embedded default: SQLite and a local
store), seeded in bulk (`bench/seed.py`: objects in the store, rows as committed writes
leave them; `fsck` checks the result). A target in link mode, the default, then goes
through four cases, each next to its reference from the same repetition:

- `fill`: the first reconcile of an empty target writes every skill (per skill: a tree
  of fsynced files, verified, a link swapped in, the stat cache, one recorded
  transaction). References: `copy`, writing the same files one at a time with fsync; and
  `durable copy`, the same files with a materialised skill's durability (per skill, a
  staging folder of fsynced files and directories renamed into place, the parent
  fsynced: `bench/references.py`), one skill after the other.
- `no drift`: reconcile again; the stat cache answers for every file, so nothing is
  hashed (checked: `hashed == 0`) and nothing is written. Reference: `walk`, `os.walk`
  of the target with an `lstat` of every entry: the floor of looking at the tree.
- `verify`: reconcile with `verify=True`, which ignores the stat cache and rehashes every
  file. Reference: `read + hash`, reading and hashing every file of the packages.
- `1% drift`: 10 skills have one file edited on disk (untimed); the reconcile must find
  exactly those (hashing only the changed files) and repair them from the blob store.
  References: `rewrite`, a naive writer rewriting the 10 skills' files with fsync, and
  `floor`, that plus the walk of the whole target (finding the drift means looking).

Each fill counts the fsyncs it issues (`os.fsync`, wrapped; SQLite's own are not seen).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from blake3 import blake3

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, time_async
from bench.references import durable_copy, naive_write
from bench.seed import AGE, seed_packages
from bench.services import SQLITE_LOCAL, Backend
from registry.domain.model import Scope
from registry.services.materialize.report import ReconcileReport

SCOPE: Final = Scope("reconcile")
FILES: Final = 5
SIZE: Final = 4 * KiB
EDITED: Final = "references/part-001.md"

Packages = Mapping[str, Mapping[str, bytes]]


class HasFileno(Protocol):
    """What `os.fsync` takes besides a descriptor (typeshed's own is private to it)."""

    def fileno(self) -> int: ...


@contextmanager
def counting_fsyncs() -> Iterator[list[int]]:
    """Count `os.fsync` calls in the block (the count is `counter[0]`)."""
    counter = [0]
    real = os.fsync

    def fsync(fd: int | HasFileno) -> None:
        counter[0] += 1
        real(fd)

    os.fsync = fsync
    try:
        yield counter
    finally:
        os.fsync = real


@scenario("reconcile", "Reconcile a target of 1,000 skills")
async def reconcile_target(run: Run) -> Result:
    count = 20 if run.quick else 1_000
    drifted = max(1, count // 100)
    packages = {
        f"skill-{i:04d}": package(f"skill-{i:04d}", files=FILES, size=SIZE, tag=f"reconcile {i}")
        for i in range(count)
    }
    store = run.scratch / "store"
    database_url = await asyncio.to_thread(run.services.new_sqlite_database)
    async with run.services.backend(SQLITE_LOCAL, urls=(database_url, store.as_uri())) as backend:
        started = time.perf_counter()
        await seed_packages(backend.engine, store, SCOPE, packages, at=datetime.now(UTC) - AGE)
        seeding = time.perf_counter() - started
        fsck = await backend.registry.gc.fsck()
        if not fsck.clean or fsck.skills_checked != count:
            msg = f"the seeded registry is not clean: {fsck.problems[:3]}"
            raise AssertionError(msg)
        case = {"backend": SQLITE_LOCAL, "skills": count, "files": FILES, "file_size": SIZE}
        fill, target = await _fill(run, backend, packages, case)
        comparisons = [
            fill,
            await _no_drift(run, backend, target, case),
            await _verify(run, backend, target, packages, case),
            await _drift(run, backend, target, packages, case=case, drifted=drifted),
        ]
    return {"comparisons": comparisons, "seeding_seconds": seeding}


def _check(report: ReconcileReport, what: str, **expected: Any) -> None:
    found = {name: getattr(report, name) for name in expected}
    if not report.ok or found != expected:
        msg = f"reconcile ({what}): expected {expected}, found {found}; failed {report.failed}"
        raise AssertionError(msg)


async def _fill(
    run: Run, backend: Backend, packages: Packages, case: dict[str, Any]
) -> tuple[Result, Path]:
    subject: list[float] = []
    copy: list[float] = []
    durable: list[float] = []
    fsyncs: list[int] = []
    copy_fsyncs: list[int] = []
    durable_fsyncs: list[int] = []
    hashed: list[int] = []
    flat = {
        f"{slug}/{path}": data for slug, files in packages.items() for path, data in files.items()
    }
    target = run.scratch / "target"
    for rep in range(run.reps(2, 1)):
        if rep:
            # Each fill starts from an empty target (a new one: the registry keeps the
            # records of the last, which the other cases reconcile against).
            await asyncio.to_thread(shutil.rmtree, target)
        with counting_fsyncs() as counter:
            report = await time_async(subject, backend.registry.reconcile(SCOPE, target))
        fsyncs.append(counter[0])
        hashed.append(report.hashed)
        _check(report, "fill", written=sorted(packages), hashed=0)
        folder = run.scratch / f"copy-{rep}"
        with counting_fsyncs() as counter:
            copy.append(await asyncio.to_thread(naive_write, folder, flat))
        copy_fsyncs.append(counter[0])
        await asyncio.to_thread(shutil.rmtree, folder)
        folder = run.scratch / f"durable-copy-{rep}"
        with counting_fsyncs() as counter:
            durable.append(await asyncio.to_thread(durable_copy, folder, packages))
        durable_fsyncs.append(counter[0])
        await asyncio.to_thread(shutil.rmtree, folder)
    result = compare(
        {**case, "case": "fill"},
        subject,
        {"copy": copy, "durable copy": durable},
        fsyncs=fsyncs,
        copy_fsyncs=copy_fsyncs,
        durable_copy_fsyncs=durable_fsyncs,
        hashed=hashed,
    )
    return result, target


async def _no_drift(run: Run, backend: Backend, target: Path, case: dict[str, Any]) -> Result:
    subject: list[float] = []
    walk: list[float] = []
    hashed: list[int] = []
    for rep in range(run.reps(10, 2) + 1):
        sample: list[float] = []
        report = await time_async(sample, backend.registry.reconcile(SCOPE, target))
        _check(report, "no drift", hashed=0, written=[], repaired=[])
        walked = await asyncio.to_thread(_walk, target)
        if rep:
            subject += sample
            walk.append(walked)
            hashed.append(report.hashed)
    return compare({**case, "case": "no drift"}, subject, {"walk": walk}, hashed=hashed)


async def _verify(
    run: Run, backend: Backend, target: Path, packages: Packages, case: dict[str, Any]
) -> Result:
    subject: list[float] = []
    reference: list[float] = []
    hashed: list[int] = []
    every = len(packages) * FILES
    for rep in range(run.reps(5, 2) + 1):
        sample: list[float] = []
        report = await time_async(sample, backend.registry.reconcile(SCOPE, target, verify=True))
        _check(report, "verify", hashed=every, written=[], repaired=[])
        read = await asyncio.to_thread(_read_and_hash, target, packages)
        if rep:
            subject += sample
            reference.append(read)
            hashed.append(report.hashed)
    return compare({**case, "case": "verify"}, subject, {"read + hash": reference}, hashed=hashed)


async def _drift(
    run: Run,
    backend: Backend,
    target: Path,
    packages: Packages,
    *,
    case: dict[str, Any],
    drifted: int,
) -> Result:
    slugs = sorted(packages)
    subject: list[float] = []
    rewrite: list[float] = []
    walk: list[float] = []
    hashed: list[int] = []
    for rep in range(run.reps(5, 2) + 1):
        # A different 1% of the skills in each repetition.
        edited = [slugs[(rep * drifted + k) % len(slugs)] for k in range(drifted)]
        for slug in edited:
            path = target / slug / EDITED
            path.write_bytes(f"edited by hand {rep}\n".encode() + path.read_bytes())
        sample: list[float] = []
        report = await time_async(sample, backend.registry.reconcile(SCOPE, target))
        _check(report, "1% drift", repaired=sorted(edited), written=[])
        folder = run.scratch / f"rewrite-{rep}"
        files = {f"{slug}/{path}": data for slug in edited for path, data in packages[slug].items()}
        rewritten = await asyncio.to_thread(naive_write, folder, files)
        await asyncio.to_thread(shutil.rmtree, folder)
        walked = await asyncio.to_thread(_walk, target)
        if rep:
            subject += sample
            rewrite.append(rewritten)
            walk.append(walked)
            hashed.append(report.hashed)
    # Finding the drift means looking at every skill, so the floor is the walk of the whole
    # target plus the rewrite of the drifted skills, both from the same repetition.
    return compare(
        {**case, "case": "1% drift", "drifted": drifted},
        subject,
        {"rewrite": rewrite, "floor": [w + r for w, r in zip(walk, rewrite, strict=True)]},
        hashed=hashed,
    )


def _walk(root: Path) -> float:
    """Time `os.walk` of `root` with an `lstat` of every entry (seconds)."""
    started = time.perf_counter()
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lstat(os.path.join(folder, name))  # noqa: PTH118 - the floor: as cheap as it gets
    return time.perf_counter() - started


def _read_and_hash(target: Path, packages: Packages) -> float:
    """Time reading and hashing every file of the packages through the target (seconds)."""
    started = time.perf_counter()
    for slug, files in packages.items():
        for path in files:
            blake3((target / slug / path).read_bytes()).hexdigest()
    return time.perf_counter() - started
