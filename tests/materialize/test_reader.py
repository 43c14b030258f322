"""A loader reading a skill continuously, in its own process, while it is swapped 200 times.

The loader resolves `<target>/<slug>` once per load, reads every file of the tree, and
checks the tree still has its `SKILL.md` (a retired tree loses `SKILL.md` first; a load
that finds it gone is retried, as a loader would). It checks every load it completes
against the published manifests and reports anything else: never a mix, never a partial
tree, never nothing. The writer waits after each swap until the loader has seen it, so
every one of the 200 packages is loaded while the next swaps run under the loader.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.materialize.conftest import publish
from tests.support.packages import package
from tests.support.scopes import ACME

SWAPS = 200
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.one_database  # files swapped under a reader: the database plays no part
async def test_a_reader_only_ever_sees_published_packages(registry, target):
    published: list[str] = []
    locks = []
    for i in range(4):
        pub = await publish(registry, "alpha", package("alpha", tag=f"v{i}", files=6))
        published.append(pub.manifest_hash)
        locks.append(await registry.lock_file(ACME))
    await registry.reconcile(ACME, target, lock=locks[0])

    loader = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.loader",
        str(target),
        "alpha",
        *published,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    lines: list[str] = []
    progress = asyncio.Condition()

    async def collect() -> None:
        assert loader.stdout is not None
        while line := await loader.stdout.readline():
            async with progress:
                lines.append(line.decode().strip())
                progress.notify_all()
        async with progress:
            lines.append("exited")  # the loader died: stop waiting for it
            progress.notify_all()

    async def loaded(manifest_hash: str) -> None:
        async with progress:
            await progress.wait_for(
                lambda: (
                    bool(lines) and lines[-1].split()[0] in (manifest_hash, "unexpected", "exited")
                )
            )
        assert lines[-1].split()[0] == manifest_hash, lines[-3:]

    collector = asyncio.create_task(collect())
    try:
        await loaded(published[0])
        for i in range(1, SWAPS + 1):
            version = i % len(locks)
            report = await registry.reconcile(ACME, target, lock=locks[version])
            assert report.written == ["alpha"]
            await loaded(published[version])
    finally:
        loader.kill()
        await loader.wait()
        await collector

    assert lines.pop() == "exited"
    assert not [line for line in lines if line.startswith("unexpected")]
    changes = [line.split() for line in lines]
    assert len(changes) == SWAPS + 1
    assert [h for h, _ in changes] == [published[i % len(locks)] for i in range(SWAPS + 1)]
    total_loads = int(changes[-1][1])
    assert total_loads > SWAPS
