"""Source exclusion: unavailable versions, head rollback, pause, idempotent repair."""

from __future__ import annotations

import pytest

from registry import Scope
from registry.errors import SkillNotFound, SourceExcluded, VersionUnavailable
from tests.support import packages
from tests.support.faults import InjectedFault, ScriptedFailpoints
from tests.support.history import CODENAME, StricterScanner, events
from tests.support.packages import SLUG, as_bytes, package
from tests.support.scopes import ACME
from tests.support.state import db_state

TABLES = ("skills", "versions", "version_sources", "events", "source_exclusions", "proposals")


async def publish(registry, tag, sources, **options):
    """The shared `publish`, with what varies here first: the content's tag and its sources."""
    return await packages.publish(registry, tag=tag, sources=sources, actor="u", **options)


async def test_excluding_a_source_the_head_depends_on_rolls_back_to_the_newest_independent(
    registry,
):
    await publish(registry, "1", ["chat:1"])
    await publish(registry, "2", ["chat:2"], expected=1)
    await publish(registry, "3", ["chat:2", "chat:3"], expected=2)
    report = await registry.exclude_source(ACME, "chat:2", actor="dpo", reason="user request")
    assert report.newly_excluded
    (repair,) = report.repairs
    assert (repair.outcome, repair.previous_head, repair.version, repair.restored_from) == (
        "rolled_back",
        3,
        4,
        1,
    )
    head = await registry.read_package(ACME, SLUG)
    assert head.version == 4
    assert as_bytes(head.files) == as_bytes(package(SLUG, tag="1"))
    page = await registry.history(ACME, SLUG)
    assert [(v.number, v.available) for v in page.items] == [
        (4, True),
        (3, False),
        (2, False),
        (1, True),
    ]
    newest = page.items[0]
    assert (newest.origin, newest.restored_from, newest.sources) == ("restore", 1, ["chat:1"])
    assert page.items[1].unavailable_because == "chat:2"
    assert not (await registry.skill_status(ACME, SLUG)).auto_improve
    assert [e[2] for e in (await events(registry))[-2:]] == ["source_excluded", "restored"]
    for number in (2, 3):
        with pytest.raises(VersionUnavailable) as caught:
            await registry.read_package(ACME, SLUG, number)
        assert caught.value.source == "chat:2"
        with pytest.raises(VersionUnavailable):
            await registry.restore(ACME, SLUG, number, expected_head=4, actor="o")
        with pytest.raises(VersionUnavailable):
            await registry.diff(ACME, SLUG, 1, number)

    before = await db_state(registry, TABLES)
    again = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert (again.newly_excluded, again.repairs) == (False, [])
    assert await db_state(registry, TABLES) == before


async def test_excluding_a_source_only_older_versions_list_keeps_the_head(registry):
    await publish(registry, "1", ["chat:2"])
    await publish(registry, "2", ["chat:1"], expected=1)
    report = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert report.repairs == []
    assert (await registry.read_package(ACME, SLUG)).version == 2
    with pytest.raises(VersionUnavailable):
        await registry.read_package(ACME, SLUG, 1)


async def test_without_an_independent_version_the_skill_pauses_with_the_reason(registry):
    await publish(registry, "1", ["chat:2"])
    await publish(registry, "2", ["chat:2", "chat:4"], expected=1)
    report = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert [r.outcome for r in report.repairs] == ["paused"]
    status = await registry.skill_status(ACME, SLUG)
    assert (status.head, status.use_paused, status.learning_paused) == (2, True, True)
    assert status.pause_reason == "source 'chat:2' excluded"
    assert status.unavailable_because == "chat:2"
    assert (await events(registry))[-1][2] == "use_paused"
    with pytest.raises(VersionUnavailable):
        await registry.read_package(ACME, SLUG)
    with pytest.raises(VersionUnavailable):
        await registry.resume_use(ACME, SLUG, actor="o")
    before = await db_state(registry, TABLES)
    again = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert [r.outcome for r in again.repairs] == ["already_paused"]
    assert await db_state(registry, TABLES) == before
    # An owner edit with clean sources makes the skill usable again.
    await registry.edit(ACME, SLUG, package(SLUG, tag="fresh"), base_version=2, actor="o")
    assert (await registry.resume_use(ACME, SLUG, actor="o")).use_paused is False


async def test_excluding_again_finishes_an_interrupted_repair(make_registry):
    failpoints = ScriptedFailpoints()
    registry = await make_registry(failpoints=failpoints)
    for slug in ("alpha", "beta"):
        await publish(registry, "1", ["chat:1"], slug=slug)
        await publish(registry, "2", ["chat:2"], slug=slug, expected=1)
    # The second repair's write fails after the first repair committed.
    failpoints.fail("write.checked", nth=failpoints.hits["write.checked"] + 2)
    with pytest.raises(InjectedFault):
        await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert (await registry.package_info(ACME, "alpha")).version == 3
    with pytest.raises(VersionUnavailable):
        await registry.package_info(ACME, "beta")

    report = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert not report.newly_excluded
    assert [(r.slug, r.outcome, r.version) for r in report.repairs] == [("beta", "rolled_back", 3)]
    for slug in ("alpha", "beta"):
        info = await registry.package_info(ACME, slug)
        assert info.version == 3
        assert info.manifest.hash == (await registry.package_info(ACME, slug, 1)).manifest.hash
    kinds = [e[2] for e in await events(registry)]
    assert kinds.count("source_excluded") == 1
    assert kinds.count("restored") == 2
    before = await db_state(registry, TABLES)
    await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert await db_state(registry, TABLES) == before


async def test_a_write_listing_an_excluded_source_is_refused(registry):
    await publish(registry, "1", ["chat:1"])
    await registry.exclude_source(ACME, "chat:2", actor="dpo")
    before = await db_state(registry, TABLES)
    with pytest.raises(SourceExcluded) as caught:
        await publish(registry, "2", ["chat:3", "chat:2"], expected=1)
    assert caught.value.source == "chat:2"
    assert await db_state(registry, TABLES) == before


async def test_exclusion_stays_in_its_workspace(registry):
    other = Scope("other-co")
    await publish(registry, "1", ["chat:2"])
    await publish(registry, "1", ["chat:2"], scope=other)
    await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert (await registry.read_package(other, SLUG)).version == 1
    with pytest.raises(VersionUnavailable):
        await registry.read_package(ACME, SLUG)


async def test_a_deleted_skills_history_is_not_brought_back(registry):
    await publish(registry, "1", ["chat:1"])
    await publish(registry, "2", ["chat:2"], expected=1)
    await registry.delete(ACME, SLUG, actor="o")
    report = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert report.repairs == []
    with pytest.raises(SkillNotFound):
        await registry.history(ACME, SLUG)
    archived = await registry.history(ACME, SLUG, include_archived=True)
    assert [(v.number, v.archived, v.available) for v in archived.items] == [
        (2, True, False),
        (1, True, True),
    ]


async def test_the_rollback_skips_a_version_todays_content_check_blocks(make_registry):
    writer = await make_registry()
    await publish(writer, "1", ["chat:1"])
    blocked = package(SLUG, tag="2")
    blocked["references/codename.md"] = CODENAME.encode()
    await writer.write_package(ACME, SLUG, blocked, expected_head=1, actor="u", sources=["chat:1"])
    await publish(writer, "3", ["chat:2"], expected=2)
    registry = await make_registry(scanner=StricterScanner())
    report = await registry.exclude_source(ACME, "chat:2", actor="dpo")
    assert [(r.outcome, r.restored_from, r.version) for r in report.repairs] == [
        ("rolled_back", 1, 4)
    ]
