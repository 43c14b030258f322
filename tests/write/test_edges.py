"""Edges of the write path where the one-change promise broke (each test failed before its fix).

Races are driven by failpoints and barriers, never by sleeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from registry import Origin, Registry, Scope
from registry.db import budget as write_budget
from registry.db import heads as db_heads
from registry.db import publication as db_publication
from registry.db import skills as db_skills
from registry.db import unit
from registry.db.cancel import guarded
from registry.db.engine import write_connection
from registry.db.locks import lock_workspace
from registry.domain.retention import RetentionPolicy
from registry.errors import (
    HeadConflict,
    SkillNotFound,
    StorageUnavailable,
    VersionNotFound,
    WorkspaceBusy,
)
from registry.services.gc import retention
from registry.services.gc.collect import collect
from registry.services.gc.fsck import fsck
from registry.services.write import publish, settle
from registry.services.write.request import WriteRequest
from registry.settings import Settings
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import as_bytes, package
from tests.support.state import (
    db_state,
    live_claims,
    until_waiting_for_advisory_lock,
    waiting_for_advisory_lock,
)

ACME = Scope("acme")


class BarrierFailpoints:
    """Every writer waits at `name` until `parties` writers have arrived."""

    def __init__(self, name: str, parties: int) -> None:
        self.name = name
        self.barrier = asyncio.Barrier(parties)

    async def hit(self, name: str) -> None:
        if name == self.name:
            await self.barrier.wait()


async def test_two_writers_saving_the_same_package_leave_no_claims(make_registry):
    # Both writers claim and upload the same blobs; the second to take the lock finds its
    # package at the head ("unchanged") and must still release what it claimed.
    registry = await make_registry(failpoints=BarrierFailpoints("write.uploaded", 2))
    files = package("pdf-report")
    first, second = await asyncio.gather(
        registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="a"),
        registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="b"),
        return_exceptions=True,
    )
    outcomes = sorted([first, second], key=lambda p: getattr(p, "unchanged", True))
    assert outcomes[0].created, outcomes
    assert outcomes[1].unchanged, outcomes
    assert await live_claims(registry) == 0


# ---------------------------------------------------------------- 2: one lock budget per write


@asynccontextmanager
async def holding_workspace_lock(registry, workspace):
    """Another transaction holds the workspace's lock (SQLite: the database's write lock)."""
    async with registry.engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await lock_workspace(conn, workspace)
            yield


async def test_a_busy_workspace_fails_a_write_within_its_lock_timeout(make_registry, monkeypatch):
    # Before: every transaction of the write, and every retry of it, waited lock_timeout
    # again (about 4x here). Now the write waits lock_timeout for locks in all: one wait
    # runs to its end, and every transaction after it finds the budget spent and fails at
    # once. Counted, not timed: a lock wait that times out lasts at least its timeout, so
    # "one wait of at least half the timeout" cannot be met by waiting four times.
    settings = Settings(lock_timeout=1.0, sqlite_busy_timeout=1.0)
    registry = await make_registry(settings=settings)
    waits: list[float] = []
    charge = write_budget.Budget.charge_lock

    def recorded(self, waited):
        waits.append(waited)
        charge(self, waited)

    monkeypatch.setattr(write_budget.Budget, "charge_lock", recorded)
    async with holding_workspace_lock(registry, "acme"):
        with pytest.raises(WorkspaceBusy) as caught:
            await registry.write_package(
                ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
            )
    assert caught.value.timeout == 1.0
    assert len([w for w in waits if w >= 0.5]) == 1, waits
    # The claims were released in the background once the lock was free.
    assert await registry.ctx.cleanups.drain(10) == 0
    assert await live_claims(registry) == 0


async def test_a_lock_timeout_is_not_retried(make_registry, monkeypatch):
    settings = Settings(lock_timeout=0.2, sqlite_busy_timeout=0.2)
    failpoints = ScriptedFailpoints()
    registry = await make_registry(settings=settings, failpoints=failpoints)
    trace: list[str] = []
    failpoints.on_hit = trace.append

    def counted(work):
        trace.append("attempt")
        return guarded(work)

    # Every attempt at a transaction runs through `guarded` once.
    monkeypatch.setattr(unit, "guarded", counted)
    async with holding_workspace_lock(registry, "acme"):
        with pytest.raises(WorkspaceBusy):
            await registry.write_package(
                ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
            )
        # Counted before the background release of the claims gets to run.
        attempts = trace[trace.index("write.checked") :].count("attempt")
    # SQLite: one claim transaction, refused the database's lock. PostgreSQL: the claim
    # (no workspace lock) and one publish transaction, refused the workspace lock.
    assert attempts == (1 if registry.engine.dialect.name == "sqlite" else 2), trace
    assert await registry.ctx.cleanups.drain(10) == 0


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_write_cancelled_while_it_waits_for_the_lock_rolls_back_once_it_has_it(
    make_registry,
):
    # The lock and the write context go out together (psycopg's pipeline): the wait for
    # the lock is the wait for the pipeline's replies. Cancellation never cuts a statement
    # in flight (registry/db/cancel.py): the write keeps waiting, and once the holder lets
    # go it takes the lock, reads the context, and rolls back at its next safe point,
    # leaving nothing behind, the lock free and the connection usable.
    registry = await make_registry(settings=Settings(lock_timeout=30.0))
    files = package("pdf-report")
    async with holding_workspace_lock(registry, "acme"):
        task = asyncio.create_task(
            registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="u")
        )
        await until_waiting_for_advisory_lock(registry.engine)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation is delivered
        # Still waiting on the server: the statement is not cut.
        assert await waiting_for_advisory_lock(registry.engine)
        assert not task.done()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await registry.ctx.cleanups.drain(10) == 0
    assert await live_claims(registry) == 0
    with pytest.raises(SkillNotFound):
        await registry.package_info(ACME, "pdf-report")
    pub = await registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="u")
    assert (pub.version, pub.created) == (1, True)


# ---------------------------------------------------------------- 3: settlement under the lock


async def _parked_write(registry, failpoints, files, *, expected_head):
    park = failpoints.park("publish.before_commit")
    task = asyncio.create_task(
        registry.write_package(ACME, "pdf-report", files, expected_head=expected_head, actor="u")
    )
    await park.reached.wait()
    return task, park


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_settling_a_lost_reply_waits_for_a_commit_still_in_flight(make_registry, monkeypatch):
    # The settlement of a lost commit reply looks for the write's version. A commit still
    # finishing on the server is not visible to a plain read; under the workspace lock the
    # lookup waits for it. Here the "commit still finishing" is a write parked just before
    # its commit, holding the lock with every row written.
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    write_id = uuid.UUID("00000000-0000-4000-8000-000000000042")
    monkeypatch.setattr(publish.uuid, "uuid4", lambda: write_id)
    writer, park = await _parked_write(
        registry, failpoints, package("pdf-report", tag="new"), expected_head=1
    )
    request = WriteRequest(
        scope=ACME, slug="pdf-report", expected_head=1, origin=Origin.EDIT, actor="u"
    )
    settling = asyncio.create_task(settle.settle(registry.ctx, request, str(write_id)))
    while not settling.done() and not await waiting_for_advisory_lock(registry.engine):
        await asyncio.sleep(0.01)
    assert not settling.done(), "settlement answered while the commit was still in flight"
    park.release.set()
    written = await writer
    settled = await settling
    assert (settled.version, settled.created) == (written.version, True) == (2, True)


# ---------------------------------------------------------------- 4: cleanups are tracked


async def test_close_waits_for_the_cleanup_of_a_cancelled_write(make_registry, local_store):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    uploaded = failpoints.park("write.uploaded")
    releasing = failpoints.park("cleanup.releasing")
    writer = asyncio.create_task(
        registry.write_package(
            ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
        )
    )
    await uploaded.reached.wait()
    writer.cancel()
    uploaded.release.set()
    await releasing.reached.wait()
    # The cleanup runs in a task the registry holds (the loop keeps only a weak reference).
    assert len(registry.ctx.cleanups) == 1
    closing = asyncio.create_task(registry.close())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not closing.done(), "close() did not wait for the cleanup in flight"
    releasing.release.set()
    await closing
    with pytest.raises(asyncio.CancelledError):
        await writer
    assert len(registry.ctx.cleanups) == 0
    assert await live_claims(registry) == 0


# ---------------------------------------------------------------- 7: typed database failures


async def test_an_unreachable_database_is_storage_unavailable_naming_it_without_its_password():
    url = "postgresql+psycopg://someone:s3cret@127.0.0.1:1/nodb"
    with pytest.raises(StorageUnavailable) as caught:
        async with Registry.open(database_url=url, blob_url="memory://unreachable"):
            pass
    message = str(caught.value)
    assert caught.value.what == "database"
    assert "someone:***@127.0.0.1:1/nodb" in message
    assert "s3cret" not in message
    assert "sqlalche.me" not in message
    assert "\n" not in message


def test_the_cli_reports_an_unreachable_database_in_one_line(tmp_path):
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("skillreg")),
            "--database-url",
            "postgresql://someone:s3cret@127.0.0.1:1/nodb",
            "list",
            "-w",
            "acme",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 6  # configuration or connection
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "database unavailable" in lines[0]
    assert "someone:***@127.0.0.1:1/nodb" in lines[0]
    assert "s3cret" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


async def test_a_compare_and_swap_lost_under_the_lock_is_a_head_conflict(registry):
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", tag="2"), expected_head=1, actor="u"
    )

    async def stale_swap(conn):
        skill = await db_skills.live_skill(conn, ACME, "pdf-report")
        stale = dataclasses.replace(skill, head=1)
        await db_heads.swap(conn, stale, new_head=2, size=1, now=registry.ctx.clock.now())

    with pytest.raises(HeadConflict) as caught:
        await registry.ctx.write(stale_swap)
    assert (caught.value.expected, caught.value.current) == (1, 2)


# ---------------------------------------------------------------- 9: pool exhaustion is typed


@pytest.mark.parametrize(
    "database_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)
async def test_a_write_that_finds_no_free_connection_gets_a_typed_error(make_registry):
    # One connection in all, held by a writer parked inside its publish transaction: the
    # next write queues for it and, when the wait passes its limit, fails with a typed,
    # retryable error instead of SQLAlchemy's QueuePool TimeoutError.
    settings = Settings(db_pool_size=1, db_max_overflow=0, db_pool_timeout=0.5)
    failpoints = ScriptedFailpoints()
    registry = await make_registry(settings=settings, failpoints=failpoints)
    park = failpoints.park("publish.locked")
    holder = asyncio.create_task(
        registry.write_package(ACME, "first", package("first"), expected_head=None, actor="u")
    )
    await park.reached.wait()
    with pytest.raises(StorageUnavailable) as caught:
        await registry.write_package(
            ACME, "second", package("second"), expected_head=None, actor="u"
        )
    assert caught.value.what == "database"
    assert "no connection" in str(caught.value)
    park.release.set()
    assert (await holder).created


async def test_many_concurrent_writes_queue_for_connections_instead_of_failing(make_registry):
    settings = Settings(db_pool_size=2, db_max_overflow=0, db_pool_timeout=30.0)
    registry = await make_registry(settings=settings)
    slugs = [f"burst-{i:03d}" for i in range(60)]
    results = await asyncio.gather(
        *(
            registry.write_package(ACME, s, package(s, files=1), expected_head=None, actor="u")
            for s in slugs
        ),
        return_exceptions=True,
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert await live_claims(registry) == 0


# ---------------------------------------------------------------- 10, 11: reads and restores
# racing retention's prune


async def _two_versions(registry, slug="pdf-report"):
    await registry.write_package(
        ACME, slug, package(slug, tag="one"), expected_head=None, actor="u"
    )
    await registry.write_package(ACME, slug, package(slug, tag="two"), expected_head=1, actor="u")


async def _prune_to_head(registry):
    report = await retention.prune(registry.ctx, RetentionPolicy(keep_versions=1))
    assert [p.versions for p in report.skills] == [(1,)], report


async def test_a_pinned_read_racing_a_prune_sees_the_whole_version(make_registry):
    pruner = await make_registry()
    await _two_versions(pruner)
    failpoints = ScriptedFailpoints()
    reader = await make_registry(failpoints=failpoints)
    park = failpoints.park("read.located")
    reading = asyncio.create_task(reader.read_package(ACME, "pdf-report", version=1))
    await park.reached.wait()
    await _prune_to_head(pruner)
    park.release.set()
    # Before: the version row and its manifest rows came from two snapshots, and the read
    # returned an empty package (`files={}`, the hash of the empty manifest).
    read = await reading
    assert as_bytes(read.files) == as_bytes(package("pdf-report", tag="one"))
    assert read.manifest.file_count == len(read.files) > 0
    with pytest.raises(VersionNotFound):
        await reader.read_package(ACME, "pdf-report", version=1)


async def test_a_restore_racing_a_prune_is_version_not_found(make_registry):
    pruner = await make_registry()
    await _two_versions(pruner)
    failpoints = ScriptedFailpoints()
    owner = await make_registry(failpoints=failpoints)
    park = failpoints.park("read.located")
    restoring = asyncio.create_task(
        owner.restore(ACME, "pdf-report", 1, expected_head=2, actor="o")
    )
    await park.reached.wait()
    await _prune_to_head(pruner)
    park.release.set()
    # Before: a check-constraint violation on the manifest row (StorageUnavailable).
    with pytest.raises(VersionNotFound):
        await restoring
    assert (await owner.read_package(ACME, "pdf-report")).version == 2


def _outside_transactions(trace: list[str]) -> list[str]:
    """The failpoints a path hit before its publish transaction began.

    From `publish.begin` on, the path holds (SQLite) or is about to take (PostgreSQL) the
    workspace lock, which retention's prune waits for: its locked checks decide there.
    """
    return trace[: trace.index("publish.begin")] if "publish.begin" in trace else list(trace)


async def _traced(failpoints: ScriptedFailpoints, operation) -> list[str]:
    failpoints.trace.clear()
    await operation()
    return _outside_transactions(failpoints.trace)


async def _prune_and_collect(registry):
    await retention.prune(registry.ctx, RetentionPolicy(keep_versions=1))
    await collect(registry.ctx, grace=0)


async def test_a_restore_racing_a_prune_and_gc_is_version_not_found_at_every_step(
    make_registry,
):
    pruner = await make_registry()
    failpoints = ScriptedFailpoints()
    owner = await make_registry(failpoints=failpoints)
    await _two_versions(pruner, "dry-run")
    steps = await _traced(
        failpoints, lambda: owner.restore(ACME, "dry-run", 1, expected_head=2, actor="o")
    )
    assert {"read.located", "undo.head_read", "write.checked"} <= set(steps), steps
    for n, step in enumerate(steps):
        slug = f"pdf-report-{n}"
        await _two_versions(pruner, slug)
        park = failpoints.park(step)
        restoring = asyncio.create_task(owner.restore(ACME, slug, 1, expected_head=2, actor="o"))
        await park.reached.wait()
        await _prune_and_collect(pruner)
        park.release.set()
        # Before: at `read.located` and `undo.head_read`, "a referenced blob is unreadable
        # ... not found" (Inconsistency); at `write.checked`, "blobs this version
        # references are not stored; run skillreg fsck". Each on a registry fsck finds
        # consistent: the version was pruned, its blobs collected.
        with pytest.raises(VersionNotFound):
            await restoring
        with pytest.raises(VersionNotFound):
            await owner.restore(ACME, slug, 1, expected_head=2, actor="o")
        assert (await owner.package_info(ACME, slug)).version == 2, step
    report = await fsck(owner.ctx)
    assert report.clean, report.problems


async def test_a_delete_racing_a_write_a_prune_and_gc_is_a_head_conflict_at_every_step(
    make_registry,
):
    pruner = await make_registry()
    failpoints = ScriptedFailpoints()
    owner = await make_registry(failpoints=failpoints)
    await _two_versions(pruner, "dry-run")
    steps = await _traced(
        failpoints, lambda: owner.delete(ACME, "dry-run", actor="o", expected_head=2)
    )
    assert "undo.head_read" in steps, steps
    for n, step in enumerate(steps):
        slug = f"pdf-report-{n}"
        await _two_versions(pruner, slug)
        park = failpoints.park(step)
        deleting = asyncio.create_task(owner.delete(ACME, slug, actor="o", expected_head=2))
        await park.reached.wait()
        three = package(slug, tag="three")
        await pruner.write_package(ACME, slug, three, expected_head=2, actor="w")
        await _prune_and_collect(pruner)
        park.release.set()
        # Before: "a referenced blob is unreadable ... not found" (Inconsistency): the
        # delete read the files of the head it undoes (v2) after the write replaced it,
        # retention pruned it and GC collected its blobs.
        with pytest.raises(HeadConflict) as caught:
            await deleting
        assert (caught.value.expected, caught.value.current) == (2, 3), step
        assert (await owner.skill_status(ACME, slug)).head == 3  # not deleted
    report = await fsck(owner.ctx)
    assert report.clean, report.problems


async def test_an_online_fsck_racing_a_prune_reports_no_false_problem(make_registry):
    pruner = await make_registry()
    await _two_versions(pruner)
    failpoints = ScriptedFailpoints()
    checker = await make_registry(failpoints=failpoints)
    park = failpoints.park("fsck.manifests_read")
    checking = asyncio.create_task(fsck(checker.ctx))
    await park.reached.wait()
    await _prune_to_head(pruner)
    park.release.set()
    # Before: the manifest rows and their entries came from two snapshots, and fsck
    # reported `manifest_mismatch` for the manifest the prune removed.
    report = await checking
    assert report.clean, report.problems


async def test_a_head_lost_under_the_lock_rolls_back_the_version_appended_before_it(registry):
    # The version's rows go in before the head moves (`append.version`); a compare-and-swap
    # that then finds another head refuses, and the transaction, version row included,
    # rolls back.
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    await registry.write_package(
        ACME, "pdf-report", package("pdf-report", tag="2"), expected_head=1, actor="u"
    )
    before = await db_state(registry)
    info = await registry.package_info(ACME, "pdf-report")

    async def stale_append(conn):
        skill = await db_skills.live_skill(conn, ACME, "pdf-report")
        stale = dataclasses.replace(skill, head=1)
        now = registry.ctx.clock.now()
        manifest_id = await db_publication.ensure_manifest(conn, ACME.workspace, info.manifest, now)
        await db_publication.insert_version(
            conn,
            skill.id,
            ACME.workspace,
            number=3,
            parent=2,
            origin="edit",
            actor="u",
            principal="os:u",
            message="",
            restored_from=None,
            manifest_id=manifest_id,
            manifest=info.manifest,
            sources=["chat:1"],
            write_id="00000000-0000-4000-8000-00000000beef",
            now=now,
        )
        await db_heads.swap(conn, stale, new_head=2, size=1, now=now)

    with pytest.raises(HeadConflict) as caught:
        await registry.ctx.write(stale_append)
    assert (caught.value.expected, caught.value.current) == (1, 2)
    assert await db_state(registry) == before
