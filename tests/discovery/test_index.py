"""`reg.discovery` on both databases: what an owner publishes, and the index it makes.

The index lists the published skills a reconcile would materialise; each entry's digest is
the SHA-256 of exactly the artifact served; digests are cached per package state, so a
warm index reads no blob; artifacts are immutable per version, and the registry's own
archive reader takes back what it serves.
"""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa

from registry.domain.archive import read_archive
from registry.domain.model import ANY, PackageFile, Scope
from registry.errors import (
    HeadConflict,
    Inconsistency,
    NotFound,
    SkillNotFound,
    VersionNotFound,
    VersionUnavailable,
)
from registry.settings import Settings
from tests.support.faults import InstrumentedStore
from tests.support.history import events
from tests.support.packages import package, publish, skill_md
from tests.support.scopes import ACME, GLOBEX

SINGLE = {"SKILL.md": skill_md("single", "One file only.")}


async def _publish_two(registry) -> None:
    await publish(registry, "single", SINGLE)
    await publish(registry, "multi", package("multi"))


async def test_a_scope_publishes_nothing_until_its_owner_says_so(registry):
    await _publish_two(registry)
    settings = await registry.discovery.settings(ACME)
    assert (settings.enabled, settings.revision, settings.skills) == (False, 0, ())
    with pytest.raises(NotFound):
        await registry.discovery.index(ACME)


async def test_publishing_one_by_one_and_everything(registry):
    await _publish_two(registry)
    settings = await registry.discovery.update(ACME, actor="owner", add=["single"])
    assert (settings.revision, settings.everything, settings.public) == (1, False, False)
    assert settings.skills == ("single",)
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == ["single"]
    settings = await registry.discovery.update(ACME, actor="owner", everything=True, public=True)
    assert (settings.revision, settings.everything, settings.public) == (2, True, True)
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == [
        "multi",
        "single",
    ]
    settings = await registry.discovery.update(
        ACME, actor="owner", everything=False, remove=["single"]
    )
    assert (settings.revision, settings.skills) == (3, ())
    assert (await registry.discovery.index(ACME)).entries == ()


async def test_each_change_is_one_event_and_a_no_op_writes_nothing(registry):
    await _publish_two(registry)
    before = len(await events(registry))
    await registry.discovery.update(ACME, actor="owner", add=["single"], public=True)
    again = await registry.discovery.update(ACME, actor="owner", add=["single"], public=True)
    assert again.revision == 1
    kinds = [kind for _, _, kind in (await events(registry))[before:]]
    assert kinds == ["discovery_changed"]


async def test_changes_compare_and_swap_on_the_revision(registry):
    await _publish_two(registry)
    await registry.discovery.update(ACME, actor="owner", add=["single"], expected_revision=None)
    with pytest.raises(HeadConflict) as stale:
        await registry.discovery.update(ACME, actor="b", add=["multi"], expected_revision=None)
    assert (stale.value.expected, stale.value.current) == (None, 1)
    await registry.discovery.update(ACME, actor="owner", add=["multi"], expected_revision=1)
    with pytest.raises(HeadConflict):
        await registry.discovery.update(ACME, actor="owner", public=True, expected_revision=1)
    assert (await registry.discovery.settings(ACME)).skills == ("multi", "single")


async def test_an_unknown_slug_changes_nothing(registry):
    await _publish_two(registry)
    with pytest.raises(SkillNotFound):
        await registry.discovery.update(ACME, actor="owner", add=["single", "nope"])
    assert (await registry.discovery.settings(ACME)).revision == 0


async def test_the_index_lists_what_a_reconcile_would_materialise(registry):
    await _publish_two(registry)
    for slug in ("paused", "deleted"):
        await publish(registry, slug, package(slug))
    await registry.discovery.update(ACME, actor="owner", everything=True)
    await registry.stop_using(ACME, "paused", actor="owner")
    await registry.delete(ACME, "deleted", actor="owner")
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == [
        "multi",
        "single",
    ]
    await registry.resume_use(ACME, "paused", actor="owner")
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == [
        "multi",
        "paused",
        "single",
    ]


async def test_a_slug_created_again_is_not_published_by_the_old_decision(registry):
    await publish(registry, "single", SINGLE)
    await registry.discovery.update(ACME, actor="owner", add=["single"])
    await registry.delete(ACME, "single", actor="owner")
    await publish(registry, "single", SINGLE)
    assert (await registry.discovery.index(ACME)).entries == ()
    assert (await registry.discovery.settings(ACME)).skills == ()


async def test_entries_name_their_head_and_the_sha256_of_the_artifact_served(registry):
    await _publish_two(registry)
    await registry.discovery.update(ACME, actor="owner", everything=True)
    await publish(registry, "multi", package("multi", tag="v2"), 1)
    entries = {e.slug: e for e in (await registry.discovery.index(ACME)).entries}
    single, multi = entries["single"], entries["multi"]
    assert (single.type, single.version, single.description) == ("skill-md", 1, "One file only.")
    served = await registry.discovery.file(ACME, "single", 1, "SKILL.md")
    assert served.data == SINGLE["SKILL.md"]
    assert single.sha256 == hashlib.sha256(served.data).hexdigest()
    assert (multi.type, multi.version) == ("archive", 2)
    archive = await registry.discovery.archive(ACME, "multi", 2)
    assert multi.sha256 == hashlib.sha256(archive.data).hexdigest() == archive.sha256
    assert multi.size == len(archive.data)


async def test_the_registrys_archive_reader_takes_back_what_it_serves(registry):
    files = {
        **package("multi"),
        "references/caf\u00e9.md": "d\u00e9j\u00e0\n".encode(),
        "assets/empty.bin": b"",
    }
    await publish(registry, "multi", files)
    await registry.discovery.update(ACME, actor="owner", add=["multi"])
    archive = await registry.discovery.archive(ACME, "multi", 1)
    expected = {p: v if isinstance(v, PackageFile) else PackageFile(v) for p, v in files.items()}
    contents = read_archive(archive.data)
    assert contents.files == expected
    assert contents.stripped is None


async def test_older_versions_stay_served_byte_for_byte(registry):
    await publish(registry, "multi", package("multi"))
    await registry.discovery.update(ACME, actor="owner", add=["multi"])
    first = await registry.discovery.archive(ACME, "multi", 1)
    await publish(registry, "multi", package("multi", tag="v2"), 1)
    again = await registry.discovery.archive(ACME, "multi", 1)
    assert again.data == first.data
    with pytest.raises(VersionNotFound):
        await registry.discovery.archive(ACME, "multi", 3)
    with pytest.raises(NotFound):
        await registry.discovery.file(ACME, "multi", 1, "references/none.md")


async def test_a_warm_index_reads_no_blob(make_registry, local_store):
    store = InstrumentedStore(local_store)
    registry = await make_registry(blobs=store)
    await _publish_two(registry)
    await registry.discovery.update(ACME, actor="owner", everything=True)
    await registry.discovery.index(ACME)
    reads = store.calls["get"]
    assert reads > 0
    for _ in range(3):
        await registry.discovery.index(ACME)
    assert store.calls["get"] == reads
    # A HEAD (no data) of a cached archive reads nothing either.
    head = await registry.discovery.archive(ACME, "multi", 1, data=False)
    assert (head.data, store.calls["get"]) == (None, reads)
    assert head.sha256 is not None


async def test_bytes_that_disagree_with_the_recorded_digest_are_never_served(registry):
    await publish(registry, "multi", package("multi"))
    await registry.discovery.update(ACME, actor="owner", add=["multi"])
    await registry.discovery.index(ACME)
    async with registry.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE discovery_artifacts SET sha256 = :x"), {"x": "0" * 64})
    with pytest.raises(Inconsistency):
        await registry.discovery.archive(ACME, "multi", 1)


async def test_an_unreadable_head_is_not_listed(registry):
    await publish(registry, "multi", package("multi"))
    await publish(registry, "multi", package("multi", tag="v2"), 1, sources=["chat:leaky"])
    await registry.discovery.update(ACME, actor="owner", add=["multi"])
    # Excluding the source repairs the head (a restore of version 1 as version 3).
    await registry.exclude_source(ACME, "chat:leaky", actor="owner")
    [entry] = (await registry.discovery.index(ACME)).entries
    assert entry.version == 3
    with pytest.raises(VersionUnavailable):
        await registry.discovery.archive(ACME, "multi", 2)


async def test_clients_would_refuse_it_so_it_is_not_listed(make_registry):
    registry = await make_registry(settings=Settings(max_files=1200, max_package_bytes=2**27))
    many = {"SKILL.md": skill_md("many"), **{f"f/{i}": b"x" for i in range(1000)}}
    await publish(registry, "many", many)
    await publish(registry, "single", SINGLE)
    await registry.discovery.update(ACME, actor="owner", everything=True)
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == ["single"]


async def test_one_scope_never_shows_another(registry):
    await publish(registry, "single", SINGLE)
    await publish(registry, "theirs", package("theirs"), scope=GLOBEX)
    helper = Scope(ACME.workspace, "helper")
    await publish(registry, "helpers", package("helpers"), scope=helper)
    await registry.discovery.update(ACME, actor="owner", everything=True)
    await registry.discovery.update(GLOBEX, actor="owner", everything=True)
    assert [e.slug for e in (await registry.discovery.index(ACME)).entries] == ["single"]
    assert [e.slug for e in (await registry.discovery.index(GLOBEX)).entries] == ["theirs"]
    with pytest.raises(NotFound):
        await registry.discovery.index(helper)
    with pytest.raises(VersionNotFound):
        await registry.discovery.archive(ACME, "theirs", 1)
    with pytest.raises(SkillNotFound):
        await registry.discovery.update(ACME, actor="owner", add=["theirs"], expected_revision=ANY)
