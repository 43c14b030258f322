"""Retention: the policy prunes old versions, never a protected one, and GC frees their blobs.

Registry-level tests run on SQLite and PostgreSQL (local store: retention does no blob I/O).
"""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from registry.db.tables import Base, Event, Skill
from registry.domain.model import Origin
from registry.domain.retention import RetentionPolicy
from registry.errors import ProposalNotFound, VersionNotFound
from registry.services.gc import retention
from tests.gc.helpers import HOUR, ManualClock, gc_settings, referenced_digests
from tests.support.faults import ScriptedFailpoints
from tests.support.packages import package, publish
from tests.support.scopes import ACME
from tests.support.state import store_digests

DAY = 24 * HOUR


@pytest.fixture
async def clock():
    return ManualClock()


@pytest.fixture
async def failpoints():
    return ScriptedFailpoints()


@pytest.fixture
async def reg(make_registry, clock, failpoints):
    return await make_registry(clock=clock, failpoints=failpoints, settings=gc_settings())


async def versions(registry, slug="pdf-report", count=5, every=0.0, clock=None):
    for n in range(1, count + 1):
        await publish(registry, slug, tag=f"v{n}", expected=None if n == 1 else n - 1)
        if clock is not None:
            clock.advance(every)


async def surviving(registry, slug="pdf-report", head=5):
    alive = []
    for n in range(1, head + 1):
        try:
            await registry.read_package(ACME, slug, n)
        except VersionNotFound:
            continue
        alive.append(n)
    return alive


async def pruned_events(registry):
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(Event.slug, Event.version, Event.payload).where(
                Event.kind == "versions_pruned"
            )
        )
        return [tuple(r) for r in rows]


async def test_off_by_default_then_keep_the_newest_versions_and_gc_frees_their_blobs(
    reg, clock, local_store
):
    await versions(reg)
    await versions(reg, "csv-cleaner", count=2)
    # Off by default: a year on, GC prunes nothing, nor does a prune without a policy.
    clock.advance(365 * DAY)
    report = await reg.gc.collect()
    assert report.retention is None
    assert await surviving(reg) == [1, 2, 3, 4, 5]
    assert (await reg.gc.prune()).versions_pruned == 0
    before = await store_digests(local_store)

    report = await reg.gc.prune(keep_versions=2)
    assert (report.skills_pruned, report.versions_pruned, report.manifests_deleted) == (1, 3, 3)
    assert [(s.slug, s.versions) for s in report.skills] == [("pdf-report", (1, 2, 3))]
    assert await surviving(reg) == [4, 5]
    with pytest.raises(VersionNotFound):
        await reg.read_package(ACME, "pdf-report", 1)
    assert await surviving(reg, "csv-cleaner", head=2) == [1, 2]
    events = await pruned_events(reg)
    assert len(events) == 1
    slug, head, payload = events[0]
    assert (slug, head, payload["versions"]) == ("pdf-report", 5, [1, 2, 3])

    # The freed blobs wait out the grace period from the prune, then go.
    freed = before - await referenced_digests(reg)
    assert freed
    assert (await reg.gc.collect()).blobs_reclaimed == 0
    clock.advance(2 * HOUR)
    gc = await reg.gc.collect()
    assert gc.blobs_reclaimed == len(freed)
    assert await store_digests(local_store) == await referenced_digests(reg)
    assert (await reg.gc.fsck(verify_content=True)).clean
    # History goes on from the head: a pruned number is never reused.
    pub = await publish(reg, tag="v6", expected=5)
    assert pub.version == 6


async def test_keep_days_the_union_of_both_rules_and_never_the_head(reg, clock):
    await versions(reg, count=5, every=DAY, clock=clock)  # v5 is one day old, v1 five
    plan = await reg.gc.prune(keep_days=2.5, dry_run=True)
    assert plan.dry_run
    assert [s.versions for s in plan.skills] == [(1, 2, 3)]
    assert await surviving(reg) == [1, 2, 3, 4, 5]  # a dry run changes nothing

    report = await reg.gc.prune(keep_days=3.5, keep_versions=4)
    assert [s.versions for s in report.skills] == [(1,)]
    report = await reg.gc.prune(keep_days=2.5)
    assert [s.versions for s in report.skills] == [(2, 3)]
    assert await surviving(reg) == [4, 5]

    # The head is never pruned, however old.
    clock.advance(100 * DAY)
    await reg.gc.prune(keep_days=1)
    assert await surviving(reg) == [5]


async def test_a_marketplace_baseline_is_never_pruned(reg):
    await versions(reg)
    baseline = (await reg.package_info(ACME, "pdf-report", 2)).manifest.hash
    async with reg.engine.begin() as conn:
        await conn.execute(sa.update(Skill).values(baseline_manifest_hash=baseline))
    await reg.gc.prune(keep_versions=1)
    assert await surviving(reg) == [2, 5]


async def test_versions_and_manifests_other_rows_name_are_kept(reg, clock, local_store):
    """Tables discovered at run time protect what they reference (proposals, say)."""
    metadata = sa.MetaData()
    for table in Base.metadata.sorted_tables:
        table.to_metadata(metadata)
    proposals = sa.Table(
        "test_proposals",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("manifest_id", sa.ForeignKey("manifests.id")),
        sa.Column("skill_id", sa.Integer),
        sa.Column("base_version", sa.Integer),
        sa.Column("status", sa.String(16)),
        info={
            "pins_versions": {
                "skill": "skill_id",
                "version": "base_version",
                "where": "status = 'open'",
            }
        },
    )
    pins = sa.Table(
        "test_pins",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("version_id", sa.ForeignKey("versions.id")),
    )
    await versions(reg, count=6)
    async with reg.engine.begin() as conn:
        await conn.run_sync(proposals.create)
        await conn.run_sync(pins.create)
        rows = {
            r.number: r
            for r in await conn.execute(
                sa.text("SELECT id, number, manifest_id, skill_id FROM versions")
            )
        }
        skill_id = rows[1].skill_id
        # An open proposal made against v2, whose package is v1's manifest; a closed one
        # against v3; a row naming v4 by foreign key.
        await conn.execute(
            proposals.insert().values(
                [
                    {
                        "manifest_id": rows[1].manifest_id,
                        "skill_id": skill_id,
                        "base_version": 2,
                        "status": "open",
                    },
                    {
                        "manifest_id": None,
                        "skill_id": skill_id,
                        "base_version": 3,
                        "status": "closed",
                    },
                ]
            )
        )
        await conn.execute(pins.insert().values(version_id=rows[4].id))

    report = await retention.prune(reg.ctx, RetentionPolicy(keep_versions=1), metadata=metadata)
    assert [s.versions for s in report.skills] == [(1, 3, 5)]
    assert await surviving(reg, head=6) == [2, 4, 6]
    # v1's version row is gone but its manifest is the proposal's: its blobs stay.
    assert report.manifests_deleted == 2
    clock.advance(2 * HOUR)
    await reg.gc.collect()
    assert await store_digests(local_store) == await referenced_digests(reg)
    async with reg.engine.connect() as conn:
        kept = await conn.scalar(
            sa.text("SELECT count(*) FROM manifest_entries WHERE manifest_id = :m"),
            {"m": rows[1].manifest_id},
        )
    assert kept == len(package("pdf-report"))
    assert (await reg.gc.fsck(verify_content=True)).clean


async def test_retention_decides_again_under_the_lock(reg, failpoints):
    """The head moved between the plan and the lock: the prune follows the new head."""
    await versions(reg, count=3)
    planned = failpoints.park("retention.planned")
    prune = asyncio.create_task(reg.gc.prune(keep_versions=2))
    await planned.reached.wait()
    await publish(reg, tag="v4", expected=3)
    planned.release.set()
    report = await prune
    assert [s.versions for s in report.skills] == [(1, 2)]
    assert await surviving(reg, head=4) == [3, 4]


async def test_gc_runs_the_configured_policy_first(make_registry, clock):
    reg = await make_registry(clock=clock, settings=gc_settings(retention_keep_versions=1))
    await versions(reg, count=3)
    report = await reg.gc.collect()
    assert report.retention is not None
    assert report.retention.versions_pruned == 2
    assert (await reg.gc.figures()).last_gc.versions_pruned == 2
    assert await surviving(reg, head=3) == [3]


async def test_shared_blobs_of_a_pruned_version_stay(reg, clock, local_store):
    same = package("pdf-report", tag="same")
    await publish(reg, files=same)
    await publish(reg, files=package("pdf-report", tag="other"), expected=1)
    await publish(reg, files=same, expected=2)  # v3 has v1's package (a restore, say)
    report = await reg.gc.prune(keep_versions=1)
    assert [s.versions for s in report.skills] == [(1, 2)]
    # v1's manifest is v3's too: only v2's is deleted.
    assert report.manifests_deleted == 1
    clock.advance(2 * HOUR)
    await reg.gc.collect()
    assert await store_digests(local_store) == await referenced_digests(reg)
    await reg.read_package(ACME, "pdf-report", 3)


async def nightly_proposals(registry, clock, *, nights: int) -> list[int]:
    """Version 1 with learning paused, then one learning proposal a night (each supersedes)."""
    await publish(registry, tag="v1")
    await registry.pause_learning(ACME, "pdf-report", actor="owner")
    made = []
    for night in range(1, nights + 1):
        pub = await registry.write_package(
            ACME,
            "pdf-report",
            package("pdf-report", tag=f"learned-{night}"),
            expected_head=1,
            actor="nightly",
            origin=Origin.LEARNING,
        )
        assert pub.proposal is not None
        made.append(pub.proposal)
        clock.advance(DAY)
    return made


async def test_closed_proposals_go_by_the_same_policy_and_gc_frees_their_blobs(
    reg, clock, local_store
):
    """A learning job proposing every night must not keep every candidate for ever."""
    made = await nightly_proposals(reg, clock, nights=5)
    before = await referenced_digests(reg)

    report = await reg.gc.prune(keep_versions=2)
    # Four were superseded; the newest two closed ones stay, the pending one always does.
    assert (report.proposals_pruned, report.versions_pruned) == (2, 0)
    assert [s.proposals for s in report.skills] == [tuple(made[:2])]
    for gone in made[:2]:
        with pytest.raises(ProposalNotFound):
            await reg.proposal(ACME, gone)
    for kept in made[2:]:
        assert (await reg.proposal(ACME, kept)).summary.id == kept
    events = await pruned_events(reg)
    assert [e[2]["proposals"] for e in events] == [made[:2]]

    # By age, a dry run counts the proposals and manifests a prune then frees: of the
    # closed ones left, the third (closed two days ago) goes, the fourth (one day) stays.
    planned = await reg.gc.prune(keep_days=1.5, dry_run=True)
    assert (planned.proposals_pruned, planned.manifests_deleted) == (1, 1)
    done = await reg.gc.prune(keep_days=1.5)
    assert (done.proposals_pruned, done.manifests_deleted) == (1, 1)
    assert [s.proposals for s in done.skills] == [(made[2],)]

    clock.advance(2 * HOUR)
    await reg.gc.collect()
    after = await referenced_digests(reg)
    assert after < before  # the pruned candidates' own files are unreferenced now
    assert await store_digests(local_store) == after
    assert (await reg.gc.fsck(verify_content=True)).clean
