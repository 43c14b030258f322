"""The cost of one write (issue 14): client CPU per write, and the statements it sends.

An update of an existing skill: a 10-file package of 4 KiB files, written with
compare-and-swap on the head (`expected_head` = the version the last write made) and with
sources given, on each database with a local blob store, in one process.

- **Client CPU per write.** `time.process_time()` over N writes in a row, after a warm-up,
  for two changes: one file changed (the concurrency scenario's write) and every file
  changed (ten blobs to hash, scan, claim and store). Process time counts every thread of
  the process: the event loop, the worker threads, and on SQLite the database engine
  itself, which runs in the driver's thread (on PostgreSQL the server's CPU is not
  counted). The reference, in the same round: the floor of the same change (the same blob
  puts and one empty transaction taking the workspace lock), its CPU measured the same way.
  The packages are built before the clock starts.
- **Statements per write, by phase.** A `before_cursor_execute` listener counts what one
  write sends, and failpoints name the phase it is in: `read` (the head and the scan cache,
  up to `write.checked`), `claim` (the claim transaction, up to `write.claimed`), `upload`
  (none expected), `publish` (the locked transaction, up to `publish.committed`). BEGIN
  (SQLite's `BEGIN` / `BEGIN IMMEDIATE` are statements the listener sees; psycopg sends
  PostgreSQL's itself) and COMMIT are counted apart, from the engine's `begin` and `commit`
  events, so both databases count them the same way. The timed writes run on a registry
  without these failpoints.

The figures before the work of issue 14 (revision `edges`) are constants below (`BEFORE`),
measured by the write path's owner with the same listener and found again by this counter
on that revision; the current revision's are measured in every run.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, stats
from bench.references import digests_of, empty_locked_transaction
from bench.services import PG_LOCAL, SQLITE_LOCAL, Backend
from registry.api import Registry
from registry.domain.model import Scope

SCOPE: Final = Scope("cost")
SLUG: Final = "cost"
FILES: Final = 10
SIZE: Final = 4 * KiB
SOURCES: Final = ("chat:bench",)
BACKENDS: Final = (SQLITE_LOCAL, PG_LOCAL)
ONE: Final = "one file changed"
EVERY: Final = "every file changed"
CHANGES: Final = (ONE, EVERY)
PHASES: Final = ("read", "claim", "upload", "publish")
_ONE_PATH: Final = "references/part-001.md"

# The failpoint at which each phase after `read` starts.
_PHASE_STARTS: Final = {
    "write.checked": "claim",
    "write.claimed": "upload",
    "write.uploaded": "publish",
    "publish.committed": "reply",
}
_TRANSACTION_CONTROL: Final = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"})

# Statements per write before the write-path work of issue 14: revision `edges` (0d05a1b),
# a 10-file package, sources given, an update of an existing skill, as the write path's
# owner measured it with a `before_cursor_execute` listener, and as this scenario's counter
# finds it on that revision (run against an export of it). `statements` excludes BEGIN and
# COMMIT; `transactions` counts BEGINs. The owner's totals (26 and 23) add the BEGINs the
# listener sees on SQLite (SQLAlchemy emits them there; psycopg sends PostgreSQL's itself),
# and put the claim's `BEGIN IMMEDIATE` in the read phase (it precedes `write.claiming`).
# The owner measured 19 and 17 on `cost` at bcc4bee (SQLite: 16 statements and 3 BEGINs);
# the scenario measures the current revision in every run.
BEFORE: Final = {
    "revision": "edges (0d05a1b)",
    "owner_totals": {SQLITE_LOCAL: 26, PG_LOCAL: 23},
    "phases": {
        SQLITE_LOCAL: {
            "read": {"statements": 4, "transactions": 2},
            "claim": {"statements": 3, "transactions": 1},
            "publish": {"statements": 15, "transactions": 1},
        },
        PG_LOCAL: {
            "read": {"statements": 4, "transactions": 2},
            "claim": {"statements": 3, "transactions": 1},
            "publish": {"statements": 16, "transactions": 1},
        },
    },
}


class PhaseCounter:
    """Failpoints that name a write's phase, and engine listeners that count per phase.

    `count(engine)` attaches the listeners for one write; `hit` moves the phase along at
    the failpoints in `_PHASE_STARTS`. Each phase counts its statements (BEGIN, COMMIT and
    ROLLBACK apart), its transactions (`begin` events, and each statement run as its own
    transaction), its commits and the first keyword of each statement.
    """

    def __init__(self) -> None:
        self.phase = "read"
        self.counted: dict[str, Counter[str]] = {}

    async def hit(self, name: str) -> None:
        self.phase = _PHASE_STARTS.get(name, self.phase)

    def _tally(self, key: str) -> None:
        self.counted.setdefault(self.phase, Counter())[key] += 1

    def _statement(self, *args: Any) -> None:
        keyword = str(args[2]).lstrip().split(None, 1)[0].upper()
        if keyword not in _TRANSACTION_CONTROL:
            self._tally("statements")
            self._tally(f"kind {keyword}")

    def _begin(self, _conn: Any) -> None:
        # Every transaction SQLAlchemy begins, a read of one statement in autocommit
        # (`UnitOfWork.read_one`) included.
        self._tally("transactions")

    def _commit(self, _conn: Any) -> None:
        self._tally("commits")

    @contextmanager
    def count(self, engine: AsyncEngine) -> Iterator[None]:
        """Count what `engine` is sent inside the block, from the `read` phase on."""
        self.phase, self.counted = "read", {}
        listeners = (
            ("before_cursor_execute", self._statement),
            ("begin", self._begin),
            ("commit", self._commit),
        )
        for name, function in listeners:
            sa.event.listen(engine.sync_engine, name, function)
        try:
            yield
        finally:
            for name, function in listeners:
                sa.event.remove(engine.sync_engine, name, function)

    def figures(self) -> dict[str, dict[str, Any]]:
        """Per phase: statements, transactions, commits and statement kinds."""
        out: dict[str, dict[str, Any]] = {}
        for phase, counts in self.counted.items():
            out[phase] = {
                "statements": counts["statements"],
                "transactions": counts["transactions"],
                "commits": counts["commits"],
                "kinds": {
                    key.removeprefix("kind "): n
                    for key, n in sorted(counts.items())
                    if key.startswith("kind ")
                },
            }
        return out


def _changes(
    head: Mapping[str, bytes], change: str, count: int, tag: str
) -> list[dict[str, bytes]]:
    """`count` packages, each differing from the one before in one file or in every file.

    Every package has the head's size: a write that grows the package also sends the
    workspace-usage query of the quota check, which a steady update does not.
    """
    out = []
    for n in range(count):
        if change == ONE:
            files = dict(head)
            old = head[_ONE_PATH]
            files[_ONE_PATH] = (f"{tag} {n}\n".encode() + old)[: len(old)]
        else:
            files = package(SLUG, files=FILES, size=SIZE, tag=f"{tag} {n}")
        out.append(files)
    return out


def _changed_blobs(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> dict[str, bytes]:
    """The floor's puts for a change: the files that differ, with content of their own."""
    return digests_of(
        {path: b"floor " + data for path, data in after.items() if before.get(path) != data}
    )


class _Writer:
    """Writes successive packages to one skill with compare-and-swap on its head."""

    def __init__(self, registry: Registry, head: int, files: dict[str, bytes]) -> None:
        self.registry = registry
        self.head = head
        self.files = files

    async def write(self, files: dict[str, bytes], registry: Registry | None = None) -> None:
        publication = await (registry or self.registry).write_package(
            SCOPE,
            SLUG,
            files,
            expected_head=self.head,
            actor="bench",
            sources=SOURCES,
        )
        assert publication.created, "every write of the cost scenario changes the package"
        self.head, self.files = publication.version, files


async def _cpu_round(
    writer: _Writer, backend: Backend, *, change: str, writes: int, tag: str
) -> tuple[float, float, float]:
    """CPU per write, wall time per write, and the floor's CPU per operation."""
    packages = _changes(writer.files, change, writes, tag)
    floors = [_changed_blobs(a, b) for a, b in itertools.pairwise([writer.files, *packages])]
    cpu, wall = time.process_time(), time.perf_counter()
    for files in packages:
        await writer.write(files)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    floor_cpu = time.process_time()
    for blobs in floors:
        await backend.store.put_many(
            blobs, concurrency=backend.registry.settings.upload_concurrency
        )
        await empty_locked_transaction(backend.engine, SCOPE.workspace)
    floor_cpu = time.process_time() - floor_cpu
    return cpu / writes, wall / writes, floor_cpu / writes


@scenario("cost", "Cost of one write: client CPU and statements")
async def cost(run: Run) -> Result:
    rounds = run.reps(7, 2)
    writes = run.reps(20, 3)
    comparisons = []
    statements: dict[str, dict[str, Any]] = {}
    for kind in BACKENDS:
        counter = PhaseCounter()
        async with run.services.backend(kind, failpoints=counter) as backend:
            # The timed writes go through a registry without failpoints; the counted ones
            # through the backend's, whose failpoints name the phase.
            timed = Registry(backend.engine, backend.store, backend.registry.settings)
            base = package(SLUG, files=FILES, size=SIZE, tag="base")
            first = await timed.write_package(
                SCOPE, SLUG, base, expected_head=None, actor="bench", sources=SOURCES
            )
            writer = _Writer(timed, first.version, base)
            samples: dict[str, dict[str, list[float]]] = {
                c: {"cpu": [], "wall": [], "floor": []} for c in CHANGES
            }
            for number in range(rounds + 1):
                # Alternate which change goes first, so neither always follows the other.
                for change in CHANGES if number % 2 else reversed(CHANGES):
                    cpu, wall, floor = await _cpu_round(
                        writer, backend, change=change, writes=writes, tag=f"{change} {number}"
                    )
                    if number == 0:
                        continue  # warm-up
                    samples[change]["cpu"].append(cpu)
                    samples[change]["wall"].append(wall)
                    samples[change]["floor"].append(floor)
            statements[kind] = {}
            for change in CHANGES:
                counts = []
                for n in range(run.reps(3, 2)):
                    files = _changes(writer.files, change, 1, f"{change} counted {n}")[0]
                    with counter.count(backend.engine):
                        await writer.write(files, backend.registry)
                    counts.append(counter.figures())
                statements[kind][change] = {
                    "phases": counts[-1],
                    "same_every_write": all(c == counts[-1] for c in counts),
                    "writes": len(counts),
                }
            comparisons += [
                compare(
                    {"backend": kind, "change": change, "files": FILES, "file_size": SIZE},
                    samples[change]["cpu"],
                    {"floor": samples[change]["floor"]},
                    unit="client CPU seconds per write",
                    wall=stats(samples[change]["wall"]),
                    writes_per_sample=writes,
                )
                for change in CHANGES
            ]
    return {
        "comparisons": comparisons,
        "statements": statements,
        "before": BEFORE,
        "sources": list(SOURCES),
    }
