"""Catalog imports on both databases: hostile archives store nothing; good ones publish."""

from __future__ import annotations

import pytest

from registry.domain.model import Origin
from registry.errors import ArchiveRejected
from tests.corpus.archives import CASES, GOOD_FILES, LISTING, good_tar_gz, good_zip
from tests.marketplace.support import corpus_settings
from tests.support.faults import InstrumentedStore
from tests.support.scopes import CATALOG
from tests.support.state import WRITE_TABLES, db_state, live_claims, store_digests

ALL_TABLES = (*WRITE_TABLES, "jobs")


async def test_every_hostile_archive_is_refused_and_stores_nothing(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(settings=corpus_settings(), blobs=store)
    # A listing already exists, so "unchanged" covers a new version as well as a new listing.
    await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    before = await db_state(registry, ALL_TABLES)
    blobs_before = await store_digests(local_store)
    puts = store.calls["put"]
    mismatches = []
    for case in CASES:
        try:
            await registry.marketplace.import_listing(LISTING, case.build(), actor="publisher")
        except Exception as exc:
            if not case.matches(exc):
                mismatches.append(f"{case.id}: {type(exc).__name__} {exc}")
        else:
            mismatches.append(f"{case.id}: accepted")
    assert mismatches == []
    assert await db_state(registry, ALL_TABLES) == before
    assert await store_digests(local_store) == blobs_before
    assert store.calls["put"] == puts
    assert await live_claims(registry) == 0


async def test_a_zip_with_a_top_folder_becomes_a_listing_version(registry):
    result = await registry.marketplace.import_listing(
        LISTING, good_zip(f"{LISTING}/"), actor="publisher", message="first"
    )
    assert (result.format, result.stripped, result.files) == ("zip", LISTING, 3)
    assert (result.publication.version, result.publication.created) == (1, True)
    listing = await registry.marketplace.listing(LISTING)
    assert (listing.version, listing.origin, listing.actor) == (1, Origin.IMPORT.value, "publisher")
    assert listing.manifest_hash == result.publication.manifest_hash
    package = await registry.read_package(CATALOG, LISTING)
    assert {p: (f.data, f.executable) for p, f in package.files.items()} == GOOD_FILES


async def test_the_same_package_as_tar_gz_is_the_same_listing_version(registry):
    first = await registry.marketplace.import_listing(LISTING, good_zip(), actor="publisher")
    again = await registry.marketplace.import_listing(LISTING, good_tar_gz("./"), actor="publisher")
    assert again.publication.unchanged
    assert again.publication.manifest_hash == first.publication.manifest_hash


async def test_import_from_a_file_and_from_a_folder(registry, tmp_path):
    archive = tmp_path / "listing.tar.gz"
    archive.write_bytes(good_tar_gz(f"{LISTING}/"))
    from_file = await registry.marketplace.import_listing(LISTING, archive, actor="publisher")
    folder = tmp_path / "folder"
    for path, (data, executable) in GOOD_FILES.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if executable else 0o644)
    from_folder = await registry.marketplace.import_listing(LISTING, folder, actor="publisher")
    assert from_folder.format == "folder"
    assert from_folder.publication.manifest_hash == from_file.publication.manifest_hash


async def test_an_archive_file_over_the_bound_is_not_read(make_registry, tmp_path):
    registry = await make_registry(settings=corpus_settings(archive_max_bytes=1024))
    archive = tmp_path / "big.zip"
    archive.write_bytes(good_zip() + b"\0" * 4096)
    with pytest.raises(ArchiveRejected) as caught:
        await registry.marketplace.import_listing(LISTING, archive, actor="publisher")
    assert caught.value.rule == "archive_too_large"
