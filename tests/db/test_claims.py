"""The claim's commit waits for no flush of PostgreSQL's log (registry/db/claims.py).

The claim is one statement run as its own transaction; `durable=False` makes it set
`synchronous_commit` to `off` for that transaction only (docs/write-path.md, "The
claim's commit"). Why losing such a commit is safe is the subject of
`tests/gc/test_interleavings.py::test_a_claim_lost_in_a_crash_is_claimed_again`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from registry.db import claims
from registry.db.engine import create_engine
from registry.settings import Settings
from tests.support.packages import package, publish

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]

NOW = datetime(2026, 12, 2, tzinfo=UTC)
_RELAXED = "set_config('synchronous_commit', 'off', true)"


async def _claim(conn, *, durable: bool) -> dict[str, str]:
    return await claims.claim(
        conn,
        write_id="w1",
        workspace="acme",
        sizes={"a" * 64: 3, "b" * 64: 4},
        now=NOW,
        expires_at=NOW + timedelta(hours=1),
        clean=["a" * 64],
        scanner="s1",
        document=None,
        durable=durable,
    )


@pytest.mark.parametrize(("durable", "level"), [(True, "on"), (False, "off")])
async def test_a_claim_that_need_not_be_durable_relaxes_its_own_transaction(
    database_url, durable, level
):
    # Observed inside a transaction of the test's own, which the claim's setting reaches
    # to its end (what `durable=False` must never be given: the docstring says so).
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            await conn.begin()
            statuses = await _claim(conn, durable=durable)
            assert statuses == {"a" * 64: "pending", "b" * 64: "pending"}
            assert await conn.scalar(sa.text("SHOW synchronous_commit")) == level
            await conn.rollback()
            assert await conn.scalar(sa.text("SHOW synchronous_commit")) == "on"
    finally:
        await engine.dispose()


async def test_only_the_claim_of_a_write_is_relaxed_and_it_ends_with_its_statement(
    make_registry,
):
    # One pooled connection serves the read, the claim, the publish and the checks below:
    # the claim's setting must be gone from it once its statement has committed.
    registry = await make_registry(settings=Settings(db_pool_size=1, db_max_overflow=0))
    sent: list[str] = []

    def _sent(_conn, _cursor, statement, *_args) -> None:
        sent.append(statement)

    sa.event.listen(registry.engine.sync_engine, "before_cursor_execute", _sent)
    try:
        await publish(registry, "relaxed", package("relaxed"))
        await publish(registry, "relaxed", package("relaxed", tag="2"), expected=1)
    finally:
        sa.event.remove(registry.engine.sync_engine, "before_cursor_execute", _sent)
    relaxed = [s for s in sent if _RELAXED in s]
    assert len(relaxed) == 2  # one claim per write
    assert all("INSERT INTO blob_claims" in s for s in relaxed)
    assert sum("INSERT INTO blob_claims" in s for s in sent) == 2
    async with registry.engine.connect() as conn:
        assert await conn.scalar(sa.text("SHOW synchronous_commit")) == "on"
