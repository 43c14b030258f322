"""The benchmark seeding leaves a registry the registry itself finds consistent.

The reconcile and GC scenarios seed thousands of skills and blobs with bulk SQL (`COPY` on
PostgreSQL) and write objects straight into the store's layout. If that drifted from what
a committed write leaves, the figures would measure a registry that cannot exist; these
tests hold it to `fsck --verify-content`, reads and a GC run, on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.content import package
from bench.seed import AGE, blob_bytes, seed_blobs, seed_orphans, seed_packages
from registry.domain.model import Scope

PACKAGES = Scope("seeded")
BLOBS = Scope("blobs")


async def test_seeded_skills_and_blobs_are_consistent_and_collectable(registry, local_store):
    at = datetime.now(UTC) - AGE
    packages = {f"s-{i}": package(f"s-{i}", files=3, size=512, tag=str(i)) for i in range(4)}
    blobs = [blob_bytes("test", i, 64) for i in range(12)]

    await seed_packages(registry.engine, local_store.root, PACKAGES, packages, at=at)
    await seed_blobs(
        registry.engine, local_store.root, BLOBS, blobs, referenced=10, files_per_package=4, at=at
    )

    report = await registry.gc.fsck(verify_content=True)
    assert report.clean, report.problems
    assert report.skills_checked == 4 + 3  # 10 referenced blobs in packages of 4, 4, 2
    assert report.orphan_count == 2
    for slug, files in packages.items():
        read = await registry.read_package(PACKAGES, slug)
        assert {path: f.data for path, f in read.files.items()} == files

    collected = await registry.gc.collect()
    assert collected.blobs_reclaimed == 2

    # Putting the orphans back (what the GC scenario does before each run) is idempotent.
    await seed_orphans(registry.engine, local_store.root, blobs[10:], at=at)
    await seed_orphans(registry.engine, local_store.root, blobs[10:], at=at)
    again = await registry.gc.fsck()
    assert again.clean
    assert again.orphan_count == 2
