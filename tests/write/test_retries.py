"""Transient database errors are retried where the step is idempotent; a held lock times out."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry import Scope
from registry.db.engine import write_connection
from registry.db.locks import lock_workspace
from registry.errors import StorageUnavailable, WorkspaceBusy
from registry.settings import Settings
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import live_claims


def transient() -> sa.exc.DBAPIError:
    return sa.exc.DBAPIError(
        "SELECT 1", {}, ConnectionResetError("connection reset"), connection_invalidated=True
    )


@pytest.mark.parametrize(
    "point", ["publish.locked", "publish.version_rows", "publish.before_commit"]
)
async def test_a_transient_error_before_the_commit_is_retried(make_registry, point):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    failpoints.fail(point, nth=1, error=transient())
    files = package("pdf-report")
    pub = await registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="u")
    assert pub.version == 1
    assert failpoints.hits["publish.begin"] == 2
    assert as_bytes((await registry.read_package(ACME, "pdf-report")).files) == as_bytes(files)
    assert await live_claims(registry) == 0


async def test_a_transient_error_in_the_claim_transaction_is_retried(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    failpoints.fail("write.claiming", nth=1, error=transient())
    pub = await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    assert pub.version == 1
    assert failpoints.hits["write.claiming"] == 2
    assert await live_claims(registry) == 0


async def test_transient_errors_that_persist_end_as_storage_unavailable(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints, settings=Settings(retry_attempts=3))
    for attempt in (1, 2, 3):
        failpoints.fail("publish.locked", nth=attempt, error=transient())
    with pytest.raises(StorageUnavailable):
        await registry.write_package(
            ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
        )
    assert failpoints.hits["publish.locked"] == 3
    assert await live_claims(registry) == 0


async def test_a_held_workspace_lock_times_out_as_workspace_busy(make_registry, database_url):
    settings = Settings(lock_timeout=0.2, sqlite_busy_timeout=0.2, retry_attempts=2)
    registry = await make_registry(settings=settings)
    holder = await make_registry(settings=settings)
    async with holder.engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await lock_workspace(conn, "acme")
            if conn.dialect.name == "sqlite":
                # BEGIN IMMEDIATE is only sent with the first statement.
                await conn.execute(sa.text("SELECT 1"))
            with pytest.raises(WorkspaceBusy) as caught:
                await registry.write_package(
                    ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
                )
    assert caught.value.workspace == "acme"
    # The busy write's claims are released in the background, once the lock is free.
    assert await registry.ctx.cleanups.drain(10) == 0
    assert await live_claims(registry) == 0
    pub = await registry.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    assert pub.version == 1


async def test_a_held_lock_blocks_only_its_workspace_on_postgresql(make_registry, database_url):
    """PostgreSQL locks per workspace; SQLite has one write lock for the whole database."""
    settings = Settings(lock_timeout=0.2, sqlite_busy_timeout=0.2, retry_attempts=1)
    registry = await make_registry(settings=settings)
    holder = await make_registry(settings=settings)
    other = Scope("globex")
    async with holder.engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await lock_workspace(conn, "acme")
            await conn.execute(sa.text("SELECT 1"))
            if conn.dialect.name == "postgresql":
                pub = await registry.write_package(
                    other, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
                )
                assert pub.version == 1
            else:
                with pytest.raises(WorkspaceBusy):
                    await registry.write_package(
                        other, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
                    )
