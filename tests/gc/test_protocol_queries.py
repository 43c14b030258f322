"""The statements the protocol rests on, one by one, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from blobstore import compute_digest
from registry.db import blobs as db_blobs
from registry.db import gc as db_gc
from registry.db.engine import create_engine, write_connection
from registry.db.tables import Blob, BlobClaim, Manifest, ManifestEntry

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
OLD = NOW - timedelta(hours=2)
CUTOFFS = db_gc.Cutoffs(touched_before=NOW - timedelta(hours=1), claims_after=NOW, now=NOW)
FENCE = NOW + timedelta(minutes=10)  # a fence in force at NOW
EXPIRED = NOW - timedelta(seconds=1)  # a fence that has expired by NOW


def digest(name: str) -> str:
    return compute_digest(name.encode())


@pytest.fixture
async def engine(database_url):
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def write(engine, work):
    async with engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            return await work(conn)


async def add_blob(conn, name, *, status="live", touched=OLD, fence=None):
    await conn.execute(
        sa.insert(Blob).values(
            digest=digest(name),
            size=len(name),
            status=status,
            created_at=OLD,
            touched_at=touched,
            purge_expires_at=fence,
        )
    )


async def reference(conn, *names):
    manifest_id = await conn.scalar(
        sa.insert(Manifest)
        .values(
            workspace="acme", hash="0" * 64, file_count=len(names), total_size=0, created_at=NOW
        )
        .returning(Manifest.id)
    )
    for i, name in enumerate(names):
        await conn.execute(
            sa.insert(ManifestEntry).values(
                manifest_id=manifest_id, path=f"f{i}", digest=digest(name), size=len(name)
            )
        )


async def add_claim(conn, name, *, write_id="w1", expires=NOW + timedelta(hours=1)):
    await conn.execute(
        sa.insert(BlobClaim).values(
            write_id=write_id,
            digest=digest(name),
            workspace="acme",
            created_at=OLD,
            expires_at=expires,
        )
    )


async def statuses(engine):
    async with engine.connect() as conn:
        rows = await conn.execute(sa.select(Blob.digest, Blob.status))
        return {r.digest: r.status for r in rows}


async def test_candidates_are_unreferenced_unclaimed_past_grace_and_paged_by_digest(engine):
    async def setup(conn):
        await add_blob(conn, "orphan")
        await add_blob(conn, "young", touched=NOW)
        await add_blob(conn, "referenced")
        await add_blob(conn, "claimed")
        await add_blob(conn, "claim-expired")
        await add_blob(conn, "marked", status="deleting", touched=NOW)
        await add_blob(conn, "fenced", status="deleting", fence=FENCE)
        await add_blob(conn, "fence-expired", status="deleting", fence=EXPIRED)
        await reference(conn, "referenced")
        await add_claim(conn, "claimed")
        await add_claim(conn, "claim-expired", expires=NOW - timedelta(seconds=1))

    await write(engine, setup)
    async with engine.connect() as conn:
        found = await db_gc.candidates(conn, after="", cutoffs=CUTOFFS, limit=100, lock=False)
    # Another run's fence keeps its rows from this run until it expires.
    assert {c.digest for c in found} == {
        digest("orphan"),
        digest("claim-expired"),
        digest("marked"),
        digest("fence-expired"),
    }
    assert [c.digest for c in found] == sorted(c.digest for c in found)

    # Keyset pages (`digest > after`) of at most `limit` rows, the ineligible rows skipped
    # on every page, add up to the same rows in the same order.
    seen, after = [], ""
    async with engine.connect() as conn:
        while page := await db_gc.candidates(
            conn, after=after, cutoffs=CUTOFFS, limit=3, lock=False
        ):
            assert len(page) <= 3
            seen += [c.digest for c in page]
            after = page[-1].digest
    assert seen == [c.digest for c in found]


async def test_mark_deleting_re_checks_a_stale_candidate_list(engine):
    """tx1's second statement decides: a row referenced or claimed since is not marked."""

    async def setup(conn):
        for name in ("orphan", "now-referenced", "now-claimed", "now-touched"):
            await add_blob(conn, name)

    await write(engine, setup)

    async def later(conn):
        await reference(conn, "now-referenced")
        await add_claim(conn, "now-claimed")
        await conn.execute(
            sa.update(Blob).where(Blob.digest == digest("now-touched")).values(touched_at=NOW)
        )

    await write(engine, later)
    stale = [digest(n) for n in ("orphan", "now-referenced", "now-claimed", "now-touched")]
    marked = await write(engine, lambda conn: db_gc.mark_deleting(conn, stale, CUTOFFS))
    assert [c.digest for c in marked] == [digest("orphan")]
    assert (await statuses(engine))[digest("now-referenced")] == "live"


async def test_fence_only_what_is_still_deleting_and_nobody_else_s(engine):
    async def setup(conn):
        await add_blob(conn, "doomed", status="deleting")
        await add_blob(conn, "resurrected", status="pending")
        await add_blob(conn, "odd", status="deleting")
        await add_blob(conn, "fenced", status="deleting", fence=FENCE)
        await add_blob(conn, "abandoned", status="deleting", fence=EXPIRED)
        await add_claim(conn, "doomed", expires=NOW - timedelta(hours=1))
        await reference(conn, "odd")

    await write(engine, setup)
    names = ("doomed", "resurrected", "odd", "fenced", "abandoned")
    until = NOW + timedelta(minutes=5)

    async def tx2(conn):
        rows = await db_gc.lock_and_recheck(conn, [digest(n) for n in names], CUTOFFS)
        return await db_gc.fence(conn, rows, until=until)

    fenced = await write(engine, tx2)
    assert sorted(fenced.digests) == sorted([digest("doomed"), digest("abandoned")])
    assert fenced.suspicious == [digest("odd")]
    assert fenced.skipped == 3
    async with engine.connect() as conn:
        fences = dict((await conn.execute(sa.select(Blob.digest, Blob.purge_expires_at))).all())
    assert fences[digest("doomed")] == fences[digest("abandoned")] == until
    assert fences[digest("fenced")] == FENCE
    assert fences[digest("resurrected")] is None


async def test_finish_purge_deletes_only_rows_under_its_own_fence(engine):
    until = NOW + timedelta(minutes=5)

    async def setup(conn):
        await add_blob(conn, "ours", status="deleting", fence=until)
        await add_blob(conn, "refenced", status="deleting", fence=until + timedelta(minutes=1))
        await add_blob(conn, "taken-back", status="pending")
        await add_claim(conn, "ours", expires=NOW - timedelta(hours=1))
        await add_claim(conn, "taken-back")

    await write(engine, setup)
    names = [digest(n) for n in ("ours", "refenced", "taken-back")]
    deleted = await write(
        engine, lambda conn: db_gc.finish_purge(conn, names, CUTOFFS, until=until)
    )
    assert deleted == 1
    assert set(await statuses(engine)) == {digest("refenced"), digest("taken-back")}


async def test_a_referenced_row_cannot_be_deleted(engine):
    """A referenced row is held by its manifest entry's foreign key: a mistake fails loudly."""
    until = NOW + timedelta(minutes=5)

    async def setup(conn):
        await add_blob(conn, "odd", status="deleting", fence=until)
        await reference(conn, "odd")

    await write(engine, setup)
    with pytest.raises(sa.exc.IntegrityError):
        await write(
            engine, lambda conn: db_gc.finish_purge(conn, [digest("odd")], CUTOFFS, until=until)
        )


async def test_claim_resurrects_renews_leaves_a_fenced_row_alone_and_lifts_an_expired_fence(
    engine,
):
    """A claim resurrects a `deleting` row and a repeated one renews its expiry; a fenced
    row stays `deleting` and unclaimed; an expired fence is lifted (the row resurrected)."""

    async def setup(conn):
        await add_blob(conn, "x", status="deleting")
        await add_blob(conn, "fenced", status="deleting", fence=FENCE)
        await add_blob(conn, "abandoned", status="deleting", fence=EXPIRED)

    await write(engine, setup)

    async def claim(conn, names, expires):
        return await db_blobs.claim(
            conn,
            write_id="w1",
            workspace="acme",
            sizes={digest(n): 1 for n in names},
            now=NOW,
            expires_at=expires,
        )

    assert await write(engine, lambda c: claim(c, ["x"], NOW + timedelta(seconds=5))) == {
        digest("x"): "pending"
    }
    await write(engine, lambda c: claim(c, ["x"], NOW + timedelta(hours=1)))
    async with engine.connect() as conn:
        expires = await conn.scalar(
            sa.select(BlobClaim.expires_at).where(BlobClaim.digest == digest("x"))
        )
    assert expires == NOW + timedelta(hours=1)

    names = ["fenced", "abandoned", "new"]
    assert await write(engine, lambda c: claim(c, names, NOW + timedelta(hours=1))) == {
        digest("fenced"): "deleting",
        digest("abandoned"): "pending",
        digest("new"): "pending",
    }
    async with engine.connect() as conn:
        claimed = set((await conn.execute(sa.select(BlobClaim.digest))).scalars())
        fences = dict((await conn.execute(sa.select(Blob.digest, Blob.purge_expires_at))).all())
    assert claimed == {digest("x"), digest("abandoned"), digest("new")}
    assert fences == {
        digest("x"): None,
        digest("fenced"): FENCE,
        digest("abandoned"): None,
        digest("new"): None,
    }


# `confirm`'s decision for every status/claim combination: (row status, uploaded by this
# write, this write's claim, accepted).
CONFIRM_CASES = [
    ("live", False, None, True),
    ("live", True, None, True),
    ("pending", True, "held", True),
    ("pending", True, "expired", False),
    ("pending", True, None, False),
    ("pending", False, "held", False),
    ("deleting", True, "held", False),
    ("deleting", False, None, False),
    (None, True, None, False),
]


async def test_confirm(engine):
    """Each case on its own digest and write, in one database."""
    for i, case in enumerate(CONFIRM_CASES):
        status, mine, claim, ok = case
        name, write_id = f"x-{i}", f"w-{i}"

        async def setup(conn, status=status, claim=claim, name=name, write_id=write_id):
            if status is not None:
                await add_blob(conn, name, status=status)
            if claim is not None:
                held = claim == "held"
                expires = NOW + timedelta(minutes=1) if held else NOW - timedelta(seconds=1)
                await add_claim(conn, name, write_id=write_id, expires=expires)

        await write(engine, setup)

        async def confirm(conn, mine=mine, name=name, write_id=write_id):
            # The publish transaction drops the write's claims first; the unexpired ones count.
            held = await db_blobs.release(conn, write_id, NOW)
            return await db_blobs.confirm(
                conn,
                held=held,
                uploaded=[digest(name)] if mine else [],
                referenced=[digest(name)],
            )

        problem = await write(engine, confirm)
        assert (problem is None) == ok, case
        if ok:
            assert (await statuses(engine))[digest(name)] == "live", case
