"""The instruments of the cost and concurrency scenarios, on both databases.

The phase counter must see every statement a write sends and put it in a phase; the
concurrency writers must do what their mode says. Nothing here is timed, and no test pins
how many statements a write takes: that is the write path's to change, and the scenario's
to report.
"""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa

from bench.concurrency import CAS, CAS_RETRY, MODES, Writer, _base, _target
from bench.content import package
from bench.cost import EVERY, ONE, PHASES, SCOPE, SLUG, SOURCES, PhaseCounter, _changes, _Writer


async def test_the_phase_counter_puts_every_statement_of_a_write_in_a_phase(make_registry):
    counter = PhaseCounter()
    registry = await make_registry(failpoints=counter)
    base = package(SLUG, files=10, size=1024, tag="base")
    first = await registry.write_package(
        SCOPE, SLUG, base, expected_head=None, actor="t", sources=SOURCES
    )
    writer = _Writer(registry, first.version, base)
    seen: list[str] = []

    def listener(*args: Any) -> None:
        seen.append(str(args[2]).lstrip().split(None, 1)[0].upper())

    sa.event.listen(registry.engine.sync_engine, "before_cursor_execute", listener)
    try:
        for change in (ONE, EVERY):
            seen.clear()
            with counter.count(registry.engine):
                await writer.write(_changes(writer.files, change, 1, change)[0])
            figures = counter.figures()
            assert set(figures) <= set(PHASES)
            assert {"read", "claim", "publish"} <= set(figures)
            statements = [s for s in seen if s not in ("BEGIN", "COMMIT", "ROLLBACK")]
            assert sum(f["statements"] for f in figures.values()) == len(statements)
            assert sum(sum(f["kinds"].values()) for f in figures.values()) == len(statements)
            for phase in figures.values():
                assert phase["commits"] <= phase["transactions"]
            # One transaction each: the read, the claim, the publish.
            one_each = [figures[p]["transactions"] for p in ("read", "claim", "publish")]
            assert one_each == [1, 1, 1], figures
    finally:
        sa.event.remove(registry.engine.sync_engine, "before_cursor_execute", listener)
    # Outside `count`, nothing is counted.
    await writer.write(_changes(writer.files, ONE, 1, "after")[0])
    assert counter.figures() == figures


def test_the_changes_keep_the_package_size_and_differ_as_named():
    head = package(SLUG, files=10, size=4096, tag="base")
    size = sum(map(len, head.values()))
    for change, differing in ((ONE, 1), (EVERY, 10)):
        previous = head
        for files in _changes(head, change, 3, "t"):
            assert sum(map(len, files.values())) == size
            if change == ONE:
                previous = head
            assert sum(files[p] != previous[p] for p in files) == differing
            previous = files


async def test_every_concurrency_mode_writes_what_it_says(registry):
    writers = [Writer(i, registry) for i in range(2)]
    for scope, slug in {_target(mode, w.index) for mode in MODES for w in writers}:
        await registry.write_package(scope, slug, _base(slug), expected_head=None, actor="seed")
    for mode in MODES:
        tallies = await asyncio.gather(*(w.run(mode, 2) for w in writers))
        for tally in tallies:
            assert len(tally.latencies) == 2
            assert tally.gave_up == 0
            if mode not in (CAS, CAS_RETRY):
                assert tally.conflicts == 0
    heads = {
        (scope.workspace, slug): (await registry.package_info(scope, slug)).head
        for scope, slug in {_target(mode, w.index) for mode in MODES for w in writers}
    }
    # The hot skill took every write of SAME, CAS and CAS with retry: 3 modes x 2 writers
    # x 2 writes, after its first version. Each writer's own skills took 2 writes a mode.
    assert heads[("shared", "hot")] == 1 + 3 * 2 * 2
    for w in writers:
        assert heads[("shared", f"hot-{w.index}")] == 1 + 2  # DISTINCT_SKILLS
        assert heads[(f"writer-{w.index}", "hot")] == 1 + 2  # DISTINCT
