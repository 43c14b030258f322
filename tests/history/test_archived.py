"""Deleted skills: their versions read, compared and restored by the skill's id."""

from __future__ import annotations

import pytest

from registry import ANY, ArchivedVersion
from registry.errors import (
    ArchivedSkillAmbiguous,
    ArchivedSkillNotFound,
    HeadConflict,
    SlugTaken,
)
from tests.support.history import events
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state


async def deleted_skill(registry, *tags):
    """A skill with one version per tag, deleted; its packages and its id."""
    files = [package(SLUG, files=3, tag=t) for t in tags]
    for number, one in enumerate(files):
        await registry.write_package(
            ACME, SLUG, one, expected_head=number or None, actor="u", sources=[f"chat:{number}"]
        )
    skill_id = (await registry.package_info(ACME, SLUG)).skill_id
    await registry.delete(ACME, SLUG, actor="owner")
    return files, skill_id


async def test_a_restore_brings_the_deleted_skill_back_and_continues_its_history(registry):
    files, skill_id = await deleted_skill(registry, "a", "b")
    with pytest.raises(HeadConflict):  # the compare-and-swap is on the deleted skill's head
        await registry.restore(ACME, SLUG, ArchivedVersion(1, skill_id), expected_head=1, actor="o")
    pub = await registry.restore(
        ACME, SLUG, ArchivedVersion(1, skill_id), expected_head=2, actor="owner"
    )
    assert (pub.version, pub.created, pub.retired, pub.uploaded) == (3, True, 2, 0)
    head = await registry.read_package(ACME, SLUG)
    assert (head.skill_id, head.version, head.archived) == (skill_id, 3, False)
    assert as_bytes(head.files) == as_bytes(files[0])
    page = await registry.history(ACME, SLUG, include_archived=True)
    assert [(v.number, v.skill_id, v.archived) for v in page.items] == [
        (3, skill_id, False),
        (2, skill_id, False),
        (1, skill_id, False),
    ]
    newest = page.items[0]
    assert (newest.origin, newest.restored_from, newest.parent, newest.sources) == (
        "restore",
        1,
        2,
        ["chat:0"],
    )
    assert (await events(registry))[-1] == (ACME.workspace, SLUG, "restored")
    assert (await registry.trust.verify(ACME, SLUG)).predicate["origin"] == "restore"
    assert [s.slug for s in (await registry.list_skills(ACME)).items] == [SLUG]
    status = await registry.skill_status(ACME, SLUG)
    assert (status.state, status.auto_improve) == ("ready", False)
    # It is live again: a second restore of the same archived version finds nothing deleted
    # (a retried restore whose reply was lost is settled by its write id, not by this).
    with pytest.raises(ArchivedSkillNotFound):
        await registry.restore(
            ACME, SLUG, ArchivedVersion(1, skill_id), expected_head=ANY, actor="o"
        )


async def test_the_restore_is_refused_when_a_new_skill_took_the_slug(registry):
    _, old_id = await deleted_skill(registry, "a", "b")
    await registry.write_package(
        ACME, SLUG, package(SLUG, tag="new"), expected_head=None, actor="u"
    )
    live_id = (await registry.package_info(ACME, SLUG)).skill_id
    before = await db_state(registry)
    with pytest.raises(SlugTaken) as refused:
        await registry.restore(ACME, SLUG, ArchivedVersion(2, old_id), expected_head=2, actor="o")
    assert refused.value.details() == {
        "slug": SLUG,
        "skill_id": old_id,
        "live_skill": live_id,
        "live_head": 1,
    }
    assert await db_state(registry) == before


async def test_two_deleted_skills_of_one_slug_are_told_apart_read_and_compared(registry):
    first, first_id = await deleted_skill(registry, "a1", "a2")
    second, second_id = await deleted_skill(registry, "b1")
    live = package(SLUG, files=3, tag="live")
    await registry.write_package(ACME, SLUG, live, expected_head=None, actor="u")

    page = await registry.history(ACME, SLUG, include_archived=True)
    assert [(v.number, v.skill_id, v.archived) for v in page.items][1:] == [
        (1, second_id, True),
        (2, first_id, True),
        (1, first_id, True),
    ]
    only = await registry.history(ACME, SLUG, skill_id=first_id)
    assert [(v.number, v.skill_id) for v in only.items] == [(2, first_id), (1, first_id)]

    with pytest.raises(ArchivedSkillAmbiguous) as ambiguous:
        await registry.package_info(ACME, SLUG, ArchivedVersion(1))
    assert [c["skill_id"] for c in ambiguous.value.candidates] == [second_id, first_id]
    with pytest.raises(ArchivedSkillNotFound):
        await registry.package_info(ACME, SLUG, ArchivedVersion(1, second_id + 1000))

    read = await registry.read_package(ACME, SLUG, ArchivedVersion(1, first_id))
    assert (read.version, read.head, read.archived) == (1, 2, True)
    assert as_bytes(read.files) == as_bytes(first[0])
    other = await registry.read_package(ACME, SLUG, ArchivedVersion(1, second_id))
    assert as_bytes(other.files) == as_bytes(second[0])

    within = await registry.diff(
        ACME, SLUG, ArchivedVersion(1, first_id), ArchivedVersion(2, first_id)
    )
    assert within.files
    assert (within.a.archived_skill, within.b.label) == (
        first_id,
        f"v2 of deleted skill {first_id}",
    )
    against_live = await registry.diff(ACME, SLUG, ArchivedVersion(1, second_id), 1)
    assert [(f.path, f.status) for f in against_live.files] == [
        (p, "changed") for p in sorted(live)
    ]
    assert against_live.b.archived_skill is None
