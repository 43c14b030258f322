"""Workers as processes: one killed mid-job, and four sharing one PostgreSQL queue.

A killed worker's job is taken again once its lease has expired (the test's worker runs
with a clock past the lease) and has exactly one effect, whichever step the worker died
at. Four worker processes on PostgreSQL, released together, run every job exactly once.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from registry import PackageFile, Registry, Scope
from registry.db.engine import create_engine
from tests.marketplace import worker_process
from tests.marketplace.support import (
    LISTING,
    ManualClock,
    events,
    job_rows,
    listing_files,
    publish_listing,
    versions,
)
from tests.support.scopes import ACME

ROOT = Path(__file__).resolve().parents[2]
LEASE = 600.0


def _worker(database_url, blob_url, *extra, stdin=None):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.marketplace.worker_process",
            "--database-url",
            database_url,
            "--blob-url",
            blob_url,
            "--lease",
            str(LEASE),
            *extra,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# The killed workers are forks of a server that imported the worker (and the registry) once;
# the four racing workers below are `python -m` processes of their own.
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["tests.marketplace.worker_process"])


async def _killed_worker(database_url, blob_url, point):
    process = _FORKSERVER.Process(
        target=worker_process.work_until_killed,
        args=(database_url, blob_url, "doomed", LEASE, point),
    )
    process.start()
    await asyncio.to_thread(process.join, 120)
    return process.exitcode


def _after_the_lease():
    return ManualClock(datetime.now(UTC) + timedelta(seconds=LEASE + 1))


async def _edited_copy(registry):
    await publish_listing(registry, 1)
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    files = listing_files()
    files["scripts/run.py"] = PackageFile(b"print('owner')\n", executable=True)
    await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    await publish_listing(registry, 2)
    return await registry.marketplace.enqueue_update(ACME, LISTING)


KILLS = [
    ("install", "job.running"),
    ("install", "publish.locked"),
    ("install", "job.effect_done"),
    ("update", "publish.before_commit"),
    ("update", "job.effect_done"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "point"), KILLS, ids=[f"{k}-{p}" for k, p in KILLS])
async def test_a_worker_killed_mid_job_is_replaced_after_its_lease_with_one_effect(
    make_registry, database_url, local_store, kind, point
):
    registry = await make_registry()
    if kind == "install":
        await publish_listing(registry)
        enqueued = await registry.marketplace.enqueue_install(ACME, LISTING)
        effect_origin = "marketplace_install"
    else:
        enqueued = await _edited_copy(registry)
        effect_origin = "marketplace_update"
    before = await versions(registry, ACME, LISTING)

    code = await _killed_worker(database_url, f"file://{local_store.root}", point)
    assert code == -signal.SIGKILL, f"the worker was not killed at {point}"

    dead = await registry.marketplace.job(enqueued.job.id)
    assert (dead.status, dead.lease_owner, dead.attempts) == ("running", "doomed", 1)
    committed = point == "job.effect_done"
    after_death = await versions(registry, ACME, LISTING)
    assert len(after_death) == len(before) + (1 if committed else 0)

    # The lease is live: nobody else takes the job yet.
    assert await registry.marketplace.worker().run_once() is None
    late = await make_registry(clock=_after_the_lease())
    outcome = await late.marketplace.worker().run_once()
    assert outcome is not None
    assert outcome.job.id == enqueued.job.id
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 2), outcome.job.last_error
    assert outcome.job.result.get("recovered", False) is committed

    after = await versions(registry, ACME, LISTING)
    assert after == [*before, (len(before) + 1, effect_origin)]
    published = [e for e in await events(registry, "acme") if e[0] == "published"]
    assert len(published) == len(after)


@pytest.mark.slow
@pytest.mark.postgres
async def test_four_worker_processes_on_postgresql_run_every_job_exactly_once(
    postgresql_url, local_store
):
    engine = create_engine(postgresql_url)
    try:
        await _four_workers(Registry(engine, local_store), postgresql_url, local_store)
    finally:
        await engine.dispose()


async def _four_workers(registry, postgresql_url, local_store):
    await publish_listing(registry)
    workspaces = [f"ws-{i:02d}" for i in range(24)]
    for workspace in workspaces:
        await registry.marketplace.enqueue_install(Scope(workspace), LISTING)

    workers = [
        _worker(
            postgresql_url,
            f"file://{local_store.root}",
            "--worker-id",
            f"w{i}",
            "--wait-for-go",
            stdin=subprocess.PIPE,
        )
        for i in range(4)
    ]
    for process in workers:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    ran = []
    for process in workers:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        ran.append(json.loads(out.strip().splitlines()[-1])["ran"])

    assert sum(ran) == len(workspaces)
    jobs = await job_rows(registry)
    assert [(j["status"], j["attempts"]) for j in jobs] == [("succeeded", 1)] * len(workspaces)
    async with registry.engine.connect() as conn:
        counts = (
            await conn.execute(
                sa.text(
                    "SELECT s.workspace, count(v.id) AS n FROM skills s "
                    "JOIN versions v ON v.skill_id = s.id WHERE s.workspace <> 'catalog' "
                    "GROUP BY s.workspace ORDER BY s.workspace"
                )
            )
        ).all()
        published = await conn.scalar(
            sa.text("SELECT count(*) FROM events WHERE workspace <> 'catalog'")
        )
    assert [(r.workspace, r.n) for r in counts] == [(w, 1) for w in workspaces]
    assert published == len(workspaces)
