"""The write path over the S3 protocol (moto's server over real HTTP), on both databases."""

from __future__ import annotations

import pytest

from blobstore import open_blobstore
from registry.errors import StorageUnavailable
from tests.support.faults import InstrumentedStore
from tests.support.packages import as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state, live_claims, store_digests

pytestmark = pytest.mark.s3


@pytest.fixture
async def s3_store(s3_blob_url):
    store = open_blobstore(s3_blob_url)
    await store.ensure()
    yield store
    await store.close()


async def test_publish_and_read_through_s3(make_registry, s3_store):
    registry = await make_registry(blobs=s3_store)
    files = package("pdf-report", files=12, size=4096)
    pub = await registry.write_package(ACME, "pdf-report", files, expected_head=None, actor="u")
    assert pub.uploaded == 13
    package_read = await registry.read_package(ACME, "pdf-report")
    assert as_bytes(package_read.files) == as_bytes(files)
    assert {e.digest for e in package_read.manifest.entries} <= await store_digests(s3_store)


async def test_failed_s3_put_leaves_the_previous_package(make_registry, s3_store):
    store = InstrumentedStore(s3_store)
    registry = await make_registry(blobs=store)
    old = package("pdf-report", files=3)
    await registry.write_package(ACME, "pdf-report", old, expected_head=None, actor="u")
    before = await db_state(registry)
    store.calls.clear()
    store.fail_puts = {2}
    with pytest.raises(StorageUnavailable):
        await registry.write_package(
            ACME,
            "pdf-report",
            package("pdf-report", files=5, tag="new"),
            expected_head=1,
            actor="u",
        )
    assert await db_state(registry) == before
    assert as_bytes((await registry.read_package(ACME, "pdf-report")).files) == as_bytes(old)
    assert await live_claims(registry) == 0
    store.fail_puts = set()
    pub = await registry.write_package(
        ACME, "pdf-report", package("pdf-report", files=5, tag="new"), expected_head=1, actor="u"
    )
    assert pub.version == 2
