"""A revoked listing version (docs/revocation.md): installs and updates refuse it, and its
installed copies are moved off it by update jobs, the owner's edits kept.
"""

from __future__ import annotations

import pytest

from registry import PackageFile, Scope
from registry.errors import VersionRevoked
from tests.marketplace.support import LISTING, baseline, listing_files, publish_listing
from tests.support.packages import as_bytes
from tests.support.scopes import ACME

OWNER_RUN = PackageFile(b"print('the owner was here')\n", executable=True)
OTHER = Scope("globex")


async def test_copies_of_a_revoked_listing_version_move_off_it_and_keep_the_owners_edits(
    registry,
):
    await publish_listing(registry, 1)
    await publish_listing(registry, 2)
    for scope in (ACME, OTHER):
        outcome = await registry.marketplace.install(scope, LISTING, 2)
        assert outcome.succeeded, outcome.job.last_error
    edited = listing_files(version=2)
    edited["scripts/run.py"] = OWNER_RUN
    await registry.write_package(OTHER, LISTING, edited, expected_head=1, actor="owner")

    catalog = Scope(registry.settings.catalog_workspace)
    report = await registry.yank(catalog, LISTING, 2, kind="security", reason="bad", actor="adm")
    assert (report.moved_to, report.copies_updated) == (3, 2)
    with pytest.raises(VersionRevoked):
        await registry.marketplace.install(Scope("initech"), LISTING, 2)
    assert await registry.marketplace.run_jobs(drain=True) == 2

    plain = await registry.read_package(ACME, LISTING)
    assert as_bytes(plain.files) == as_bytes(listing_files(version=1))
    assert (await baseline(registry, ACME, LISTING))[2] == 3
    merged = await registry.read_package(OTHER, LISTING)
    expected = listing_files(version=1)
    expected["scripts/run.py"] = OWNER_RUN
    assert as_bytes(merged.files) == as_bytes(expected)
    # Asked again (a retried request): the jobs are keyed by the revocation.
    again = await registry.yank(catalog, LISTING, 2, kind="security", reason="bad", actor="adm")
    assert again.already
    assert await registry.marketplace.run_jobs(drain=True) == 0
