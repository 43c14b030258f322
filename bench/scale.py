"""Scale: write and read latency with 10, 1,000 and 10,000 skills in a scope.

One database holds one workspace per level (`scale-10`, `scale-1000`, `scale-10000`), and
every repetition times the same operations in each workspace in turn, so the levels are
measured side by side and the reference of each figure is the smallest level's.

Seeding: one skill is published through the write path; the other skills of a workspace
are inserted in bulk with SQL (skills rows, and version rows pointing at that one shared
manifest): publishing 10,000 packages through the write path would take most of the time
budget and measure nothing this scenario is about. PostgreSQL then runs `ANALYZE`, as
autovacuum would after such a load, so its planner sees the real table sizes.

The write path's queries are captured during one update and one create in the largest
workspace (a `before_cursor_execute` listener) and explained (`EXPLAIN (FORMAT JSON)` on
PostgreSQL, `EXPLAIN QUERY PLAN` on SQLite); each is reported with the indexes it uses and
any full scan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.content import KiB, package
from bench.harness import Result, Run, compare, scenario, time_async
from bench.services import PG_LOCAL, SQLITE_LOCAL, Backend
from registry.db.tables import Skill, Version
from registry.domain.model import ANY, Scope

FILES = 10
SIZE = 4 * KiB
_SKIP = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE")


@scenario("scale", "Latency against the number of skills in a scope")
async def scale(run: Run) -> Result:
    levels = run.pick([10, 1_000, 10_000], [10, 200])
    comparisons: list[Result] = []
    plans: dict[str, list[Result]] = {}
    rows: dict[str, dict[str, int]] = {}
    for kind in (SQLITE_LOCAL, PG_LOCAL):
        async with run.services.backend(kind) as backend:
            for level in levels:
                await _seed(backend, Scope(f"scale-{level}"), level)
            if backend.engine.dialect.name == "postgresql":
                async with backend.engine.connect() as conn:
                    await conn.execute(sa.text("ANALYZE"))
                    await conn.commit()
            comparisons += await _measure(run, backend, levels)
            rows[kind] = await _table_rows(backend.engine)
            plans[kind] = await _explain_write_path(backend, Scope(f"scale-{levels[-1]}"))
    return {"comparisons": comparisons, "plans": plans, "table_rows": rows}


async def _seed(backend: Backend, scope: Scope, count: int) -> None:
    """`count` live skills in `scope`: `hot` through the write path, the rest in bulk."""
    registry = backend.registry
    await registry.write_package(
        scope,
        "hot",
        package("hot", files=FILES, size=SIZE, tag=str(scope)),
        expected_head=None,
        actor="bench",
    )
    info = await registry.package_info(scope, "hot")
    now = datetime.now(UTC)
    async with backend.engine.begin() as conn:
        manifest_id = await conn.scalar(
            sa.select(Version.manifest_id).where(
                Version.workspace == scope.workspace, Version.number == 1
            )
        )
        batch = 2000
        for start in range(1, count, batch):
            numbers = range(start, min(start + batch, count))
            slugs = [f"seeded-{n:05d}" for n in numbers]
            await conn.execute(
                sa.insert(Skill),
                [
                    {
                        "workspace": scope.workspace,
                        "agent": scope.agent,
                        "slug": slug,
                        "kind": "saved",
                        "head": 1,
                        "head_size": info.manifest.total_size,
                        "state": "active",
                        "auto_improve": True,
                        "learning_paused": False,
                        "use_paused": False,
                        "created_at": now,
                        "updated_at": now,
                    }
                    for slug in slugs
                ],
            )
            ids = (
                await conn.execute(
                    sa.select(Skill.id).where(
                        Skill.workspace == scope.workspace, Skill.slug.in_(slugs)
                    )
                )
            ).scalars()
            await conn.execute(
                sa.insert(Version),
                [
                    {
                        "workspace": scope.workspace,
                        "skill_id": skill_id,
                        "number": 1,
                        "parent": None,
                        "origin": "import",
                        "actor": "seed",
                        "message": "",
                        "restored_from": None,
                        "manifest_id": manifest_id,
                        "manifest_hash": info.manifest.hash,
                        "file_count": info.manifest.file_count,
                        "total_size": info.manifest.total_size,
                        "write_id": None,
                        "created_at": now,
                    }
                    for skill_id in ids
                ],
            )


OPERATIONS = ("update", "create", "read head", "package info", "list first page")


async def _measure(run: Run, backend: Backend, levels: list[int]) -> list[Result]:
    registry = backend.registry
    samples: dict[tuple[str, int], list[float]] = {
        (op, level): [] for op in OPERATIONS for level in levels
    }
    base = package("hot", files=FILES, size=SIZE, tag="update")
    for rep in range(run.reps(15, 2) + 1):
        # Each repetition starts at a different level, so no level always goes first.
        for level in levels[rep % len(levels) :] + levels[: rep % len(levels)]:
            scope = Scope(f"scale-{level}")
            files = dict(base)
            files["references/part-001.md"] = (
                f"rep {rep}\n".encode() + base["references/part-001.md"]
            )
            new_slug = f"new-{rep:03d}"
            new = package(new_slug, files=FILES, size=SIZE, tag=f"{level} {rep}")
            measured: dict[str, list[float]] = {op: [] for op in OPERATIONS}
            await time_async(
                measured["update"],
                registry.write_package(scope, "hot", files, expected_head=ANY, actor="bench"),
            )
            await time_async(
                measured["create"],
                registry.write_package(scope, new_slug, new, expected_head=None, actor="bench"),
            )
            await time_async(measured["read head"], registry.read_package(scope, "hot"))
            await time_async(measured["package info"], registry.package_info(scope, "hot"))
            await time_async(measured["list first page"], registry.list_skills(scope, limit=50))
            if rep:
                for op, values in measured.items():
                    samples[(op, level)] += values
    return [
        compare(
            {"backend": backend.name, "operation": op, "skills": level},
            samples[(op, level)],
            {f"{levels[0]} skills": samples[(op, levels[0])]},
        )
        for op in OPERATIONS
        for level in levels
    ]


# ---------------------------------------------------------------- EXPLAIN

_TABLES = ("skills", "versions", "manifests", "manifest_entries", "blobs", "blob_claims", "events")


async def _table_rows(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as conn:
        return {
            table: int(await conn.scalar(sa.text(f"SELECT count(*) FROM {table}")) or 0)  # noqa: S608
            for table in _TABLES
        }


def _first_set(parameters: Any, *, many: bool) -> Any:
    """One set of a statement's parameters, to explain it with.

    An executemany passes a sequence of sets; a batch of SQLAlchemy's "insertmanyvalues"
    (one multi-row INSERT) arrives flagged as many too, but with the batch's one flat set.
    """
    if many and isinstance(parameters, list | tuple) and parameters:
        first = parameters[0]
        if isinstance(first, Mapping | list | tuple):
            return first
    return parameters


@contextmanager
def _capture(engine: AsyncEngine) -> Iterator[list[tuple[str, Any]]]:
    captured: list[tuple[str, Any]] = []

    def listener(
        _conn: Any,
        _cursor: Any,
        statement: str,
        parameters: Any,
        _ctx: Any,
        many: bool,  # noqa: FBT001 - SQLAlchemy's event signature
    ) -> None:
        if statement.lstrip().upper().startswith(_SKIP):
            return
        captured.append((statement, _first_set(parameters, many=many)))

    sa.event.listen(engine.sync_engine, "before_cursor_execute", listener)
    try:
        yield captured
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", listener)


async def _explain_write_path(backend: Backend, scope: Scope) -> list[Result]:
    registry = backend.registry
    hot = package("hot", files=FILES, size=SIZE, tag="explain")
    fresh = package("explained", files=FILES, size=SIZE, tag="explain")
    with _capture(backend.engine) as captured:
        await registry.write_package(scope, "hot", hot, expected_head=ANY, actor="bench")
        await registry.write_package(scope, "explained", fresh, expected_head=None, actor="b")
    seen: set[str] = set()
    results = []
    postgres = backend.engine.dialect.name == "postgresql"
    async with backend.engine.connect() as conn:
        for statement, parameters in captured:
            if statement in seen:
                continue
            seen.add(statement)
            prefix = "EXPLAIN (FORMAT JSON) " if postgres else "EXPLAIN QUERY PLAN "
            rows = (await conn.exec_driver_sql(prefix + statement, parameters)).all()
            plan = _pg_plan(rows[0][0]) if postgres else _sqlite_plan(rows)
            if postgres:
                # Small tables are scanned whatever their indexes; with sequential scans
                # priced out, a scan that remains means no index can serve the query.
                await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
                forced = (await conn.exec_driver_sql(prefix + statement, parameters)).all()
                await conn.exec_driver_sql("SET LOCAL enable_seqscan = on")
                plan["without_seqscan"] = _pg_plan(forced[0][0])
                plan["indexable"] = not plan["without_seqscan"]["full_scans"]
            else:
                plan["indexable"] = not plan["full_scans"]
            results.append({"statement": " ".join(statement.split()), **plan})
        await conn.rollback()
    return results


def _pg_plan(document: Any) -> dict[str, Any]:
    nodes: list[str] = []
    indexes: list[str] = []
    full_scans: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        kind = node.get("Node Type", "?")
        relation = node.get("Relation Name")
        nodes.append(f"{kind} on {relation}" if relation else kind)
        if node.get("Index Name"):
            indexes.append(node["Index Name"])
        if kind == "Seq Scan" and relation:
            full_scans.append(relation)
        for child in node.get("Plans", []):
            walk(child)

    walk(document[0]["Plan"])
    return {"plan": nodes, "indexes": indexes, "full_scans": full_scans}


def _sqlite_plan(rows: Sequence[Any]) -> dict[str, Any]:
    details = [str(row[-1]) for row in rows]
    indexes = []
    full_scans = []
    # A scan of a co-routine (a CTE or a subquery SQLite materialises, such as the one row
    # the write context is built on, or an empty `IN` list) reads no table.
    coroutines = {d.split()[1] for d in details if d.startswith("CO-ROUTINE ")}
    for detail in details:
        words = detail.split()
        if "USING" in words and "INDEX" in words:
            indexes.append(words[words.index("INDEX") + 1])
        elif "PRIMARY KEY" in detail:
            indexes.append(f"{words[1]} primary key")
        elif (
            words[:1] == ["SCAN"]
            and len(words) > 1
            and "CONSTANT ROW" not in detail
            and words[1] not in coroutines
            and not words[1].startswith("(")
        ):
            full_scans.append(words[1])
    return {"plan": details, "indexes": indexes, "full_scans": full_scans}
