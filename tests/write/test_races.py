"""Races, driven deterministically with failpoints and barriers (no sleeps)."""

from __future__ import annotations

import asyncio

import pytest

from registry.errors import CapacityExceeded, HeadConflict, SlugLookAlike
from registry.settings import Settings
from tests.support.faults import InjectedFault, ScriptedFailpoints
from tests.support.packages import as_bytes, package, skill_md
from tests.support.scopes import ACME
from tests.support.state import blob_rows, live_claims, store_digests


class BarrierFailpoints:
    """Every writer waits at `name` until `parties` writers have arrived."""

    def __init__(self, name: str, parties: int) -> None:
        self.name = name
        self.barrier = asyncio.Barrier(parties)

    async def hit(self, name: str) -> None:
        if name == self.name:
            await self.barrier.wait()


async def _outcomes(coros):
    return await asyncio.gather(*coros, return_exceptions=True)


@pytest.mark.parametrize("writers", [2, 6])
async def test_writers_with_the_same_expected_head_exactly_one_wins(make_registry, writers):
    # Every writer has validated, claimed and uploaded before any takes the lock, so they
    # all race for the same head with the same expectation.
    registry = await make_registry(failpoints=BarrierFailpoints("write.uploaded", writers))
    setup = await make_registry()
    await setup.write_package(
        ACME, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    results = await _outcomes(
        registry.write_package(
            ACME, "pdf-report", package("pdf-report", tag=f"w{i}"), expected_head=1, actor=f"w{i}"
        )
        for i in range(writers)
    )
    wins = [r for r in results if not isinstance(r, BaseException)]
    conflicts = [r for r in results if isinstance(r, HeadConflict)]
    assert len(wins) == 1, results
    assert len(conflicts) == writers - 1, results
    assert all((c.expected, c.current) == (1, 2) for c in conflicts)
    head = await registry.read_package(ACME, "pdf-report")
    assert head.version == 2
    winner = wins[0]
    assert head.manifest.hash == winner.manifest_hash
    assert await live_claims(registry) == 0


async def test_eight_new_skills_race_for_the_last_capacity_slot(make_registry):
    settings = Settings(capacity_saved=3)
    setup = await make_registry(settings=settings)
    for slug in ("existing-a", "existing-b"):
        await setup.write_package(ACME, slug, package(slug), expected_head=None, actor="u")
    registry = await make_registry(
        settings=settings, failpoints=BarrierFailpoints("write.uploaded", 8)
    )
    slugs = [f"racer-{i}" for i in range(8)]
    results = await _outcomes(
        registry.write_package(ACME, s, package(s), expected_head=None, actor="u") for s in slugs
    )
    stored = [s for s, r in zip(slugs, results, strict=True) if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, CapacityExceeded)]
    assert len(stored) == 1, results
    assert len(refused) == 7, results
    page = await registry.list_skills(ACME)
    assert sorted(s.slug for s in page.items) == sorted(["existing-a", "existing-b", *stored])
    assert await live_claims(registry) == 0


SHARED = b"a file both packages contain, stored once under one digest\n" * 20


def _with_shared(slug: str) -> dict:
    return {"SKILL.md": skill_md(slug), "references/shared.md": SHARED}


async def _assert_shared_survives(registry, store, survivor_slug):
    from blobstore import compute_digest  # noqa: PLC0415

    digest = compute_digest(SHARED)
    assert digest in await store_digests(store)
    assert (await blob_rows(registry))[digest] == "live"
    survivor = await registry.read_package(ACME, survivor_slug)
    assert as_bytes(survivor.files) == as_bytes(_with_shared(survivor_slug))
    assert await live_claims(registry) == 0


async def test_dedup_race_a_uploads_and_fails_while_b_reuses_and_commits(
    make_registry, local_store
):
    """I3: A uploads X and fails; B found X present and committed. X must survive."""
    a_points = ScriptedFailpoints()
    writer_a = await make_registry(failpoints=a_points)
    writer_b = await make_registry()
    parked = a_points.park("write.uploaded")
    a_points.fail("publish.locked")
    task_a = asyncio.create_task(
        writer_a.write_package(
            ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="a"
        )
    )
    await parked.reached.wait()  # A has claimed and uploaded X
    pub_b = await writer_b.write_package(
        ACME, "skill-b", _with_shared("skill-b"), expected_head=None, actor="b"
    )
    assert pub_b.created
    parked.release.set()
    with pytest.raises(InjectedFault):
        await task_a
    await _assert_shared_survives(writer_b, local_store, "skill-b")


async def test_dedup_race_b_claims_first_and_a_fails_after_b_commits(make_registry, local_store):
    """A claims X before uploading it; B claims, uploads and commits; then A fails."""
    a_points = ScriptedFailpoints()
    writer_a = await make_registry(failpoints=a_points)
    writer_b = await make_registry()
    parked = a_points.park("write.claimed")
    a_points.fail("publish.begin")
    task_a = asyncio.create_task(
        writer_a.write_package(
            ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="a"
        )
    )
    await parked.reached.wait()  # A holds a claim on X, nothing uploaded yet
    await writer_b.write_package(
        ACME, "skill-b", _with_shared("skill-b"), expected_head=None, actor="b"
    )
    parked.release.set()
    with pytest.raises(InjectedFault):
        await task_a
    await _assert_shared_survives(writer_b, local_store, "skill-b")


async def test_dedup_race_b_fails_while_a_commits_the_shared_blob(make_registry, local_store):
    """B claims X and waits; A claims, uploads and commits X; B fails and cleans up."""
    b_points = ScriptedFailpoints()
    writer_a = await make_registry()
    writer_b = await make_registry(failpoints=b_points)
    parked = b_points.park("write.claimed")
    b_points.fail("write.uploaded")
    task_b = asyncio.create_task(
        writer_b.write_package(
            ACME, "skill-b", _with_shared("skill-b"), expected_head=None, actor="b"
        )
    )
    await parked.reached.wait()
    await writer_a.write_package(
        ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="a"
    )
    parked.release.set()
    with pytest.raises(InjectedFault):
        await task_b
    await _assert_shared_survives(writer_a, local_store, "skill-a")


async def test_two_writers_of_the_same_new_blob_both_commit(make_registry, local_store):
    """Both writers upload X concurrently (idempotent put); both versions read back."""
    barrier = BarrierFailpoints("write.claimed", 2)
    writer = await make_registry(failpoints=barrier)
    await asyncio.gather(
        writer.write_package(
            ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="a"
        ),
        writer.write_package(
            ACME, "skill-b", _with_shared("skill-b"), expected_head=None, actor="b"
        ),
    )
    await _assert_shared_survives(writer, local_store, "skill-a")
    await _assert_shared_survives(writer, local_store, "skill-b")


class MarkDeletingAt:
    """At a failpoint, do what GC's first two steps do to one digest: mark it, delete it."""

    def __init__(self, name, registry_holder, store, digest):
        self.name = name
        self.holder = registry_holder
        self.store = store
        self.digest = digest
        self.done = False

    async def hit(self, name):
        if name != self.name or self.done:
            return
        self.done = True
        import sqlalchemy as sa  # noqa: PLC0415

        async with self.holder[0].engine.begin() as conn:
            await conn.execute(
                sa.text("UPDATE blobs SET status = 'deleting' WHERE digest = :d"),
                {"d": self.digest},
            )
        await self.store.delete(self.digest)


async def test_a_blob_gc_takes_from_under_a_dedup_is_stored_again(make_registry, local_store):
    """With expected_head=ANY the head's blobs are not claimed; if GC takes one meanwhile,
    the publish transaction notices (`confirm`) and the write stores it again."""
    from blobstore import compute_digest  # noqa: PLC0415

    digest = compute_digest(SHARED)
    holder = []
    registry = await make_registry(
        failpoints=MarkDeletingAt("write.uploaded", holder, local_store, digest)
    )
    holder.append(registry)
    setup = await make_registry()
    await setup.write_package(
        ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="u"
    )
    files = _with_shared("skill-a")
    files["references/extra.md"] = b"a new file, so the write uploads something\n"
    pub = await registry.write_package(ACME, "skill-a", files, expected_head=1, actor="u")
    assert pub.version == 2
    assert as_bytes((await registry.read_package(ACME, "skill-a")).files) == as_bytes(files)
    assert (await blob_rows(registry))[digest] == "live"
    assert await live_claims(registry) == 0


async def test_a_restore_whose_blob_vanished_fails_instead_of_publishing(
    make_registry, local_store
):
    import sqlalchemy as sa  # noqa: PLC0415

    from blobstore import compute_digest  # noqa: PLC0415
    from registry import Origin  # noqa: PLC0415
    from registry.errors import Inconsistency  # noqa: PLC0415
    from registry.services.write.publish import publish_manifest  # noqa: PLC0415
    from registry.services.write.request import WriteRequest  # noqa: PLC0415

    registry = await make_registry()
    await registry.write_package(
        ACME, "skill-a", _with_shared("skill-a"), expected_head=None, actor="u"
    )
    info = await registry.package_info(ACME, "skill-a")
    await registry.write_package(ACME, "skill-a", package("skill-a"), expected_head=1, actor="u")
    async with registry.engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE blobs SET status = 'deleting' WHERE digest = :d"),
            {"d": compute_digest(SHARED)},
        )
    request = WriteRequest(
        scope=ACME,
        slug="skill-a",
        expected_head=2,
        origin=Origin.RESTORE,
        actor="u",
        restored_from=1,
    )
    with pytest.raises(Inconsistency):
        await publish_manifest(registry.ctx, request, info.manifest, files={})
    assert (await registry.package_info(ACME, "skill-a")).version == 2
    assert await live_claims(registry) == 0


async def test_two_writers_of_look_alike_slugs_one_wins(make_registry):
    # Both have validated, claimed and uploaded before either takes the lock: neither
    # could see the other's skill. The locked check (and, under it, the unique index on
    # the live skills' skeletons) lets exactly one in.
    registry = await make_registry(failpoints=BarrierFailpoints("write.uploaded", 2))
    slugs = ["λόγος", "λόγοσ"]
    results = await _outcomes(
        registry.write_package(ACME, s, package(s), expected_head=None, actor="u") for s in slugs
    )
    refused = [r for r in results if isinstance(r, SlugLookAlike)]
    stored = [s for s, r in zip(slugs, results, strict=True) if not isinstance(r, BaseException)]
    assert len(stored) == 1, results
    assert len(refused) == 1, results
    assert refused[0].existing == stored[0]
    assert [i.slug for i in (await registry.list_skills(ACME)).items] == stored
    assert await live_claims(registry) == 0
