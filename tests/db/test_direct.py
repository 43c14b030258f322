"""Statements run on the driver directly (registry/db/direct.py), on both databases.

Each case runs one statement both ways, through `direct.run` and through SQLAlchemy's
`Connection.execute`, on the same migrated schema, and compares rows and stored values: the
types' processors (aware timestamps, booleans, JSON), expanding parameters, bound literals,
multi-row inserts, an update's columns taken from its parameters, errors, a lost
connection, and the fallbacks.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from registry.db import compiled as compiled_module
from registry.db import direct
from registry.db import errors as db_errors
from registry.db.cancel import TransactionCancelled, guarded
from registry.db.engine import create_engine
from registry.db.tables import Blob, BlobClaim, Event, Skill
from registry.db.tables.base import UtcDateTime
from tests.support.roundtrips import RoundTrips
from tests.support.rows import skill_row

NOW = datetime(2026, 12, 2, 3, 4, 5, 678901, tzinfo=UTC)

_SKILL = sa.insert(Skill).returning(Skill.id, Skill.created_at, Skill.auto_improve)
_CLAIMS = sa.insert(BlobClaim)
_BLOBS = sa.insert(Blob)
_TAKE = (
    sa.delete(BlobClaim)
    .where(BlobClaim.write_id == sa.bindparam("write_id"))
    .returning(BlobClaim.digest, BlobClaim.expires_at)
)
_STATUSES = (
    sa.select(Blob.digest, Blob.status)
    .where(Blob.digest.in_(sa.bindparam("digests", expanding=True)), Blob.status != "deleting")
    .order_by(Blob.digest)
)
_OTHERS = (
    sa.select(Blob.digest)
    .where(Blob.digest.not_in(sa.bindparam("digests", expanding=True)))
    .order_by(Blob.digest)
)
_DELETE_BLOBS = sa.delete(Blob).where(Blob.digest.in_(sa.bindparam("digests", expanding=True)))
_MOVE = sa.update(Skill).where(Skill.id == sa.bindparam("skill_id"))
_EVENT = sa.insert(Event)
_EVENTS = sa.select(Event.kind, Event.payload, Event.created_at).order_by(Event.id)


def _skill(slug: str, *, auto_improve: bool = True) -> dict[str, object]:
    return skill_row(slug, now=NOW, head_size=10, auto_improve=auto_improve)


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


class _Executions:
    """Counts SQLAlchemy executions (`before_execute`) and cursor executions."""

    def __init__(self, engine) -> None:
        self.engine = engine.sync_engine
        self.sqlalchemy = 0
        self.cursor: list[str] = []

    def _execute(self, *_args) -> None:
        self.sqlalchemy += 1

    def _cursor(self, _conn, _cursor, statement, *_args) -> None:
        self.cursor.append(statement.split(maxsplit=1)[0])

    def __enter__(self):
        sa.event.listen(self.engine, "before_execute", self._execute)
        sa.event.listen(self.engine, "before_cursor_execute", self._cursor)
        return self

    def __exit__(self, *_exc) -> None:
        sa.event.remove(self.engine, "before_execute", self._execute)
        sa.event.remove(self.engine, "before_cursor_execute", self._cursor)


async def test_rows_and_types_match_sqlalchemys_execution(engine):
    async with engine.begin() as conn:
        with _Executions(engine) as seen:
            made = await direct.run(conn, _SKILL, _skill("a", auto_improve=False))
        # Run directly: the cursor event fired, SQLAlchemy's execution did not.
        assert (seen.sqlalchemy, seen.cursor) == (0, ["INSERT"])
        reference = (await conn.execute(_SKILL, _skill("b"))).one()
        row = made.one()
        assert row.created_at == NOW == reference.created_at
        assert row.created_at.tzinfo is not None
        assert row.auto_improve is False
        assert reference.auto_improve is True
        assert row.id == reference.id - 1
        assert made.scalar() == row.id
        # What was stored reads back the same through SQLAlchemy.
        stored = await conn.execute(
            sa.select(Skill.created_at, Skill.auto_improve).order_by(Skill.id)
        )
        assert stored.all() == [(NOW, False), (NOW, True)]
        # Stored as the same text, not only read back as the same value.
        text = sa.text("SELECT CAST(created_at AS TEXT), auto_improve FROM skills ORDER BY id")
        first, second = (await conn.execute(text)).all()
        assert first[0] == second[0]
        assert "2026-12-02 03:04:05.678901" in first[0]
        assert (bool(first[1]), bool(second[1])) == (False, True)


async def test_multi_row_inserts_expanding_lists_and_deletes_returning(engine):
    digests = [f"{i:064x}" for i in range(5)]
    async with engine.begin() as conn:
        blobs = [
            {"digest": d, "size": 1, "status": s, "created_at": NOW, "touched_at": NOW}
            for d, s in zip(digests, ["live", "pending", "deleting", "live", "live"], strict=True)
        ]
        inserted = await direct.run(conn, _BLOBS, blobs)
        assert inserted.rowcount == 5
        assert inserted.rows == []
        claims = [
            {
                "write_id": "w1",
                "digest": d,
                "workspace": "w",
                "created_at": NOW,
                "expires_at": NOW + timedelta(minutes=i),
            }
            for i, d in enumerate(digests[:3])
        ]
        await direct.run(conn, _CLAIMS, claims)
        wanted = {"digests": [digests[4], digests[0], digests[2], digests[1]]}
        statuses = await direct.run(conn, _STATUSES, wanted)
        reference = await conn.execute(_STATUSES, wanted)
        # The bound literal ('deleting') and the expanding list both applied.
        assert [tuple(r) for r in statuses] == [tuple(r) for r in reference]
        assert [r.digest for r in statuses] == [digests[0], digests[1], digests[4]]
        taken = await direct.run(conn, _TAKE, {"write_id": "w1"})
        assert sorted((r.digest, r.expires_at) for r in taken) == [
            (d, NOW + timedelta(minutes=i)) for i, d in enumerate(digests[:3])
        ]
        assert taken.rowcount == 3
        assert (await direct.run(conn, _TAKE, {"write_id": "w1"})).rows == []


async def test_an_updates_columns_are_its_parameters_keys(engine):
    async with engine.begin() as conn:
        skill_id = (await direct.run(conn, _SKILL, _skill("a"))).scalar()
        later = NOW + timedelta(seconds=1)
        moved = await direct.run(
            conn, _MOVE, {"skill_id": skill_id, "head": 2, "updated_at": later}
        )
        assert moved.rowcount == 1
        flipped = await direct.run(conn, _MOVE, {"skill_id": skill_id, "auto_improve": False})
        assert flipped.rowcount == 1
        none = await direct.run(conn, _MOVE, {"skill_id": skill_id + 1, "head": 9})
        assert none.rowcount == 0
        row = (
            await conn.execute(sa.select(Skill.head, Skill.updated_at, Skill.auto_improve))
        ).one()
        assert tuple(row) == (2, later, False)


async def test_json_parameters_are_serialised_by_their_type(engine):
    event = {
        "workspace": "w",
        "agent": "personal",
        "slug": "a",
        "skill_id": None,
        "kind": "version.created",
        "version": 1,
        "manifest_hash": "h",
        "payload": {"files": 3, "sources": ["chat:1"], "note": "é"},
        "created_at": NOW,
    }
    async with engine.begin() as conn:
        await direct.run(conn, _EVENT, event)
        await conn.execute(_EVENT, event)
        rows = (await conn.execute(_EVENTS)).all()
        assert rows[0] == rows[1] == ("version.created", event["payload"], NOW)


async def test_driver_errors_are_sqlalchemys(engine):
    async with engine.begin() as conn:
        await direct.run(conn, _SKILL, _skill("a"))
        with pytest.raises(sa.exc.IntegrityError) as caught:
            await direct.run(conn, _SKILL, _skill("a"))
        assert isinstance(caught.value.orig, sqlite3.IntegrityError | psycopg.IntegrityError)
        assert "INSERT INTO skills" in str(caught.value.statement)


async def test_statements_run_together_in_order_in_one_round_trip_on_postgresql(engine):
    async with engine.begin() as conn:
        with RoundTrips(engine) as seen, _Executions(engine) as executions:
            made, counted, empty = await direct.run_together(
                conn,
                [
                    direct.Query(_SKILL, _skill("a", auto_improve=False)),
                    # Runs after the insert before it, in the same transaction.
                    direct.Query(sa.select(sa.func.count().label("n")).select_from(Skill), {}),
                    direct.Query(_STATUSES, {"digests": []}),
                ],
            )
        assert executions.sqlalchemy == 0
        expected = [["INSERT", "SELECT", "SELECT"]]
        if engine.dialect.name != "postgresql":
            expected = [["INSERT"], ["SELECT"], ["SELECT"]]
        assert seen.trips == expected
        row = made.one()
        assert (row.created_at, row.auto_improve) == (NOW, False)
        assert counted.scalar() == 1
        assert empty.rows == []
        # The connection is usable as before, through either path.
        again = await direct.run(conn, sa.select(sa.func.count().label("n")).select_from(Skill))
        assert again.scalar() == 1
        assert await conn.scalar(sa.select(Skill.slug)) == "a"


async def test_an_error_in_statements_run_together_is_sqlalchemys_and_stops_the_rest(engine):
    async with engine.connect() as conn:
        await conn.begin()
        await direct.run(conn, _SKILL, _skill("a"))
        with pytest.raises(sa.exc.IntegrityError) as caught:
            await direct.run_together(
                conn,
                [
                    direct.Query(_SKILL, _skill("a")),
                    direct.Query(_SKILL, _skill("b")),
                ],
            )
        assert isinstance(caught.value.orig, sqlite3.IntegrityError | psycopg.IntegrityError)
        assert "INSERT INTO skills" in str(caught.value.statement)
        await conn.rollback()
        async with conn.begin():
            await direct.run_together(conn, [direct.Query(_SKILL, _skill("b"))])
        slugs = await conn.scalars(sa.select(Skill.slug))
        assert list(slugs) == ["b"]


async def test_several_rows_with_returning_match_sqlalchemys_rows(engine):
    # SQLite runs the statement once per row in one driver call; PostgreSQL, where each
    # would be a round trip, leaves them to SQLAlchemy's batching. The rows are the same.
    upsert = {"sqlite": sqlite_insert, "postgresql": postgresql_insert}[engine.dialect.name]
    statement = (
        upsert(Blob)
        .on_conflict_do_update(index_elements=[Blob.digest], set_={"size": 9})
        .returning(Blob.digest, Blob.size, Blob.created_at)
    )

    def blobs(*numbers: int) -> list[dict[str, object]]:
        return [
            {
                "digest": f"{i:064x}",
                "size": i,
                "status": "live",
                "created_at": NOW,
                "touched_at": NOW,
            }
            for i in numbers
        ]

    async with engine.begin() as conn:
        await conn.execute(sa.insert(Blob), blobs(0, 10))  # one row of each batch conflicts
        with _Executions(engine) as seen:
            direct_rows = await direct.run(conn, statement, blobs(2, 0, 1))
        assert seen.sqlalchemy == (0 if engine.dialect.name == "sqlite" else 1)
        reference = (await conn.execute(statement, blobs(12, 10, 11))).all()
        assert [(int(r.digest, 16), r.size, r.created_at) for r in direct_rows] == [
            (2, 2, NOW),
            (0, 9, NOW),
            (1, 1, NOW),
        ]
        assert [(int(r.digest, 16) - 10, r.size) for r in reference] == [(2, 12), (0, 9), (1, 11)]


async def test_an_empty_expanding_list_is_the_dialects_empty_set(engine):
    # A write with no sources checks its exclusions with an empty list: it must run
    # directly, and find what SQLAlchemy's rendering of an empty IN / NOT IN finds.
    digests = [f"{i:064x}" for i in range(3)]
    async with engine.begin() as conn:
        await direct.run(
            conn,
            _BLOBS,
            [
                {"digest": d, "size": 1, "status": "live", "created_at": NOW, "touched_at": NOW}
                for d in digests
            ],
        )
        with _Executions(engine) as seen:
            found = await direct.run(conn, _STATUSES, {"digests": []})
            others = await direct.run(conn, _OTHERS, {"digests": []})
            some = await direct.run(conn, _OTHERS, {"digests": digests[:1]})
        assert (seen.sqlalchemy, seen.cursor) == (0, ["SELECT"] * 3)
        assert found.rows == []
        assert [r.digest for r in others] == digests
        assert [r.digest for r in some] == digests[1:]
        for statement in (_STATUSES, _OTHERS):
            reference = await conn.execute(statement, {"digests": []})
            again = await direct.run(conn, statement, {"digests": []})
            assert [tuple(r) for r in again] == [tuple(r) for r in reference]


async def test_what_it_cannot_run_directly_goes_through_sqlalchemy(engine):
    with _Executions(engine) as seen:
        # No transaction open: SQLAlchemy's execution begins one, as it would.
        async with engine.connect() as conn:
            assert (await direct.run(conn, _STATUSES, {"digests": ["x"]})).rows == []
            assert conn.in_transaction()
            await conn.rollback()
        assert seen.sqlalchemy == 1
        async with engine.begin() as conn:
            # Expanding lists in an executemany: refused, as SQLAlchemy refuses them.
            rows = [{"digests": ["x"]}, {"digests": ["y"]}]
            with pytest.raises(sa.exc.StatementError, match="executemany"):
                await direct.run(conn, _DELETE_BLOBS, rows)
        assert seen.sqlalchemy == 2


async def test_a_cancelled_transaction_sends_nothing_more(engine):
    # The engine's cancellation check is a cursor event listener; it runs here too.
    async def work() -> None:
        async with engine.begin() as conn:
            await direct.run(conn, _SKILL, _skill("a"))
            cancelled.set()
            await proceed.wait()
            await direct.run(conn, _SKILL, _skill("b"))

    cancelled, proceed = asyncio.Event(), asyncio.Event()
    caller = asyncio.create_task(guarded(work))
    await cancelled.wait()
    # The caller's cancellation is scheduled before the transaction's wake-up, so the
    # request is recorded before the transaction's next statement.
    caller.cancel()
    proceed.set()
    with pytest.raises((asyncio.CancelledError, TransactionCancelled)):
        await caller
    async with engine.connect() as conn:
        assert (await conn.scalar(sa.select(sa.func.count()).select_from(Skill))) == 0


_DIALECTS = {
    "sqlite": lambda: create_engine("sqlite+aiosqlite://").dialect,
    "postgresql": lambda: create_engine("postgresql+psycopg://u@localhost/d").dialect,
}
_LITERALS = sa.select(Blob.digest).where(
    Blob.digest == sa.bindparam("digest"), Blob.size > 5, Blob.status != "deleting"
)
_DEFAULTED = sa.select(Blob.digest).where(Blob.size > sa.bindparam("size", value=7))
_SAME_NAME = sa.select(Blob.digest).where(
    Blob.digest == sa.bindparam("d"), Blob.status == sa.bindparam("d")
)
_BOUND_CASES = [
    # (statement, parameters, values come without `construct_params`)
    (_LITERALS, {"digest": "a"}, True),
    (_DEFAULTED, {}, True),
    (_DEFAULTED, {"size": 3}, True),
    (_SAME_NAME, {"d": "x"}, True),
    (_STATUSES, {"digests": ["a", "b"]}, True),
    (_TAKE, {"write_id": "w1"}, True),
    (_MOVE, {"skill_id": 4, "head": 2, "updated_at": NOW}, True),
    (_CLAIMS, {"write_id": "w", "digest": "d", "workspace": "w", "expires_at": NOW}, True),
    (sa.select(sa.bindparam("now", callable_=lambda: 42)), {}, False),
    (sa.text("SELECT :x, :y").bindparams(x=1), {"y": 2}, True),
    (sa.text("SELECT :x, :y").params(x=3), {"y": 2}, False),
    (sa.select(sa.bindparam("x")).params(x=5), {}, False),
]


@pytest.mark.parametrize("dialect_name", sorted(_DIALECTS))
@pytest.mark.parametrize(("statement", "params", "fast"), _BOUND_CASES)
def test_bound_values_are_construct_params(dialect_name, statement, params, fast):
    # Each parameter's value, looked up without `construct_params` where only lookups
    # are needed, is the one `construct_params` gives: from the parameters by key, else
    # the statement's own bound literal or default.
    dialect = _DIALECTS[dialect_name]()
    compiled = compiled_module.compile_statement(
        statement, dialect, compiled_module.columns_of(statement, params)
    )
    assert compiled is not None
    assert (compiled.sources is not None) is fast
    constructed = compiled.compiled.construct_params(params)
    assert compiled.values(params) == [constructed[name] for name in compiled.names]


@pytest.mark.parametrize("dialect_name", sorted(_DIALECTS))
def test_a_missing_required_parameter_is_sqlalchemys_error(dialect_name):
    compiled = compiled_module.compile_statement(_TAKE, _DIALECTS[dialect_name](), None)
    assert compiled is not None
    assert compiled.sources is not None
    with pytest.raises(sa.exc.InvalidRequestError, match="'write_id'"):
        compiled.values({"other": 1})


def test_timestamps_take_the_same_path_as_sqlalchemys():
    # The bind processor is the type's own for the dialect: a naive value is refused.
    dialect = create_engine("sqlite+aiosqlite://").dialect
    binder = UtcDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert binder is not None
    with pytest.raises(ValueError, match="naive"):
        binder(datetime(2026, 1, 1))  # noqa: DTZ001 - the case under test


async def test_a_single_statement_runs_in_autocommit_only_when_marked(engine):
    # Marked `SINGLE` (UnitOfWork.single): the driver runs it as its own transaction;
    # PostgreSQL's connection is also in autocommit (psycopg would begin one otherwise).
    options = {direct.SINGLE: True}
    if engine.dialect.name == "postgresql":
        options["isolation_level"] = "AUTOCOMMIT"
    async with engine.connect() as conn:
        marked = await conn.execution_options(**options)
        with _Executions(engine) as seen:
            await direct.run(marked, _SKILL, _skill("a"))
        assert (seen.sqlalchemy, marked.in_transaction()) == (0, False)
    async with engine.connect() as other:
        # Committed by itself: another connection sees it.
        assert await other.scalar(sa.select(sa.func.count()).select_from(Skill)) == 1
    # Unmarked, with no transaction open: SQLAlchemy's execution begins one.
    async with engine.connect() as conn:
        with _Executions(engine) as seen:
            await direct.run(conn, _SKILL, _skill("b"))
        assert (seen.sqlalchemy, conn.in_transaction()) == (1, True)
        await conn.rollback()
    async with engine.connect() as other:
        assert await other.scalar(sa.select(sa.func.count()).select_from(Skill)) == 1


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_marked_postgresql_connection_outside_autocommit_goes_through_sqlalchemy(engine):
    # psycopg would begin a transaction of its own that SQLAlchemy does not know about.
    async with engine.connect() as conn:
        marked = await conn.execution_options(**{direct.SINGLE: True})
        with _Executions(engine) as seen:
            await direct.run(marked, _SKILL, _skill("a"))
        assert (seen.sqlalchemy, marked.in_transaction()) == (1, True)
        await marked.rollback()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgresql_prepares_a_statement_at_its_first_execution(engine):
    # psycopg's default prepares at the sixth execution on a connection: until then the
    # server parses and plans a write's statement every time, inside the lock for most.
    # A driver told never to prepare (a pooler that cannot keep them) is left so.
    held = sa.text("SELECT statement FROM pg_prepared_statements")
    async with engine.connect() as conn:
        await conn.begin()
        await direct.run(conn, _STATUSES, {"digests": ["a"]})
        assert any("FROM blobs" in row.statement for row in await conn.execute(held))
        driver = (await conn.get_raw_connection()).driver_connection
        driver.prepare_threshold = None
        await direct.run(conn, _OTHERS, {"digests": ["a"]})
        assert not any("NOT IN" in row.statement for row in await conn.execute(held))
        await conn.rollback()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_lost_postgresql_connection_is_invalidated_and_retried(engine):
    # The pool must drop it, and the unit of work may retry the transaction on another.
    async with engine.connect() as victim:
        await victim.begin()
        pid = (await direct.run(victim, sa.select(sa.func.pg_backend_pid()))).scalar()
        async with engine.connect() as killer:
            await killer.execute(sa.select(sa.func.pg_terminate_backend(pid)))
        with pytest.raises(sa.exc.DBAPIError) as caught:
            await direct.run(victim, _SKILL, _skill("a"))
        assert caught.value.connection_invalidated
        assert db_errors.is_transient(caught.value)
        assert victim.invalidated


@pytest.mark.postgres
async def test_statements_compile_per_dialect_in_one_process(sqlite_url, postgresql_url):
    # One process may hold engines on both databases (the test suite does): a statement
    # compiled for one must never be run on the other.
    for url in (sqlite_url, postgresql_url):
        engine = create_engine(url)
        try:
            async with engine.begin() as conn:
                await direct.run(conn, _SKILL, _skill("a"))
                rows = await direct.run(conn, _STATUSES, {"digests": ["x", "y"]})
                assert rows.rows == []
                await conn.rollback()
        finally:
            await engine.dispose()
