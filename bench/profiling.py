"""Profiles of the publish path (pyinstrument), reported as the frames that cost the most.

Three workloads on the embedded default (SQLite + local store):

- `small publishes`: 30 new packages of 10 files of 1 KiB, through `write_package`: the
  fixed cost of a write (queries, transactions, fsyncs, bookkeeping).
- `large publishes`: 3 new packages of 100 files of 64 KiB (6.25 MiB: hashing and the
  content check run in a worker thread above 256 KiB, which pyinstrument does not follow,
  so the next workload profiles that part directly).
- `CPU of a large package`: validation, hashing and the content check of 100 files of
  1 MiB, run synchronously: what the worker thread does for a large package.

It also counts the statements and transactions one create and one update of 10 files send
to the database (SQLite's BEGIN is a statement there; commits are counted by the engine's
`commit` event, which read-only transactions fire too).

Each reports the frames with the most self time, and the registry's own functions with the
most inclusive time (`[await]` frames are time spent waiting on I/O).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa

from bench.content import KiB, MiB, package
from bench.harness import Result, Run, scenario
from bench.services import SQLITE_LOCAL, Backend
from bench.write import SCOPE
from registry.domain.limits import Limits
from registry.domain.manifest import build_manifest
from registry.domain.package import validate_package
from registry.domain.scanner import DefaultScanner, raise_for

if TYPE_CHECKING:
    # pyinstrument comes with the `bench` extra: imported when a profile is taken (`_profiler`),
    # so that the harness and its tests load without it.
    from pyinstrument import Profiler
    from pyinstrument.frame import Frame

TOP = 15
_TRANSACTION_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"})
_OWN = ("registry/", "blobstore/")


@scenario("profile", "Profile of the publish path")
async def profile(run: Run) -> Result:
    workloads = []
    async with run.services.backend(SQLITE_LOCAL) as backend:
        registry = backend.registry

        def publishes(count: int, files: int, size: int, name: str) -> Callable[[], Awaitable[Any]]:
            packages = {
                f"{name}-{i}": package(f"{name}-{i}", files=files, size=size, tag=f"profile {i}")
                for i in range(count)
            }

            async def work() -> None:
                for slug, data in packages.items():
                    await registry.write_package(SCOPE, slug, data, expected_head=None, actor="p")

            return work

        await publishes(2, 10, KiB, "warm")()
        statements = await _count_statements(backend)
        small = run.reps(30, 3)
        workloads.append(
            await _profile_async(
                f"small publishes ({small} x 10 files of 1 KiB)",
                publishes(small, 10, KiB, "small"),
            )
        )
        large = run.reps(3, 1)
        workloads.append(
            await _profile_async(
                f"large publishes ({large} x 100 files of 64 KiB)",
                publishes(large, 100, 64 * KiB, "large"),
            )
        )
    files_count, size = run.pick([100, MiB], [10, MiB])
    raw = package("cpu", files=files_count, size=size, tag="cpu")
    limits = Limits(
        max_files=100,
        max_file_bytes=2 * MiB,
        max_package_bytes=128 * MiB,
        max_depth=8,
        max_segment_bytes=255,
    )
    scanner = DefaultScanner()

    def cpu() -> None:
        validated = validate_package(raw, "cpu", limits)
        build_manifest(validated.files)
        for path, file in validated.files.items():
            raise_for(scanner.scan(path, file.data))

    workloads.append(_profile_sync(f"CPU of a large package ({files_count} x 1 MiB)", cpu))
    return {"workloads": workloads, "statements": statements}


async def _count_statements(backend: Backend) -> dict[str, dict[str, int]]:
    """Statements and transactions a create and an update of 10 files send to the database."""
    sent: list[str] = []

    def listener(*args: Any) -> None:
        sent.append(str(args[2]).lstrip().split(None, 1)[0].upper())

    def committed(*_args: Any) -> None:
        sent.append("COMMIT")

    engine = backend.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", listener)
    sa.event.listen(engine, "commit", committed)
    out = {}
    try:
        registry = backend.registry
        for name, expected in (("create", None), ("update", 1)):
            sent.clear()
            files = package("counted", files=10, size=KiB, tag=name)
            await registry.write_package(SCOPE, "counted", files, expected_head=expected, actor="p")
            out[name] = {
                "statements": sum(1 for s in sent if s not in _TRANSACTION_CONTROL),
                "transactions": sent.count("BEGIN"),
                "commits": sent.count("COMMIT"),
            }
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)
        sa.event.remove(engine, "commit", committed)
    return out


def _profiler(async_mode: Literal["enabled", "disabled"]) -> Profiler:
    from pyinstrument import Profiler  # noqa: PLC0415 - the `bench` extra (see above)

    return Profiler(interval=0.0005, async_mode=async_mode)


async def _profile_async(name: str, work: Callable[[], Awaitable[Any]]) -> Result:
    profiler = _profiler("enabled")
    started = time.perf_counter()
    profiler.start()
    await work()
    profiler.stop()
    return _summary(name, profiler, time.perf_counter() - started)


def _profile_sync(name: str, work: Callable[[], None]) -> Result:
    profiler = _profiler("disabled")
    started = time.perf_counter()
    profiler.start()
    work()
    profiler.stop()
    return _summary(name, profiler, time.perf_counter() - started)


def _label(frame: Frame, parent: str) -> str:
    if frame.is_synthetic:
        # `[self]` (time in the parent itself) and `[await]` (waiting in the parent).
        return f"{frame.function} in {parent}"
    where = f"{frame.file_path_short}:{frame.line_no}" if frame.file_path_short else ""
    return f"{frame.function} ({where})" if where else str(frame.function)


def _summary(name: str, profiler: Profiler, wall: float) -> Result:
    session = profiler.last_session
    assert session is not None
    root = session.root_frame()
    self_time: dict[str, float] = defaultdict(float)
    inclusive: dict[str, float] = defaultdict(float)

    def walk(frame: Frame, on_stack: frozenset[str], parent: str) -> None:
        label = _label(frame, parent)
        children = frame.children
        self_time[label] += max(frame.time - sum(c.time for c in children), 0.0)
        path = frame.file_path or ""
        own = any(part in path for part in _OWN) and "/.venv/" not in path
        if own and label not in on_stack:
            inclusive[label] += frame.time
        for child in children:
            walk(child, on_stack | {label}, label)

    if root is not None:
        walk(root, frozenset(), "")
    total = root.time if root is not None else 0.0

    def top(table: dict[str, float]) -> list[dict[str, Any]]:
        ranked = sorted(table.items(), key=lambda item: item[1], reverse=True)[:TOP]
        return [
            {"frame": label, "seconds": seconds, "share": seconds / total if total else 0.0}
            for label, seconds in ranked
        ]

    return {
        "name": name,
        "wall": wall,
        "sampled": total,
        "top_self": top(self_time),
        "top_registry_inclusive": top(inclusive),
    }
