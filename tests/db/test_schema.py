"""The schema's own constraints, exercised on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from registry.db import revision
from registry.db.engine import create_engine
from registry.db.migrate import current_revision, head_revision
from registry.db.tables import Blob, Skill
from tests.support.rows import skill_row

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
DIGEST = "ab" * 32


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def test_database_is_at_head(engine):
    assert await current_revision(engine) == head_revision()
    # The check every command makes reads the scripts without Alembic: the same head.
    assert revision.head_revision() == head_revision()


async def test_an_empty_database_has_no_revision(tmp_path):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    try:
        assert await current_revision(engine) is None
    finally:
        await engine.dispose()


async def test_blob_digest_check_refuses_malformed(engine):
    # PostgreSQL refuses an over-long value by its column type before the CHECK runs.
    for digest in ("AB" * 32, "ab" * 31, "ab" * 33, "zz" * 32, "../" + "a" * 61, ""):
        async with engine.begin() as conn:
            try:
                await conn.execute(
                    sa.insert(Blob).values(
                        digest=digest, size=1, status="live", created_at=NOW, touched_at=NOW
                    )
                )
            except (sa.exc.IntegrityError, sa.exc.DataError):
                continue
        pytest.fail(f"the digest {digest!r} was stored")


async def test_blob_status_check(engine):
    async with engine.begin() as conn:
        with pytest.raises(sa.exc.IntegrityError):
            await conn.execute(
                sa.insert(Blob).values(
                    digest=DIGEST, size=1, status="gone", created_at=NOW, touched_at=NOW
                )
            )


def _skill(slug: str = "pdf-report", state: str = "active") -> dict[str, object]:
    return skill_row(slug, now=NOW, workspace="acme", head_size=0, state=state)


async def test_live_slug_is_unique_per_scope(engine):
    async with engine.begin() as conn:
        await conn.execute(sa.insert(Skill).values(**_skill()))
    async with engine.begin() as conn:
        with pytest.raises(sa.exc.IntegrityError):
            await conn.execute(sa.insert(Skill).values(**_skill()))


async def test_deleted_skill_frees_its_slug(engine):
    async with engine.begin() as conn:
        await conn.execute(sa.insert(Skill).values(**_skill(state="deleted")))
        await conn.execute(sa.insert(Skill).values(**_skill(state="deleted")))
        await conn.execute(sa.insert(Skill).values(**_skill()))
        count = await conn.scalar(sa.select(sa.func.count()).select_from(Skill))
    assert count == 3


async def test_timestamps_round_trip_as_aware_utc(engine):
    async with engine.begin() as conn:
        await conn.execute(sa.insert(Skill).values(**_skill()))
        created = await conn.scalar(sa.select(Skill.created_at))
    assert created == NOW
    assert created.tzinfo is not None
