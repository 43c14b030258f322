"""The capacity and quota counters the triggers on `skills` keep, on both databases.

`scope_counts` and `workspace_usage` (migration 0010) must equal a count and a sum over
`skills` after any change of a skill, whatever code makes it; and the write path must read
them instead of aggregating the workspace's skills under its lock.
"""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from registry import Scope
from registry.db.engine import create_engine
from registry.db.migrate import alembic_config
from registry.db.tables import ScopeCount, Skill, WorkspaceUsage
from registry.errors import CapacityExceeded, QuotaExceeded
from registry.settings import Settings
from tests.support.packages import package, publish
from tests.support.rows import skill_row
from tests.support.scopes import ACME

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def _counters(conn: Any) -> tuple[dict[tuple[str, str, str], int], dict[str, int]]:
    counts = {
        (r.workspace, r.agent, r.kind): r.live_skills
        for r in await conn.execute(sa.select(ScopeCount))
        if r.live_skills
    }
    usage = {
        r.workspace: r.live_bytes
        for r in await conn.execute(sa.select(WorkspaceUsage))
        if r.live_bytes
    }
    return counts, usage


async def _recounted(conn: Any) -> tuple[dict[tuple[str, str, str], int], dict[str, int]]:
    live = Skill.state != "deleted"
    counts = {
        (r.workspace, r.agent, r.kind): r.n
        for r in await conn.execute(
            sa.select(Skill.workspace, Skill.agent, Skill.kind, sa.func.count().label("n"))
            .where(live)
            .group_by(Skill.workspace, Skill.agent, Skill.kind)
        )
    }
    usage = {
        r.workspace: r.n
        for r in await conn.execute(
            sa.select(Skill.workspace, sa.func.sum(Skill.head_size).label("n"))
            .where(live)
            .group_by(Skill.workspace)
        )
        if r.n
    }
    return counts, usage


_OPERATIONS = ("insert", "insert", "size", "size", "state", "kind", "scope", "delete")


async def test_the_counters_follow_every_change_of_a_skill_row(engine):
    """Random inserts, updates of each counted column, and deletes, checked after each."""
    rng = random.Random(20261203)
    ids: list[int] = []
    async with engine.begin() as conn:
        for step in range(160):
            op = rng.choice(
                ["insert", "insert", "size", "size", "state", "kind", "scope", "delete"]
            )
            if op == "insert" or not ids:
                row = skill_row(
                    f"s{step}",
                    now=NOW,
                    workspace=rng.choice(["w1", "w2"]),
                    agent=rng.choice(["a", "b"]),
                    kind=rng.choice(["saved", "installed"]),
                    head_size=rng.randrange(0, 5000),
                    state=rng.choice(["active", "active", "deleted"]),
                )
                ids.append(
                    (
                        await conn.execute(sa.insert(Skill).values(row).returning(Skill.id))
                    ).scalar_one()
                )
                continue
            skill_id = rng.choice(ids)
            change: dict[str, object] = {
                "size": {"head_size": rng.randrange(0, 5000)},
                "state": {"state": rng.choice(["active", "deleted"])},
                "kind": {"kind": rng.choice(["saved", "installed"])},
                "scope": {"agent": rng.choice(["a", "b"]), "head_size": rng.randrange(0, 50)},
            }.get(op, {})
            try:
                async with conn.begin_nested():
                    if op == "delete":
                        await conn.execute(sa.delete(Skill).where(Skill.id == skill_id))
                        ids.remove(skill_id)
                    else:
                        await conn.execute(
                            sa.update(Skill).where(Skill.id == skill_id).values(**change)
                        )
            except sa.exc.IntegrityError:
                # A live slug already taken in the new scope: refused, and counted as before.
                pass
            assert await _counters(conn) == await _recounted(conn), (step, op)
        # An update that changes no counted column leaves the counters alone.
        before = await _counters(conn)
        await conn.execute(sa.update(Skill).values(pause_reason="checked", updated_at=NOW))
        assert await _counters(conn) == before == await _recounted(conn)


async def test_the_write_path_keeps_the_counters_exact(registry):
    """Creates, updates that grow and shrink, a delete: through the public API."""
    await publish(registry, slug="one", files=package("one", files=2, size=300))
    await publish(registry, slug="two", files=package("two", files=3, size=100))
    await publish(registry, slug="one", files=package("one", files=4, size=900), expected=1)
    await publish(registry, slug="two", files=package("two", files=1, size=10), expected=1)
    await registry.delete(ACME, "two", actor="u1", expected_head=2)
    async with registry.ctx.uow.engine.connect() as conn:
        counts, usage = await _counters(conn)
        assert (counts, usage) == await _recounted(conn)
    assert counts == {("acme", ACME.agent, "saved"): 1}
    info = await registry.package_info(ACME, "one")
    assert usage == {"acme": info.manifest.total_size}


async def test_capacity_and_quota_read_the_counters(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=2, workspace_quota_bytes=4000))
    await publish(registry, slug="one", files=package("one", files=2, size=800))
    await publish(registry, slug="two", files=package("two", files=2, size=800))
    with pytest.raises(CapacityExceeded):
        await publish(registry, slug="three", files=package("three"))
    other = Scope("acme", "helper")
    with pytest.raises(QuotaExceeded) as caught:
        await registry.write_package(
            other, "big", package("big", files=2, size=1200), expected_head=None, actor="u1"
        )
    info = [await registry.package_info(ACME, s) for s in ("one", "two")]
    assert caught.value.used == sum(i.manifest.total_size for i in info)


async def _seed(engine: Any, workspace: str, count: int) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            sa.insert(Skill),
            [skill_row(f"seeded-{n}", now=NOW, workspace=workspace) for n in range(count)],
        )


async def _context_statement(registry: Any, workspace: str) -> tuple[str, Any]:
    """The write context statement of a new skill's write in `workspace`, as sent."""
    seen: list[tuple[str, Any]] = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):
        if "live_of_kind" in statement:
            seen.append((statement, parameters))

    sync_engine = registry.ctx.uow.engine.sync_engine
    sa.event.listen(sync_engine, "before_cursor_execute", capture)
    try:
        await registry.write_package(
            Scope(workspace),
            "fresh",
            package("fresh", files=2, size=2000),
            expected_head=None,
            actor="u1",
        )
    finally:
        sa.event.remove(sync_engine, "before_cursor_execute", capture)
    assert len(seen) == 1
    # Measured once the write has committed: for a slug that still has no skill, so that
    # the statement reads what a new skill's write reads.
    statement, parameters = seen[0]
    if isinstance(parameters, dict):
        return statement, {k: "absent" if v == "fresh" else v for k, v in parameters.items()}
    return statement, tuple("absent" if v == "fresh" else v for v in parameters)


async def _work(database_url: str, registry: Any, statement: str, parameters: Any) -> int:
    """Rows the statement's plan handled (PostgreSQL) or its VM steps (SQLite)."""
    if database_url.startswith("sqlite"):
        path = registry.ctx.uow.engine.url.database
        raw = sqlite3.connect(path)
        steps = 0

        def step() -> int:
            nonlocal steps
            steps += 1
            return 0

        try:
            raw.set_progress_handler(step, 1)
            raw.execute(statement, parameters).fetchall()
        finally:
            raw.close()
        return steps
    async with registry.ctx.uow.engine.connect() as conn:
        driver = (await conn.get_raw_connection()).driver_connection
        async with driver.cursor() as cursor:
            await cursor.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters, prepare=False
            )
            (plan,) = await cursor.fetchone()
        await conn.rollback()
    if isinstance(plan, str):
        plan = json.loads(plan)
    total = 0
    nodes = [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        total += int(node.get("Actual Rows", 0)) * int(node.get("Actual Loops", 1))
        nodes.extend(node.get("Plans", []))
    return total


async def test_a_new_skills_write_context_does_not_grow_with_the_workspace(
    database_url, make_registry
):
    """The capacity and quota figures are one row each, not an aggregate over skills.

    Before the counters, a new skill's write context counted the scope's skills and
    summed the workspace's head sizes under the lock: 400 more skills, 800 more rows.
    """
    registry = await make_registry(settings=Settings(capacity_saved=1_000_000))
    engine = registry.ctx.uow.engine
    await _seed(engine, "small", 3)
    await _seed(engine, "large", 403)
    small = await _work(database_url, registry, *await _context_statement(registry, "small"))
    large = await _work(database_url, registry, *await _context_statement(registry, "large"))
    assert large <= small + 10, (small, large)


def _migrate(connection: sa.Connection, direction: str, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, direction)(config, revision)


async def test_the_migration_counts_the_skills_a_database_already_holds(engine):
    """Down to 0009 (no counters), skills written there, up again: counted once, exactly."""
    async with engine.connect() as conn:
        await conn.run_sync(_migrate, "downgrade", "0009")
        await conn.commit()
    async with engine.begin() as conn:
        assert "workspace_usage" not in await conn.run_sync(
            lambda sync: sa.inspect(sync).get_table_names()
        )
        await conn.execute(
            sa.insert(Skill),
            [
                skill_row("a", now=NOW, workspace="w1", head_size=10),
                skill_row("b", now=NOW, workspace="w1", head_size=20, kind="installed"),
                skill_row("c", now=NOW, workspace="w1", head_size=40, state="deleted"),
                skill_row("d", now=NOW, workspace="w2", head_size=80, agent="helper"),
            ],
        )
    async with engine.connect() as conn:
        await conn.run_sync(_migrate, "upgrade", "head")
        await conn.commit()
    async with engine.begin() as conn:
        counted = await _counters(conn)
        assert counted == await _recounted(conn)
        assert counted == (
            {
                ("w1", "personal", "saved"): 1,
                ("w1", "personal", "installed"): 1,
                ("w2", "helper", "saved"): 1,
            },
            {"w1": 30, "w2": 80},
        )
        # and the triggers are back: a new skill is counted
        await conn.execute(sa.insert(Skill).values(skill_row("e", now=NOW, workspace="w2")))
        assert await _counters(conn) == await _recounted(conn)
