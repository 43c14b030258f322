"""fsck: it finds every kind of inconsistency, says exactly what is wrong, and lists orphans.

Damage to the store runs on both stores; damage to the database on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from blobstore import compute_digest
from registry.db.tables import Blob
from tests.support.cases import naming
from tests.support.faults import InjectedFault
from tests.support.packages import package, publish
from tests.support.scopes import ACME
from tests.support.state import store_digests


async def shared_history(registry):
    """Two versions that share `scripts/run.py`; return its digest."""
    first = package("pdf-report", tag="one")
    second = dict(package("pdf-report", tag="two"))
    second["scripts/run.py"] = first["scripts/run.py"]
    await publish(registry, files=first)
    await publish(registry, files=second, expected=1)
    info = await registry.package_info(ACME, "pdf-report")
    return info.manifest["scripts/run.py"].digest


def kinds(report):
    return [p.kind for p in report.problems]


async def test_a_clean_registry_a_corrupted_blob_a_missing_blob_and_orphans(env):
    """One registry, damaged behind its back in turn (each damage undone before the next),
    then given orphans, which fsck lists and does not count as problems."""
    digest = await shared_history(env.registry)
    report = await env.registry.gc.fsck(verify_content=True)
    assert report.clean
    assert (report.skills_checked, report.versions_checked, report.manifests_checked) == (1, 2, 2)
    assert report.blobs_checked == len(await store_digests(env.raw)) == 7
    assert report.orphan_count == 0
    assert report.store_objects == report.blobs_checked

    # A blob corrupted in the store is reported with its digest and versions.
    env.backend.corrupt(digest)
    # Without reading, a same-size corruption is invisible: existence and size only.
    assert (await env.registry.gc.fsck()).clean

    report = await env.registry.gc.fsck(verify_content=True)
    assert kinds(report) == ["blob_corrupted"]
    problem = report.problems[0]
    assert problem.digest == digest
    assert problem.references == ("acme/pdf-report@1", "acme/pdf-report@2")
    assert digest in problem.message
    assert "acme/pdf-report@1, acme/pdf-report@2" in problem.message
    env.backend.corrupt(digest)  # flipping the byte back restores it
    assert (await env.registry.gc.fsck(verify_content=True)).clean

    # A missing blob is reported without reading.
    data = await env.raw.get(digest)
    env.backend.remove(digest)
    report = await env.registry.gc.fsck()
    assert kinds(report) == ["blob_missing"]
    assert report.problems[0].digest == digest
    assert report.problems[0].references == ("acme/pdf-report@1", "acme/pdf-report@2")
    await env.raw.put(digest, data)

    await orphans_are_listed_with_their_bytes_and_are_not_problems(env)


async def orphans_are_listed_with_their_bytes_and_are_not_problems(env):
    fp = env.failpoints
    fp.fail("publish.before_commit", nth=fp.hits["publish.before_commit"] + 1)
    with pytest.raises(InjectedFault):
        await publish(env.registry, "csv-cleaner", files=package("csv-cleaner", size=100))
    stray = b"stray bytes"
    await env.raw.put(compute_digest(stray), stray)

    report = await env.registry.gc.fsck()
    assert report.clean
    by_status = {}
    for orphan in report.orphans:
        by_status.setdefault(orphan.status, []).append(orphan)
    assert len(by_status["pending"]) == 4
    assert [o.digest for o in by_status["untracked"]] == [compute_digest(stray)]
    files = package("csv-cleaner", size=100)
    sizes = sum(len(getattr(v, "data", v)) for v in files.values())
    assert report.orphan_bytes == sizes + len(stray)
    assert all(o.stored and not o.claimed for o in report.orphans)

    limited = await env.registry.gc.fsck(limit=2)
    assert (len(limited.orphans), limited.orphan_count) == (2, 5)


async def tamper(registry, sql, **params):
    async with registry.engine.begin() as conn:
        await conn.execute(sa.text(sql), params)


# Damage to the database, one kind at a time on one registry: each case damages it,
# checks what fsck says and undoes the damage (fsck is clean again before the next).


async def a_row_size_that_disagrees_with_the_store(registry, digest):
    await tamper(registry, "UPDATE blobs SET size = size + 1 WHERE digest = :d", d=digest)
    report = await registry.gc.fsck()
    assert sorted(kinds(report)) == [
        "blob_size_mismatch",
        "entry_size_mismatch",
        "entry_size_mismatch",
    ]
    mismatch = next(p for p in report.problems if p.kind == "blob_size_mismatch")
    assert mismatch.digest == digest
    await tamper(registry, "UPDATE blobs SET size = size - 1 WHERE digest = :d", d=digest)


async def a_manifest_whose_rows_do_not_hash_to_it(registry, _digest):
    flip = (
        "UPDATE manifest_entries SET executable = NOT executable "
        "WHERE path = 'SKILL.md' AND manifest_id = (SELECT min(id) FROM manifests)"
    )
    await tamper(registry, flip)
    report = await registry.gc.fsck()
    assert kinds(report) == ["manifest_mismatch"]
    assert "its rows hash to" in report.problems[0].message
    assert report.problems[0].references == ("acme/pdf-report@1",)
    await tamper(registry, flip)


async def a_head_that_names_no_version(registry, _digest):
    await tamper(registry, "UPDATE skills SET head = 7")
    report = await registry.gc.fsck()
    assert kinds(report) == ["head_missing"]
    assert report.problems[0].message == "skill head acme/pdf-report@7 names no version"
    await tamper(registry, "UPDATE skills SET head = 2")


async def a_version_that_disagrees_with_its_manifest(registry, _digest):
    async with registry.engine.connect() as conn:
        size = await conn.scalar(sa.text("SELECT total_size FROM versions WHERE number = 2"))
    await tamper(registry, "UPDATE versions SET total_size = 1 WHERE number = 2")
    report = await registry.gc.fsck()
    assert kinds(report) == ["version_manifest_mismatch"]
    assert report.problems[0].message.startswith("version acme/pdf-report@2 records 4 files / 1 B")
    await tamper(registry, "UPDATE versions SET total_size = :s WHERE number = 2", s=size)


async def a_reference_to_a_blob_being_deleted(registry, digest):
    for status in ("deleting", "pending"):
        await tamper(registry, "UPDATE blobs SET status = :s WHERE digest = :d", s=status, d=digest)
        report = await registry.gc.fsck()
        assert kinds(report) == ["referenced_not_live"], status
        assert f"its row is {status!r}" in report.problems[0].message
    await tamper(registry, "UPDATE blobs SET status = 'live' WHERE digest = :d", d=digest)


async def a_live_row_without_its_object(registry, _digest):
    ghost = compute_digest(b"never stored")
    now = datetime.now(UTC)
    async with registry.engine.begin() as conn:
        await conn.execute(
            sa.insert(Blob).values(
                digest=ghost, size=12, status="live", created_at=now, touched_at=now
            )
        )
    report = await registry.gc.fsck()
    assert kinds(report) == ["live_blob_missing"]
    assert report.problems[0].digest == ghost
    await tamper(registry, "DELETE FROM blobs WHERE digest = :d", d=ghost)


DATABASE_DAMAGE = [
    a_row_size_that_disagrees_with_the_store,
    a_manifest_whose_rows_do_not_hash_to_it,
    a_head_that_names_no_version,
    a_version_that_disagrees_with_its_manifest,
    a_reference_to_a_blob_being_deleted,
    a_live_row_without_its_object,
]


async def test_each_kind_of_database_damage_is_reported(registry):
    report = await registry.gc.fsck(verify_content=True)  # an empty registry first
    assert report.clean
    assert (report.blobs_checked, report.orphan_count, report.store_objects) == (0, 0, 0)

    digest = await shared_history(registry)
    for damage in DATABASE_DAMAGE:
        with naming(damage.__name__):
            await damage(registry, digest)
            report = await registry.gc.fsck(verify_content=True)
            assert report.clean, report.problems  # the damage was undone
