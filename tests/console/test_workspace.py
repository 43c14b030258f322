"""The workspace-wide questions (one place each), the search box, and the shipped files."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

import httpx

from registry.api import Registry
from registry.console import workspace as ws
from registry.domain.model import Scope
from registry.http.app import create_app
from tests.console.site import WS, make_site, publish, skill_md

ROOT = Path(__file__).resolve().parents[2]


async def test_agents_are_the_ones_with_live_skills(site):
    await publish(site.registry, "one", {"SKILL.md": skill_md("one")})
    await publish(site.registry, "two", {"SKILL.md": skill_md("two")}, agent="bot")
    await publish(site.registry, "gone", {"SKILL.md": skill_md("gone")}, agent="old")
    await site.registry.delete(Scope(WS, "old"), "gone", actor="owner")
    assert await site.registry.agents(WS) == ["bot", "personal"]
    groups = await ws.skills_by_agent(site.registry, WS)
    assert [(g.agent, [r.skill.slug for r in g.skills]) for g in groups] == [
        ("bot", ["two"]),
        ("personal", ["one"]),
    ]
    assert groups[0].skills[0].head.origin == "edit"
    assert await ws.pending_writes(site.registry, WS) is None


@dataclass
class Hit:
    slug: str
    description: str
    agent: str = "personal"


class SearchingRegistry(Registry):
    async def search(self, workspace: str, query: str) -> list[Hit]:
        return [Hit("one", f"found {query} in {workspace}")]


async def test_the_search_box_shows_only_when_the_registry_can_search(site, registry):
    await site.signin("read")
    page = (await site.client.get(f"/console/{WS}/")).text
    assert 'role="search"' not in page
    assert (await site.client.get(f"/console/{WS}/search?q=x")).status_code == 404
    searching = SearchingRegistry(registry.engine, registry.blobs, registry.settings)
    app = create_app(searching)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://c.test"
    ) as client:
        other = await make_site(searching, client)
        await other.signin("read")
        assert 'role="search"' in (await client.get(f"/console/{WS}/")).text
        results = (await client.get(f"/console/{WS}/search?q=pdf")).text
        assert "found pdf in acme" in results


def test_the_package_ships_every_template_and_static_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["registry"]
    shipped = ROOT / "registry"
    files = [
        p.relative_to(shipped).as_posix()
        for folder in ("console/templates", "console/static")
        for p in (shipped / folder).rglob("*")
        if p.is_file()
    ]
    assert files
    for name in files:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
