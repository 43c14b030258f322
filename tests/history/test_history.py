"""History listing, pinned reads, delete and re-create of a slug."""

from __future__ import annotations

import pytest

from registry import Scope
from registry.errors import SkillNotFound
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME


async def test_history_lists_versions_newest_first_with_their_metadata(registry):
    one = package(SLUG, files=2, tag="1")
    await registry.write_package(
        ACME, SLUG, one, expected_head=None, actor="u1", sources=["chat:1"], message="first"
    )
    two = package(SLUG, files=3, tag="2", size=100)
    await registry.write_package(ACME, SLUG, two, expected_head=1, actor="u2", sources=["job:9"])
    page = await registry.history(ACME, SLUG)
    assert page.head == 2
    assert [v.number for v in page.items] == [2, 1]
    newest, oldest = page.items
    assert (newest.actor, newest.parent, newest.sources, newest.head) == ("u2", 1, ["job:9"], True)
    assert (oldest.message, oldest.parent, oldest.sources, oldest.head) == (
        "first",
        None,
        ["chat:1"],
        False,
    )
    info = await registry.package_info(ACME, SLUG, 2)
    assert (newest.file_count, newest.total_size, newest.manifest_hash) == (
        info.manifest.file_count,
        info.manifest.total_size,
        info.manifest.hash,
    )
    assert newest.origin == "edit"
    assert newest.restored_from is None
    assert newest.available
    assert not newest.archived


async def test_history_pages_with_a_cursor(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, tag="0"), expected_head=None, actor="u")
    for n in range(1, 7):
        await registry.write_package(
            ACME, SLUG, package(SLUG, tag=str(n)), expected_head=n, actor="u"
        )
    seen, before = [], None
    while True:
        page = await registry.history(ACME, SLUG, limit=3, before=before)
        seen += [v.number for v in page.items]
        before = page.next_before
        if before is None:
            break
    assert seen == [7, 6, 5, 4, 3, 2, 1]


async def test_pinned_reads_of_every_version(registry):
    packages = [package(SLUG, tag=str(n)) for n in range(3)]
    await registry.write_package(ACME, SLUG, packages[0], expected_head=None, actor="u")
    await registry.write_package(ACME, SLUG, packages[1], expected_head=1, actor="u")
    await registry.write_package(ACME, SLUG, packages[2], expected_head=2, actor="u")
    for number, files in enumerate(packages, start=1):
        assert as_bytes((await registry.read_package(ACME, SLUG, number)).files) == as_bytes(files)


async def test_delete_then_recreate_starts_a_new_history_and_the_old_one_stays_listed(registry):
    await registry.write_package(ACME, SLUG, package(SLUG, tag="a"), expected_head=None, actor="u")
    await registry.write_package(ACME, SLUG, package(SLUG, tag="b"), expected_head=1, actor="u")
    await registry.delete(ACME, SLUG, actor="owner")
    with pytest.raises(SkillNotFound):
        await registry.history(ACME, SLUG)
    archived = await registry.history(ACME, SLUG, include_archived=True)
    assert archived.head is None
    assert [(v.number, v.archived) for v in archived.items] == [(2, True), (1, True)]
    assert SLUG not in [s.slug for s in (await registry.list_skills(ACME)).items]

    new = package(SLUG, tag="new")
    pub = await registry.write_package(ACME, SLUG, new, expected_head=None, actor="u")
    assert pub.version == 1
    live = await registry.history(ACME, SLUG)
    assert [(v.number, v.archived) for v in live.items] == [(1, False)]
    both = await registry.history(ACME, SLUG, include_archived=True)
    assert [(v.number, v.archived) for v in both.items] == [(1, False), (2, True), (1, True)]
    assert as_bytes((await registry.read_package(ACME, SLUG, 1)).files) == as_bytes(new)


async def test_history_across_workspaces_is_not_found(registry):
    await registry.write_package(ACME, SLUG, package(SLUG), expected_head=None, actor="u")
    with pytest.raises(SkillNotFound):
        await registry.history(Scope("other-co"), SLUG)
    with pytest.raises(SkillNotFound):
        await registry.history(Scope("acme", "helper"), SLUG)
