"""The workspace-wide questions (one place each), the search box, and the shipped files."""

from __future__ import annotations

import fnmatch
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import httpx

from registry.console import workspace as ws
from registry.domain.model import Scope
from registry.http.app import create_app
from registry.settings import Settings
from registry.wire import TargetRegistration, TrustReport
from tests.console.site import WS, make_site, publish, skill_md, skill_path
from tests.support.learning import learn, learned

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


async def test_search_finds_skills_of_every_agent(site):
    await publish(
        site.registry, "pdf-tools", {"SKILL.md": skill_md("pdf-tools", "Merge PDF files")}
    )
    await publish(
        site.registry,
        "pdf-forms",
        {"SKILL.md": skill_md("pdf-forms", "Fill PDF forms")},
        agent="bot",
    )
    await publish(site.registry, "notes", {"SKILL.md": skill_md("notes", "Keep notes")})
    found = await ws.search(site.registry, WS, "pdf")
    assert sorted((f.agent, f.slug) for f in found) == [
        ("bot", "pdf-forms"),
        ("personal", "pdf-tools"),
    ]
    await site.signin("read")
    page = (await site.client.get(f"/console/{WS}/")).text
    assert 'role="search"' in page
    results = (await site.client.get(f"/console/{WS}/search?q=forms")).text
    assert "pdf-forms" in results
    assert "agent bot" in results
    assert "pdf-tools" not in results
    assert "1 result " in results


async def test_pending_writes_are_counted_per_agent(make_registry):
    registry = await make_registry(settings=Settings(capacity_saved=1))
    assert await ws.pending_writes(registry, WS) == {}
    bot = Scope(WS, "bot")
    await publish(registry, "kept", {"SKILL.md": skill_md("kept")}, agent="bot")
    for slug in ("first", "second"):
        waiting = await learn(registry, learned(slug), slug=slug, expected=None, scope=bot)
        assert waiting.pending is not None
    await learn(registry, learned("third"), slug="third", expected=None, scope=Scope(WS, "x"))
    assert await ws.pending_writes(registry, WS) == {"bot": 2}
    app = create_app(registry)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://c.test"
    ) as client:
        site = await make_site(registry, client)
        await site.signin("read")
        assert "2 pending writes" in (await client.get(f"/console/{WS}/")).text


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


async def test_the_operator_page_shows_each_targets_trust_state(site):
    await publish(site.registry, "one", {"SKILL.md": skill_md("one")})
    targets = {"stale": "1" * 8, "refused": "2" * 8, "local": "3" * 8}
    for name, prefix in targets.items():
        target_id = f"{prefix}-0000-4000-8000-000000000000"
        registration = TargetRegistration(
            agent="personal", path=f"/h/{name}", host="h", mode="link"
        )
        await site.registry.targets.register(WS, target_id, registration)
        since = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
        if name != "local":
            report = TrustReport(state=name, since=since, detail="rollback <b>", seq=7)
            await site.registry.targets.report_trust(WS, target_id, report)
    await site.signin("admin")
    page = (await site.client.get(f"/console/{WS}/operator")).text
    assert "stale since" in page
    assert "refused: rollback &lt;b&gt;" in page
    local = "/h/local (h)</td><td>acme/personal</td><td>link</td><td>0</td><td>1</td><td>0</td>"
    assert f"{local}<td>local</td>" in page


async def test_a_yank_from_the_history_page_shows_on_the_operator_page(site):
    await publish(site.registry, "one", {"SKILL.md": skill_md("one")})
    registration = TargetRegistration(agent="personal", path="/h/silent", host="h", mode="link")
    await site.registry.targets.register(WS, "4" * 8 + "-0000-4000-8000-000000000000", registration)
    await site.signin("admin")
    form = {"version": "1", "kind": "security", "reason": "leaks <b>"}
    answer = await site.post(skill_path("one", "yank"), form)
    assert answer.status_code == 303
    shown = (await site.client.get(answer.headers["location"])).text
    assert "revoked (security): leaks &lt;b&gt;" in shown
    assert "Unyank" in shown
    page = (await site.client.get(f"/console/{WS}/operator")).text
    assert "personal/one v1: security" in page
    assert "leaks &lt;b&gt;" in page
    assert "/h/silent (h)</td><td>clear (stale)</td>" in page  # never seen: stale
