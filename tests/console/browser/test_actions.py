"""The owner's actions in the browser: restore and edit with their conflicts, controls and
delete, a decision and a finding, install and update. The edit conflict is the console's
path in a real browser on PostgreSQL too; the restore conflict's on PostgreSQL is
tests/console/test_actions.py's (the same form, posted in-process)."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from registry.domain.model import Origin, Scope
from registry.settings import Settings
from tests.console.site import WS, publish, skill_md
from tests.corpus.fakes import GITHUB_TOKEN

pytestmark = pytest.mark.browser
SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
SCOPE = Scope(WS)
SKILL = f"/console/{WS}/agents/personal/skills/notes"


async def three_versions(registry):
    for n, text in enumerate(("Keeps notes.", "Keeps short notes.", "Keeps tidy notes."), 1):
        await publish(
            registry,
            "notes",
            {"SKILL.md": skill_md("notes", text)},
            head=n - 1 if n > 1 else None,
            message=f"version {n}",
        )


@SQLITE
async def test_restore_refuses_when_the_head_moved_in_another_tab(
    console_site, browser, page, shoot
):
    site = await console_site()
    await three_versions(site.registry)
    await site.signin(page)
    other = await page.context.new_page()
    for tab in (page, other):
        await tab.goto(site.at(f"{SKILL}/history"))
    # The other tab restores v1: the head is v4 now.
    await other.locator("#v1").get_by_role("button", name="Restore v1").click()
    await expect(other.get_by_role("status")).to_have_text("Restored: the version is the new head.")
    # This tab still shows head v3 and restores v2 on it: refused, the new head shown.
    await page.locator("#v2").get_by_role("button", name="Restore v2").click()
    await expect(page.get_by_role("alert")).to_contain_text("the head moved from v3 to v4")
    await expect(page.locator("#v4")).to_contain_text("restore of v1")
    await shoot(page, "restore-conflict")
    history = await site.registry.history(SCOPE, "notes")
    assert [(v.number, v.restored_from) for v in history.items][:2] == [(4, 1), (3, None)]
    # Restoring again from the page that now shows v4 goes through.
    await page.locator("#v2").get_by_role("button", name="Restore v2").click()
    await expect(page.get_by_role("status")).to_have_text("Restored: the version is the new head.")
    assert (await site.registry.skill_status(SCOPE, "notes")).head == 5


@pytest.mark.both_databases
async def test_an_edit_whose_head_moved_keeps_the_draft_and_shows_it(console_site, page, shoot):
    site = await console_site()
    await three_versions(site.registry)
    await site.signin(page)
    await page.goto(site.at(SKILL))
    await page.get_by_role("link", name="Edit SKILL.md").click()
    editor = page.get_by_label("Content of SKILL.md")
    await editor.fill(skill_md("notes", "Keeps my notes.").decode())
    await page.get_by_label("Message").fill("my words")
    await shoot(page, "edit")
    # Meanwhile the skill changes elsewhere.
    await publish(
        site.registry, "notes", {"SKILL.md": skill_md("notes", "Changed elsewhere.")}, head=3
    )
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("alert")).to_contain_text("the head is v4 now")
    await expect(editor).to_have_value(skill_md("notes", "Keeps my notes.").decode())
    await expect(page.locator("pre.diff .add")).to_contain_text("+description: Keeps my notes.")
    await expect(page.locator("pre.diff .del")).to_contain_text("-description: Changed elsewhere.")
    await shoot(page, "edit-conflict")
    assert (await site.registry.skill_status(SCOPE, "notes")).head == 4
    await page.get_by_role("button", name="Save over v4").click()
    await expect(page.get_by_role("status")).to_have_text("Saved: the edit is the new head.")
    package = await site.registry.read_package(SCOPE, "notes")
    assert (package.version, package.message) == (5, "my words")
    assert package.files["SKILL.md"].data == skill_md("notes", "Keeps my notes.")


@SQLITE
async def test_pause_resume_stop_using_and_delete(console_site, page, shoot):
    site = await console_site()
    await three_versions(site.registry)
    await site.signin(page)
    await page.goto(site.at(SKILL))
    await page.get_by_label("Reason for pausing learning").fill("reviewing")
    await page.get_by_role("button", name="Pause learning").click()
    await expect(page.get_by_role("status")).to_contain_text("Learning paused")
    await expect(page.get_by_text("paused_learning; reason: reviewing")).to_be_visible()
    # Keyboard only: the first Tab reaches the skip link, and a focused button submits
    # its form with Enter.
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    await page.get_by_role("button", name="Resume learning").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_have_text("Learning resumed.")
    await page.get_by_role("button", name="Stop using").click()
    await expect(page.get_by_role("status")).to_contain_text("runtimes no longer load")
    await shoot(page, "stopped")
    assert (await site.registry.skill_status(SCOPE, "notes")).use_paused
    await page.get_by_role("button", name="Resume use").click()
    await expect(page.get_by_role("status")).to_have_text("In use again.")
    # The later versions, a person's writes, turned automatic improvements off.
    await page.get_by_role("button", name="Turn automatic improvements on").click()
    await expect(page.get_by_role("button", name="Turn automatic improvements off")).to_be_visible()
    await page.get_by_role("link", name="Delete…").click()
    await page.get_by_label("Type notes to confirm").fill("nope")
    await page.get_by_role("button", name="Delete notes").click()
    await expect(page.get_by_role("alert")).to_contain_text("type the skill's name")
    await page.get_by_label("Type notes to confirm").fill("notes")
    await shoot(page, "delete")
    await page.get_by_role("button", name="Delete notes").click()
    await expect(page.get_by_role("status")).to_contain_text("Deleted.")
    assert await site.registry.agents(WS) == []


@SQLITE
async def test_deciding_a_proposal_and_approving_a_finding(console_site, page, shoot):
    site = await console_site()
    await three_versions(site.registry)
    await publish(site.registry, "triage", {"SKILL.md": skill_md("triage")}, agent="support-bot")
    for scope, slug in ((SCOPE, "notes"), (Scope(WS, "support-bot"), "triage")):
        await site.registry.pause_learning(scope, slug, actor="owner")
        head = (await site.registry.skill_status(scope, slug)).head
        await site.registry.write_package(
            scope,
            slug,
            {"SKILL.md": skill_md(slug, "Learned from use.")},
            expected_head=head,
            origin=Origin.LEARNING,
            actor="learner",
            sources=["chat:7"],
        )
    await site.signin(page)
    await page.get_by_role("link", name="2 open decisions").click()
    await expect(page.get_by_role("row")).to_have_count(3)
    await shoot(page, "decisions")
    await page.get_by_role("row", name="notes").get_by_role("link", name="#1").click()
    await expect(page.locator("pre.diff .add").first).to_contain_text("Learned from use.")
    await shoot(page, "proposal")
    await page.get_by_role("button", name="Apply proposal #1").click()
    await expect(page.get_by_role("status")).to_contain_text("Applied")
    assert (await site.registry.read_package(SCOPE, "notes")).origin == "learning"

    # A refused edit names its finding; approving it saves the edit.
    await page.get_by_role("link", name="Edit SKILL.md").click()
    text = skill_md("notes", "Keeps notes.", body=f"Use {GITHUB_TOKEN} for the API.\n").decode()
    await page.get_by_label("Content of SKILL.md").fill(text)
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("heading", name="Refused by the content check")).to_be_visible()
    await shoot(page, "finding")
    await page.get_by_label("Approve finding #1 in SKILL.md").check()
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status")).to_have_text("Saved: the edit is the new head.")
    assert (await site.registry.skill_status(SCOPE, "notes")).head == 5


@SQLITE
async def test_install_update_and_the_update_proposal(console_site, page, shoot):
    site = await console_site(settings=Settings(update_policy="propose", job_poll_interval=0.05))
    market = site.registry.marketplace
    await market.publish_listing(
        "greeter", {"SKILL.md": skill_md("greeter", "Greets.")}, actor="pub"
    )
    await site.signin(page, "owner")
    await (
        page.get_by_role("navigation", name="Console")
        .get_by_role("link", name="Marketplace")
        .click()
    )
    await shoot(page, "marketplace")
    await page.get_by_role("button", name="Install greeter").click()
    await expect(page.locator("#job-status")).to_have_text("succeeded")
    await shoot(page, "job")
    await page.get_by_role("link", name="Open greeter").click()
    await expect(page.get_by_text("installed from greeter v1")).to_be_visible()

    await market.publish_listing(
        "greeter", {"SKILL.md": skill_md("greeter", "Greets warmly.")}, actor="pub"
    )
    await publish(
        site.registry, "greeter", {"SKILL.md": skill_md("greeter", "Greets my way.")}, head=1
    )
    await (
        page.get_by_role("navigation", name="Console")
        .get_by_role("link", name="Marketplace")
        .click()
    )
    copy = page.get_by_role("row", name="greeter personal")
    await expect(copy).to_contain_text("update available")
    await shoot(page, "marketplace-update")
    await page.get_by_role("button", name="Update greeter to v2").click()
    await expect(page.locator("#job-status")).to_have_text("succeeded")
    await page.get_by_role("link", name="proposal #1").click()
    await expect(page.get_by_role("heading", name="Proposal #1 for greeter")).to_be_visible()
    await expect(page.locator("pre.diff .add").first).to_contain_text("Greets warmly.")
