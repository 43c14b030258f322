"""Install jobs on both databases: a listing version copied into a workspace, once."""

from __future__ import annotations

import pytest

from registry import PackageFile, Scope
from registry.errors import (
    CapacityExceeded,
    ListingNotFound,
    OwnershipConflict,
    SkillExists,
)
from registry.settings import Settings
from tests.marketplace.support import (
    LISTING,
    baseline,
    events,
    job_rows,
    listing_files,
    publish_listing,
    versions,
)
from tests.support.faults import InstrumentedStore
from tests.support.packages import as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state


async def test_install_copies_the_listing_with_its_baseline_and_uploads_nothing(
    make_registry, local_store
):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    listed = await publish_listing(registry)
    puts = store.calls["put"]
    outcome = await registry.marketplace.install(ACME, LISTING)
    assert outcome.succeeded, outcome.job.last_error
    assert outcome.job.result["outcome"] == "installed"
    assert outcome.job.attempts == 1
    assert store.calls["put"] == puts  # content addressing: no blob copied
    copy = await registry.read_package(ACME, LISTING)
    assert as_bytes(copy.files) == as_bytes(listing_files())
    assert copy.manifest_hash == listed.manifest_hash
    assert copy.origin == "marketplace_install"
    assert await baseline(registry, ACME, LISTING) == (
        "installed",
        LISTING,
        1,
        listed.manifest_hash,
    )
    assert await events(registry, "acme") == [("published", LISTING, 1)]


async def test_same_install_twice_with_one_key_installs_once(registry):
    await publish_listing(registry)
    first = await registry.marketplace.enqueue_install(ACME, LISTING, key="order-42")
    second = await registry.marketplace.enqueue_install(ACME, LISTING, key="order-42")
    assert first.created
    assert not second.created
    assert second.job.id == first.job.id
    assert await registry.marketplace.run_jobs(drain=True) == 1
    again = await registry.marketplace.install(ACME, LISTING, key="order-42")
    assert again.job.id == first.job.id
    assert (again.job.status, again.job.attempts) == ("succeeded", 1)
    assert len(await job_rows(registry)) == 1
    assert await versions(registry, ACME, LISTING) == [(1, "marketplace_install")]
    assert await events(registry, "acme") == [("published", LISTING, 1)]


async def test_the_default_key_is_one_per_scope_listing_and_version(registry):
    await publish_listing(registry)
    first = await registry.marketplace.install(ACME, LISTING)
    second = await registry.marketplace.install(ACME, LISTING)
    assert second.job.id == first.job.id
    other = await registry.marketplace.install(Scope("acme", "helper"), LISTING)
    assert other.job.id != first.job.id
    assert other.succeeded


async def test_an_install_never_replaces_an_owner_saved_skill(registry):
    await publish_listing(registry)
    await registry.write_package(
        ACME, LISTING, package(LISTING, tag="mine"), expected_head=None, actor="owner"
    )
    before = await db_state(registry)
    outcome = await registry.marketplace.install(ACME, LISTING)
    assert isinstance(outcome.error, OwnershipConflict)
    assert (outcome.job.status, outcome.job.attempts) == ("failed", 1)
    assert outcome.job.last_error["code"] == "ownership_conflict"
    assert outcome.job.last_error["permanent"] is True
    assert await db_state(registry) == before


async def test_an_owner_saved_skill_with_the_listing_package_is_not_adopted(registry):
    await publish_listing(registry)
    await registry.write_package(ACME, LISTING, listing_files(), expected_head=None, actor="owner")
    outcome = await registry.marketplace.install(ACME, LISTING)
    assert isinstance(outcome.error, OwnershipConflict)
    assert (await baseline(registry, ACME, LISTING))[0] == "saved"


async def test_installed_copies_have_their_own_capacity_budget(make_registry):
    # The catalog is an ordinary scope: its two listings fit a budget of two saved skills.
    registry = await make_registry(settings=Settings(capacity_saved=2, capacity_installed=1))
    await publish_listing(registry)
    await publish_listing(registry, slug="csv-cleaner", slug_files="csv-cleaner")
    for slug in ("mine", "also-mine"):
        await registry.write_package(ACME, slug, package(slug), expected_head=None, actor="o")
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    outcome = await registry.marketplace.install(ACME, "csv-cleaner")
    assert isinstance(outcome.error, CapacityExceeded)
    assert outcome.error.budget == "installed"
    assert outcome.job.status == "failed"


async def test_install_a_pinned_older_version(registry):
    first = await publish_listing(registry, 1)
    await publish_listing(registry, 2)
    outcome = await registry.marketplace.install(ACME, LISTING, 1)
    assert outcome.succeeded
    assert outcome.job.result["listing_version"] == 1
    assert (await registry.read_package(ACME, LISTING)).manifest_hash == first.manifest_hash


async def test_installing_over_another_installed_version_is_refused(registry):
    await publish_listing(registry, 1)
    await publish_listing(registry, 2)
    assert (await registry.marketplace.install(ACME, LISTING, 1)).succeeded
    outcome = await registry.marketplace.install(ACME, LISTING, 2)
    assert isinstance(outcome.error, SkillExists)
    assert outcome.job.status == "failed"


async def test_an_unknown_listing_is_refused_when_enqueued(registry):
    with pytest.raises(ListingNotFound):
        await registry.marketplace.enqueue_install(ACME, "no-such-listing")
    await publish_listing(registry)
    with pytest.raises(ListingNotFound):
        await registry.marketplace.enqueue_install(ACME, LISTING, 7)
    assert await job_rows(registry) == []


async def test_an_edited_copy_keeps_its_kind_and_baseline(registry):
    listed = await publish_listing(registry)
    await registry.marketplace.install(ACME, LISTING)
    files = listing_files()
    files["scripts/run.py"] = PackageFile(b"print('mine')\n", executable=True)
    await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    assert await baseline(registry, ACME, LISTING) == (
        "installed",
        LISTING,
        1,
        listed.manifest_hash,
    )
