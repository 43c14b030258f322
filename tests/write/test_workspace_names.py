"""Workspace names: the slug rules everywhere a workspace is accepted; which ones exist.

A workspace is named as a skill is (`check_workspace`), so `ACME` cannot start a second
workspace beside `acme`: `Scope`, and with it every write, read and token, refuses it
naming the rule, and nothing is stored. A workspace exists once anything was recorded for
it (registry/db/workspaces.py): a skill, a deleted one too, or a token, a revoked one too;
`require_workspace` refuses any other name with the nearest existing ones, and
`explain_not_found` turns a missing skill into the nearest slugs (both databases).
"""

from __future__ import annotations

import pytest

from registry.domain.model import Scope, check_workspace
from registry.errors import InvalidName, SkillNotFound, WorkspaceNotFound
from tests.support.packages import publish
from tests.support.scopes import ACME
from tests.support.state import table_rows


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("ACME", "lower case only"),
        ("acme_co", "only letters, digits and '-'"),
        ("acme.co", "only letters, digits and '-'"),
        ("-acme", "no leading/trailing '-'"),
        ("ac--me", "no consecutive hyphens ('--')"),
        ("a" * 65, "1-64 characters"),
    ],
)
def test_a_workspace_name_breaking_the_slug_rules_is_refused_naming_the_rule(name, rule):
    with pytest.raises(InvalidName) as refused:
        Scope(name)
    assert (refused.value.kind, refused.value.rule) == ("workspace", rule)
    assert check_workspace("café-team") == "café-team"


async def test_no_write_or_token_starts_an_upper_case_workspace(registry):
    await publish(registry)
    with pytest.raises(InvalidName):
        await registry.tokens.create("ACME", "read", actor="t")
    with pytest.raises(InvalidName):
        await registry.learning.decisions("ACME")
    assert await table_rows(registry, "api_tokens") == []
    with pytest.raises(WorkspaceNotFound):
        await registry.require_workspace("other")


async def test_a_workspace_exists_once_anything_was_recorded_for_it(registry):
    with pytest.raises(WorkspaceNotFound) as empty:
        await registry.require_workspace("acme")
    assert empty.value.nearest == []
    await publish(registry, "pdf-report")
    await registry.delete(ACME, "pdf-report", actor="owner")
    await registry.require_workspace("acme")  # its only skill deleted: still there
    issued = await registry.tokens.create("globex", "read", actor="t")
    await registry.tokens.revoke(issued.info.id, actor="t")
    await registry.require_workspace("globex")  # a revoked token is still a record
    with pytest.raises(WorkspaceNotFound) as misspelt:
        await registry.require_workspace("acmee")
    assert misspelt.value.nearest == ["acme"]
    assert str(misspelt.value) == "workspace 'acmee' not found; nearest: acme"


async def test_a_missing_skill_is_explained_with_the_nearest_names(registry):
    await publish(registry, "pdf-report")
    await publish(registry, "pdf-render")
    slug = await registry.explain_not_found(SkillNotFound("acme", "personal", "pdf-reprt"))
    assert isinstance(slug, SkillNotFound)
    assert slug.nearest == ["pdf-report", "pdf-render"]
    where = await registry.explain_not_found(SkillNotFound("acmee", "personal", "pdf-report"))
    assert isinstance(where, WorkspaceNotFound)
    assert where.nearest == ["acme"]
