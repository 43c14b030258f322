"""Retrying a compare-and-swap: every writer's change lands once, none is lost or overwritten."""

from __future__ import annotations

import asyncio

import pytest

from registry.errors import HeadConflict
from tests.support.packages import package, skill_md
from tests.support.scopes import ACME
from tests.support.state import until_waiting_for_advisory_lock

SLUG = "hot-skill"


def _append(line: str):
    def change(current):
        files = (
            dict(package(SLUG, files=1))
            if current is None
            else {path: f.data for path, f in current.files.items()}
        )
        log = files.get("references/log.md", b"")
        files["references/log.md"] = log + line.encode() + b"\n"
        return files

    return change


async def test_concurrent_writers_each_apply_their_change_once(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    writers = [f"writer {i}" for i in range(8)]
    results = await asyncio.gather(
        *(registry.write_with_retry(ACME, SLUG, _append(w), actor=w, attempts=50) for w in writers)
    )
    assert sorted(r.version for r in results) == list(range(2, 10))
    head = await registry.read_package(ACME, SLUG)
    lines = head.files["references/log.md"].data.decode().splitlines()
    assert sorted(lines) == sorted(writers)


async def test_the_change_sees_no_skill_and_creates_it(registry):
    pub = await registry.write_with_retry(ACME, SLUG, _append("first"), actor="u")
    assert (pub.version, pub.created) == (1, True)


async def test_the_last_conflict_is_raised_after_the_attempts(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    moves = 0

    async def change(current):
        nonlocal moves
        # Another writer moves the head between this writer's read and its write.
        moves += 1
        files = {p: f.data for p, f in current.files.items()}
        files["SKILL.md"] = skill_md(SLUG, body=f"move {moves}")
        await registry.write_package(ACME, SLUG, files, expected_head=current.version, actor="o")
        return {**files, "references/mine.md": b"mine"}

    with pytest.raises(HeadConflict):
        await registry.write_with_retry(ACME, SLUG, change, actor="u", attempts=3)
    assert moves == 3


async def test_writers_of_one_process_take_turns_and_never_conflict(registry):
    # Eight tasks of one registry on one skill: each reads and writes in its turn, in the
    # order it asked, so each change is applied exactly once, on the head the one before
    # it made (without turns every task read version 1 and most had to retry).
    await registry.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    calls: list[tuple[str, int]] = []

    def recording(writer: str):
        apply = _append(writer)

        def change(current):
            calls.append((writer, current.version))
            return apply(current)

        return change

    writers = [f"writer {i}" for i in range(8)]
    results = await asyncio.gather(
        *(registry.write_with_retry(ACME, SLUG, recording(w), actor=w) for w in writers)
    )
    assert calls == [(w, version) for version, w in enumerate(writers, start=1)]
    assert [r.version for r in results] == list(range(2, 10))
    assert len(registry.ctx.turns) == 0  # every turn dropped once its writers are done


async def test_a_change_that_writes_its_own_skill_again_does_not_wait_for_itself(registry):
    # A `change` that calls write_with_retry on the same skill already holds the turn: it
    # must not wait for it (a deadlock); its own write then makes the outer attempt retry.
    await registry.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    inner_done = False

    async def change(current):
        nonlocal inner_done
        if not inner_done:
            inner_done = True
            await registry.write_with_retry(ACME, SLUG, _append("inner"), actor="inner")
        return _append("outer")(current)

    result = await asyncio.wait_for(
        registry.write_with_retry(ACME, SLUG, change, actor="outer"), timeout=30
    )
    assert result.version == 3
    head = await registry.read_package(ACME, SLUG)
    assert head.files["references/log.md"].data.decode().splitlines() == ["inner", "outer"]


async def test_a_cancelled_writer_gives_up_its_turn(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(current):
        entered.set()
        await release.wait()
        return _append("slow")(current)

    async def second():
        asked.set()
        # From here to waiting for the turn nothing suspends, so once `asked` wakes the
        # test this writer is queued behind the holder.
        return await registry.write_with_retry(ACME, SLUG, _append("w"), actor="w")

    asked = asyncio.Event()
    holder = asyncio.create_task(registry.write_with_retry(ACME, SLUG, slow, actor="slow"))
    await entered.wait()
    waiter = asyncio.create_task(second())
    await asked.wait()
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder
    assert (await asyncio.wait_for(waiter, timeout=30)).version == 2
    assert len(registry.ctx.turns) == 0


async def test_writers_of_two_processes_take_turns_on_postgresql(make_registry):
    # Two registries on one database, as two processes. On PostgreSQL the second waits for
    # the skill's turn among processes, so its change runs once, on the first's version;
    # SQLite has no such turns: the second goes ahead, and backoff resolves the conflict.
    first, second = await make_registry(), await make_registry()
    await first.write_package(ACME, SLUG, package(SLUG, files=1), expected_head=None, actor="u")
    reading, release, second_called = asyncio.Event(), asyncio.Event(), asyncio.Event()
    calls: dict[str, list[int]] = {"first": [], "second": []}

    async def slow(current):
        calls["first"].append(current.version)
        reading.set()
        await release.wait()
        return _append("first")(current)

    def quick(current):
        calls["second"].append(current.version)
        second_called.set()
        return _append("second")(current)

    postgres = first.engine.dialect.name == "postgresql"
    holder = asyncio.create_task(first.write_with_retry(ACME, SLUG, slow, actor="first"))
    await reading.wait()
    waiter = asyncio.create_task(second.write_with_retry(ACME, SLUG, quick, actor="second"))
    if postgres:
        await until_waiting_for_advisory_lock(first.engine)
    else:
        await asyncio.wait_for(second_called.wait(), 10)
    assert calls["second"] == ([] if postgres else [1])
    release.set()
    written = sorted(r.version for r in await asyncio.gather(holder, waiter))
    assert written == [2, 3]
    if postgres:
        assert calls == {"first": [1], "second": [2]}
    head = await first.read_package(ACME, SLUG)
    lines = head.files["references/log.md"].data.decode().splitlines()
    assert sorted(lines) == ["first", "second"]
