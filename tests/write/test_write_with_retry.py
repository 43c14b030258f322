"""Retrying a compare-and-swap: every writer's change lands once, none is lost or overwritten."""

from __future__ import annotations

import asyncio

import pytest

from registry.errors import HeadConflict
from tests.support.packages import package, skill_md
from tests.support.scopes import ACME

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
