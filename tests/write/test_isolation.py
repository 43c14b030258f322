"""I8: a skill of another workspace is invisible to every call."""

from __future__ import annotations

import pytest

from registry import ANY, Scope
from registry.errors import NotFound, SkillNotFound
from tests.support.packages import package
from tests.support.scopes import ACME as OWNER
from tests.support.scopes import GLOBEX as OTHER


@pytest.fixture
async def seeded(registry):
    await registry.write_package(
        OWNER, "pdf-report", package("pdf-report"), expected_head=None, actor="u"
    )
    await registry.write_package(
        OWNER, "pdf-report", package("pdf-report", tag="2"), expected_head=1, actor="u"
    )
    return registry


async def test_reads_from_another_workspace_are_not_found(seeded):
    for call in (
        seeded.read_package(OTHER, "pdf-report"),
        seeded.read_package(OTHER, "pdf-report", 1),
        seeded.package_info(OTHER, "pdf-report"),
    ):
        with pytest.raises(SkillNotFound):
            await call
    assert (await seeded.list_skills(OTHER)).items == []


async def test_another_agent_of_the_same_workspace_is_a_different_scope(seeded):
    with pytest.raises(NotFound):
        await seeded.read_package(Scope("acme", "helper"), "pdf-report")


async def test_an_update_from_another_workspace_cannot_touch_the_skill(seeded):
    with pytest.raises(SkillNotFound):
        await seeded.write_package(
            OTHER, "pdf-report", package("pdf-report", tag="x"), expected_head=2, actor="m"
        )
    # creating the same slug elsewhere is a new, separate skill
    pub = await seeded.write_package(
        OTHER, "pdf-report", package("pdf-report", tag="x"), expected_head=ANY, actor="m"
    )
    assert pub.version == 1
    assert (await seeded.package_info(OWNER, "pdf-report")).version == 2
