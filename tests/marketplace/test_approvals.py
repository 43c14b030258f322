"""Content-check approvals travel with listing files into copies, and through merges."""

from __future__ import annotations

import pytest

from registry import FindingRef
from registry.errors import ContentBlocked
from tests.marketplace.support import LISTING, listing_files, publish_listing
from tests.support.history import github_token
from tests.support.scopes import ACME

CONFIG = "references/config.md"
APPROVED = github_token("listing-approved")
NEW = github_token("owner-new")


def _with_config(version: int, *values: str):
    files = listing_files(version=version)
    files[CONFIG] = "".join(f"token: {v}\n" for v in values).encode()
    return files


async def _approved_listing(registry, version: int = 1):
    files = _with_config(version, APPROVED)
    with pytest.raises(ContentBlocked):
        await registry.marketplace.publish_listing(LISTING, files, actor="publisher")
    return await registry.marketplace.publish_listing(
        LISTING, files, actor="publisher", approve=[FindingRef(CONFIG, 1)]
    )


async def test_an_installed_copy_keeps_the_listings_approvals_for_its_files(registry):
    await _approved_listing(registry)
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    # The owner edits another file; the approved value stays where it was approved.
    files = _with_config(1, APPROVED)
    files["references/notes.md"] = b"# Notes\n\nthe owner's notes\n"
    pub = await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    assert pub.version == 2
    # A new value is checked as always.
    files[CONFIG] = f"token: {APPROVED}\ntoken: {NEW}\n".encode()
    with pytest.raises(ContentBlocked) as caught:
        await registry.write_package(ACME, LISTING, files, expected_head=2, actor="owner")
    assert (caught.value.path, caught.value.ordinal) == (CONFIG, 2)


async def test_a_merge_takes_upstream_approvals_for_the_files_it_takes(registry):
    await publish_listing(registry, 1)
    assert (await registry.marketplace.install(ACME, LISTING)).succeeded
    files = listing_files()
    files["references/notes.md"] = b"# Notes\n\nthe owner's notes\n"
    await registry.write_package(ACME, LISTING, files, expected_head=1, actor="owner")
    await _approved_listing(registry, 2)  # upstream adds an approved value in a new file
    outcome = await registry.marketplace.update(ACME, LISTING)
    assert outcome.succeeded, outcome.job.last_error
    assert outcome.job.result["outcome"] == "merged"
    copy = await registry.read_package(ACME, LISTING)
    assert copy.files[CONFIG].data == f"token: {APPROVED}\n".encode()
    assert copy.files["references/notes.md"].data == b"# Notes\n\nthe owner's notes\n"
