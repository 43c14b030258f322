"""Retention keeps the catalog listing versions installed copies are based on."""

from __future__ import annotations

from tests.marketplace.support import LISTING, publish_listing, versions
from tests.support.scopes import ACME, CATALOG


async def test_a_listing_version_a_copy_follows_survives_retention_and_merges_still_work(
    registry,
):
    await publish_listing(registry, 1)
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    for version in (2, 3, 4):
        await publish_listing(registry, version)
    report = await registry.gc.prune(keep_versions=1)
    # Version 1 is the copy's baseline (in another workspace); 2 and 3 are nobody's.
    assert [v for v, _ in await versions(registry, CATALOG, LISTING)] == [1, 4]
    assert report is not None
    files = (await registry.read_package(ACME, LISTING)).files
    files["references/notes.md"] = b"# Notes\n\nthe owner's notes\n"
    await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.job.result["outcome"] == "merged", outcome.job.last_error


async def test_the_listing_version_a_pending_proposal_brings_survives_retention(registry):
    # The copy is edited, so an update with `propose` records a proposal whose decision
    # moves the copy's baseline to version 2. Until then version 2 is nobody's baseline,
    # yet pruning it would leave the applied copy with a merge base that no longer exists.
    await publish_listing(registry, 1)
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    files = (await registry.read_package(ACME, LISTING)).files
    files["references/notes.md"] = b"# Notes\n\nthe owner's notes\n"
    await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    await publish_listing(registry, 2)
    proposed = await registry.marketplace.update(ACME, LISTING, policy="propose")
    assert proposed.job.result["outcome"] == "proposed", proposed.job.last_error
    for version in (3, 4):
        await publish_listing(registry, version)

    await registry.gc.prune(keep_versions=1)
    assert [v for v, _ in await versions(registry, CATALOG, LISTING)] == [1, 2, 4]

    await registry.decide(ACME, proposed.job.result["proposal"], "apply", actor="owner")
    await publish_listing(registry, 5)
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.job.result["outcome"] == "merged", outcome.job.last_error
    assert outcome.job.result["kept"] == ["references/notes.md"]
