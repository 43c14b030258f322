"""The rescan when the content rules change, on both databases (docs/write-path.md).

Packages stored under yesterday's rules (`DefaultScanner`) are checked with today's
(`StricterScanner`, which also blocks an internal code name): a head that blocks stops
being used and opens a content review; approving resumes it for good (this package, these
rules); moving the head away closes it; a killed job resumes where it stopped.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from registry import FindingRef
from registry.db.tables import PackageCheck
from registry.errors import ContentBlocked
from registry.settings import Settings
from tests.marketplace.support import LISTING, ManualClock, listing_files
from tests.support.faults import ScriptedFailpoints
from tests.support.history import CODENAME, StricterScanner, github_token
from tests.support.packages import package
from tests.support.scopes import ACME, CATALOG

LEASE = 30
SETTINGS = Settings(job_lease=LEASE)
CONFIG = "references/config.md"


def files(slug, tag, text=None):
    out = package(slug, tag=tag)
    if text is not None:
        out[CONFIG] = text.encode()
    return out


async def run_jobs(registry):
    return await registry.marketplace.worker().run(drain=True)


async def checks(registry):
    async with registry.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(
                PackageCheck.workspace,
                PackageCheck.ruleset,
                PackageCheck.findings,
                PackageCheck.blocked_heads,
                PackageCheck.checked_at,
            ).order_by(PackageCheck.workspace, PackageCheck.manifest_hash)
        )
        return [tuple(r) for r in rows]


async def test_a_rule_change_stops_stored_bad_heads_and_installed_copies_and_opens_reviews(
    make_registry,
):
    before = await make_registry()
    await before.write_package(
        ACME, "bad", files("bad", "1", CODENAME), expected_head=None, actor="u"
    )
    await before.write_package(ACME, "good", files("good", "1"), expected_head=None, actor="u")
    # An approved finding (a warning under both rule sets): recorded, stops nothing.
    secret = github_token("approved")
    with pytest.raises(ContentBlocked) as caught:
        await before.write_package(
            ACME, "known", files("known", "1", secret), expected_head=None, actor="u"
        )
    approved = [FindingRef(caught.value.path, caught.value.ordinal)]
    await before.write_package(
        ACME, "known", files("known", "1", secret), expected_head=None, actor="o", approve=approved
    )
    extra = {CONFIG: CODENAME.encode()}
    await before.marketplace.publish_listing(LISTING, listing_files(extra=extra), actor="publisher")
    assert (await before.marketplace.install(ACME, LISTING)).succeeded
    # The copy is paused by its owner already: the review opens, the pause is theirs.
    await before.stop_using(ACME, LISTING, actor="owner", reason="trying it out")

    registry = await make_registry(scanner=StricterScanner())
    enqueued = await registry.rescan.start_if_rules_changed()
    assert enqueued is not None
    assert await run_jobs(registry) == 1
    job = await registry.marketplace.job(enqueued.job.id)
    assert job.status == "succeeded"
    assert job.progress["done"] == job.progress["total"] == 5
    assert (job.progress["blocked"], job.progress["opened"], job.progress["paused"]) == (3, 3, 2)

    bad = await registry.skill_status(ACME, "bad")
    assert (bad.use_paused, bad.state) == (True, "blocked")
    assert bad.pause_reason.startswith("rescan: content review")
    for slug in ("good", "known"):
        assert not (await registry.skill_status(ACME, slug)).use_paused
    copy = await registry.skill_status(ACME, LISTING)
    assert (copy.use_paused, copy.pause_reason) == (True, "trying it out")
    listing = await registry.skill_status(CATALOG, LISTING)
    assert listing.use_paused

    reviews = (await registry.rescan.reviews(ACME.workspace)).items
    assert sorted((r.slug, r.paused_use) for r in reviews) == [("bad", True), (LISTING, False)]
    first = reviews[0].findings[0]
    assert (first["path"], first["pattern_class"]) == (CONFIG, "codename")
    assert CODENAME not in str([r.findings for r in reviews])
    recorded = {(w, f, b) for w, ruleset, f, b, _ in await checks(registry)}
    assert {ruleset for _, ruleset, *_ in await checks(registry)} == {StricterScanner.fingerprint}
    assert recorded == {
        (ACME.workspace, 0, 0),
        (ACME.workspace, 1, 0),
        (ACME.workspace, 1, 1),
        (CATALOG.workspace, 1, 1),
    }
    # The rules did not change since: nothing to start, nothing reopened.
    assert await registry.rescan.start_if_rules_changed() is None


async def test_approving_resumes_use_and_the_same_rules_do_not_reopen_it(make_registry):
    before = await make_registry()
    await before.write_package(
        ACME, "bad", files("bad", "1", CODENAME), expected_head=None, actor="u"
    )
    registry = await make_registry(scanner=StricterScanner())
    await registry.rescan.start()
    await run_jobs(registry)
    (review,) = (await registry.rescan.reviews(ACME.workspace)).items

    result = await registry.rescan.approve(ACME.workspace, review.id, actor="owner")
    assert result.resumed
    assert (result.review.status, result.review.closed_by) == ("approved", "owner")
    status = await registry.skill_status(ACME, "bad")
    assert (status.state, status.use_paused) == ("ready", False)

    # Even checked again from scratch under the same rules, the approval holds.
    async with registry.engine.begin() as conn:
        await conn.execute(sa.delete(PackageCheck))
    enqueued = await registry.rescan.start(workspace=ACME.workspace)
    await run_jobs(registry)
    job = await registry.marketplace.job(enqueued.job.id)
    assert (job.result["checked"], job.result["blocked"]) == (1, 0)
    assert (await registry.rescan.reviews(ACME.workspace)).items == []
    assert not (await registry.skill_status(ACME, "bad")).use_paused


async def test_a_restore_to_a_clean_version_closes_the_review(make_registry):
    before = await make_registry()
    await before.write_package(ACME, "bad", files("bad", "1"), expected_head=None, actor="u")
    await before.write_package(ACME, "bad", files("bad", "2", CODENAME), expected_head=1, actor="u")
    registry = await make_registry(scanner=StricterScanner())
    await registry.rescan.start()
    await run_jobs(registry)
    (review,) = (await registry.rescan.reviews(ACME.workspace)).items
    assert review.version == 2

    await registry.restore(ACME, "bad", 1, expected_head=2, actor="owner")
    # The head's package changed: the decision is closed at once, whatever moved it.
    assert (await registry.rescan.reviews(ACME.workspace)).items == []
    await registry.rescan.start()
    await run_jobs(registry)  # settles it: recorded as superseded
    assert (await registry.rescan.review(ACME.workspace, review.id)).status == "superseded"
    # The stop stays the owner's to lift, and the clean head lets them.
    assert (await registry.resume_use(ACME, "bad", actor="owner")).state == "ready"


class Killed(BaseException):
    """The worker process dies here: nothing after this point runs, the lease stays held."""


async def test_a_killed_rescan_resumes_without_rechecking_what_it_finished(make_registry):
    before = await make_registry()
    for n in range(3):
        slug = f"skill-{n}"
        text = CODENAME if n == 1 else None
        await before.write_package(
            ACME, slug, files(slug, "1", text), expected_head=None, actor="u"
        )
    clock = ManualClock()
    failpoints = ScriptedFailpoints()
    failpoints.fail("rescan.package_checked", nth=2, error=Killed())
    dying = await make_registry(
        scanner=StricterScanner(), settings=SETTINGS, clock=clock, failpoints=failpoints
    )
    enqueued = await dying.rescan.start()
    with pytest.raises(Killed):
        await dying.marketplace.worker().run_once()
    job = await dying.marketplace.job(enqueued.job.id)
    assert (job.status, job.attempts, job.progress["done"]) == ("running", 1, 0)
    finished = await checks(dying)
    assert len(finished) == 2

    clock.advance(LEASE + 1)
    counted = ScriptedFailpoints()
    registry = await make_registry(
        scanner=StricterScanner(), settings=SETTINGS, clock=clock, failpoints=counted
    )
    outcome = await registry.marketplace.worker().run_once()
    assert (outcome.job.status, outcome.job.attempts) == ("succeeded", 2)
    assert counted.hits["rescan.package_checked"] == 1
    assert outcome.job.progress["done"] == outcome.job.progress["total"] == 3
    after = await checks(registry)
    assert [row for row in after if row in finished] == finished  # untouched: not re-checked
    assert len((await registry.rescan.reviews(ACME.workspace)).items) == 1


async def test_unchanged_rules_leave_nothing_to_do(make_registry):
    registry = await make_registry()
    # Nothing stored: the rule set is recorded without a job.
    assert await registry.rescan.start_if_rules_changed() is None
    await registry.write_package(ACME, "good", files("good", "1"), expected_head=None, actor="u")
    assert await registry.rescan.start_if_rules_changed() is None
    enqueued = await registry.rescan.start()
    await run_jobs(registry)
    first = await registry.marketplace.job(enqueued.job.id)
    assert first.result["checked"] == 1  # written since the last rescan: checked once
    again = await registry.rescan.start()
    await run_jobs(registry)
    job = await registry.marketplace.job(again.job.id)
    assert (job.result["checked"], job.result["done"], job.result["total"]) == (0, 1, 1)


async def test_rules_changed_and_changed_back_are_rescanned_each_time(make_registry):
    default = await make_registry()
    await default.write_package(ACME, "good", files("good", "1"), expected_head=None, actor="u")
    stricter = await make_registry(scanner=StricterScanner())
    jobs = []
    for registry in (default, stricter, default):
        enqueued = await registry.rescan.start_if_rules_changed()
        assert enqueued is not None, "the rules differ from the last rescan's"
        await run_jobs(registry)
        jobs.append(await registry.marketplace.job(enqueued.job.id))
        assert await registry.rescan.start_if_rules_changed() is None
    assert len({j.id for j in jobs}) == 3
    assert [(j.status, j.result["checked"]) for j in jobs] == [("succeeded", 1)] * 3
