"""Reading in the browser: sign in, the overview, a skill, a file, history, a diff; what a
read token sees; the operator page; hostile content shown and never run."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from registry.domain.model import Scope
from tests.console.site import WS, publish, skill_md

pytestmark = pytest.mark.browser
SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

HOSTILE = '<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">'


async def seed(registry):
    files = {
        "SKILL.md": skill_md(
            "pdf-report", "Turns notes into a PDF report.", body="1. Collect.\n2. Render.\n"
        ),
        "scripts/render.py": b"import sys\nprint('render', sys.argv)\n",
        "templates/report.html": b"<h1>{{ title }}</h1>\n",
        "assets/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0binary",
    }
    await publish(registry, "pdf-report", files, message="first draft", sources=["chat:41"])
    files["SKILL.md"] = skill_md(
        "pdf-report", "Turns notes into a PDF report.", body="1. Collect.\n2. Render.\n3. Check.\n"
    )
    files["scripts/render.py"] = b"import sys\nprint('rendering', sys.argv[1:])\n"
    await publish(
        registry, "pdf-report", files, head=1, message="adds a check", sources=["chat:42"]
    )
    await publish(registry, "csv-cleaner", {"SKILL.md": skill_md("csv-cleaner", "Cleans CSV.")})
    await publish(
        registry, "triage", {"SKILL.md": skill_md("triage", "Sorts issues.")}, agent="support-bot"
    )


@SQLITE
async def test_sign_in_overview_skill_file_history_and_diff(console_site, page, shoot):
    site = await console_site()
    await seed(site.registry)
    await page.goto(site.at("/console/"))
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await shoot(page, "signin")
    await site.signin(page)
    await expect(page.get_by_role("heading", name=f"Workspace {WS}")).to_be_visible()
    await expect(page.get_by_role("heading", name="Agent support-bot")).to_be_visible()
    await shoot(page, "overview")

    await page.get_by_role("link", name="pdf-report").click()
    await expect(page.get_by_role("heading", name="pdf-report", exact=True)).to_be_visible()
    await expect(page.get_by_text("Turns notes into a PDF report.")).to_be_visible()
    await shoot(page, "skill")

    await page.get_by_role("link", name="render.py").click()
    await expect(page.locator("table.code")).to_contain_text("rendering")
    await shoot(page, "file")
    await page.goto(site.at(f"/console/{WS}/agents/personal/skills/pdf-report"))
    await page.get_by_role("link", name="logo.png").click()
    await expect(page.get_by_text("Binary file")).to_be_visible()

    await page.get_by_role("navigation", name="Skill").get_by_role("link", name="History").click()
    row = page.locator("#v2")
    await expect(row).to_contain_text("adds a check")
    await expect(row).to_contain_text("chat:42")
    await shoot(page, "history")

    await row.get_by_role("link", name="changes").click()
    await expect(page.get_by_role("heading", name="Changes from v1 to v2")).to_be_visible()
    await expect(page.locator("pre.diff .add").first).to_be_visible()
    await shoot(page, "diff")


@SQLITE
async def test_a_read_token_sees_everything_and_no_action(console_site, page, shoot):
    site = await console_site()
    await seed(site.registry)
    await site.signin(page, "read")
    for path in (
        "/",
        "/agents/personal/skills/pdf-report",
        "/agents/personal/skills/pdf-report/history",
        "/decisions",
        "/marketplace",
    ):
        await page.goto(site.at(f"/console/{WS}{path}"))
        await expect(page.get_by_role("button")).to_have_count(2)  # searching, signing out
        await expect(page.get_by_role("button", name="Search")).to_be_visible()
        await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await page.goto(site.at(f"/console/{WS}/agents/personal/skills/pdf-report"))
    await expect(page.get_by_role("link", name="Edit SKILL.md")).to_have_count(0)
    await shoot(page, "read-token")
    await page.goto(site.at(f"/console/{WS}/operator"))
    await expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()


@SQLITE
async def test_the_operator_page_for_an_admin(console_site, page, shoot):
    site = await console_site()
    await seed(site.registry)
    await site.signin(page, "admin")
    await page.get_by_role("link", name="Operator").click()
    await expect(page.get_by_role("heading", name="Storage")).to_be_visible()
    await expect(page.get_by_role("heading", name="Learning")).to_be_visible()
    await expect(page.get_by_role("row", name="pending_writes 0")).to_be_visible()
    await expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()
    await shoot(page, "operator")


@SQLITE
async def test_hostile_content_is_shown_and_never_runs(console_site, page, shoot):
    site = await console_site()
    body = f"{HOSTILE}\naccess\u202e) txt.exe\n"
    await publish(
        site.registry,
        "hostile",
        {
            "SKILL.md": skill_md("hostile", "Harmless 'quoted' text.", body=body),
            'references/"><svg onload=alert(1)>.md': HOSTILE.encode(),
        },
        message=HOSTILE,
        sources=[HOSTILE],
    )
    await site.signin(page)
    base = f"/console/{WS}/agents/personal/skills/hostile"
    for path in ("", "/history", "/file?path=SKILL.md", "/edit?path=SKILL.md"):
        await page.goto(site.at(base + path))
        await expect(page.locator("main")).to_be_visible()
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("main img, main svg, main script").count() == 0
    await page.goto(site.at(base + "/file?path=SKILL.md"))
    await expect(page.locator("table.code")).to_contain_text("<script>window.__pwned=1</script>")
    await expect(page.locator(".ctl").first).to_have_text("U+202E")
    await shoot(page, "hostile-file")
    await page.goto(site.at(base))
    await page.get_by_role("link", name='"><svg onload=alert(1)>.md').click()
    await expect(page.locator("h1")).to_contain_text("<svg onload=alert(1)>")
    status = await site.registry.skill_status(Scope(WS), "hostile")
    assert status.head == 1
