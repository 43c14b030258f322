"""The owner's actions through the console's forms, on both databases (in-process).

The browser tests (`browser/`) walk the same flows in Chromium; these check what each
action did in the registry, and the refusals the pages must explain.
"""

from __future__ import annotations

import re

import httpx
import pytest

from registry.domain.model import Origin, Scope
from registry.http.app import create_app
from registry.settings import Settings
from tests.console.site import WS, make_site, publish, skill_md, skill_path
from tests.corpus.fakes import GITHUB_TOKEN

SCOPE = Scope(WS)


async def _two_versions(site, slug="hello"):
    await publish(site.registry, slug, {"SKILL.md": skill_md(slug, "One."), "a.txt": b"one\n"})
    await publish(
        site.registry, slug, {"SKILL.md": skill_md(slug, "Two."), "a.txt": b"two\n"}, head=1
    )


@pytest.mark.both_databases
async def test_restore_names_the_head_it_saw_and_never_overwrites_a_moved_one(site):
    await _two_versions(site)
    await site.signin("owner")
    answer = await site.post(skill_path("hello", "restore"), {"version": "1", "expected_head": "2"})
    assert answer.status_code == 303
    assert (await site.registry.skill_status(SCOPE, "hello")).head == 3
    # The page still says the head is v2: the head moved, nothing is restored.
    answer = await site.post(skill_path("hello", "restore"), {"version": "2", "expected_head": "2"})
    assert answer.status_code == 409
    assert "head moved from v2 to v3" in answer.text
    assert 'name="expected_head" value="3"' in answer.text
    history = await site.registry.history(SCOPE, "hello")
    assert [v.number for v in history.items] == [3, 2, 1]
    assert history.items[0].restored_from == 1


async def test_a_deleted_skill_is_viewed_and_brought_back_from_its_history(site):
    await _two_versions(site)
    skill_id = (await site.registry.package_info(SCOPE, "hello")).skill_id
    await site.registry.delete(SCOPE, "hello", actor="owner")
    await site.signin("owner")
    listed = (await site.client.get(skill_path("hello", "history"))).text
    assert f"archived/{skill_id}?version=1" in listed
    assert "Bring back" in listed
    view = await site.client.get(
        skill_path("hello", "archived", str(skill_id)), params={"version": 1}
    )
    assert view.status_code == 200
    assert 'name="expected_head" value="2"' in view.text
    one = await site.client.get(
        skill_path("hello", "file"), params={"path": "a.txt", "version": 1, "skill_id": skill_id}
    )
    assert "<pre>one</pre>" in one.text
    revive = skill_path("hello", "archived", str(skill_id), "restore")
    # A head the deleted skill does not have: refused, nothing changes.
    stale = await site.post(revive, {"version": "1", "expected_head": "1"})
    assert stale.status_code == 409
    answer = await site.post(revive, {"version": "1", "expected_head": "2"})
    assert answer.status_code == 303
    history = await site.registry.history(SCOPE, "hello")
    assert [(v.number, v.skill_id, v.restored_from) for v in history.items] == [
        (3, skill_id, 1),
        (2, skill_id, None),
        (1, skill_id, None),
    ]
    back = await site.client.get(skill_path("hello", "archived", str(skill_id)))
    assert (back.status_code, back.headers["location"]) == (303, skill_path("hello"))


async def test_an_edit_saves_a_version_with_the_text_as_typed(site):
    await _two_versions(site)
    await site.signin("owner")
    text = skill_md("hello", "Edited.").decode().replace("\n", "\r\n")
    answer = await site.post(
        skill_path("hello", "edit"),
        {"path": "SKILL.md", "base": "2", "content": text, "message": "by hand"},
        files={"unused": ("", b"")},
    )
    assert answer.status_code == 303
    package = await site.registry.read_package(SCOPE, "hello")
    assert package.version == 3
    assert package.files["SKILL.md"].data == skill_md("hello", "Edited.")  # LF kept
    assert package.files["a.txt"].data == b"two\n"
    status = await site.registry.skill_status(SCOPE, "hello")
    assert not status.auto_improve


async def test_an_edit_of_a_moved_head_keeps_the_draft_and_shows_the_difference(site):
    await _two_versions(site)
    await site.signin("owner")
    draft = skill_md("hello", "My draft.").decode()
    await publish(site.registry, "hello", {"SKILL.md": skill_md("hello", "Three.")}, head=2)
    answer = await site.post(
        skill_path("hello", "edit"),
        {"path": "SKILL.md", "base": "2", "content": draft},
        files={"unused": ("", b"")},
    )
    assert answer.status_code == 409
    assert "the head is v3 now" in answer.text
    assert "My draft." in answer.text  # still in the editor
    kept = int(re.search(r"proposal #(\d+)", answer.text).group(1))
    assert (await site.registry.read_proposal(SCOPE, kept))["SKILL.md"].data == draft.encode()
    assert '<span class="add">+description: My draft.</span>' in answer.text
    assert 'name="base" value="3"' in answer.text
    assert (await site.registry.skill_status(SCOPE, "hello")).head == 3


async def test_a_blocked_edit_names_the_finding_and_saves_once_it_is_approved(site):
    await _two_versions(site)
    await site.signin("owner")
    text = skill_md("hello", "Two.", body=f"token {GITHUB_TOKEN}\n").decode()
    form = {"path": "SKILL.md", "base": "2", "content": text}
    answer = await site.post(skill_path("hello", "edit"), form, files={"unused": ("", b"")})
    assert answer.status_code == 422
    assert GITHUB_TOKEN not in answer.text.replace(text, "")  # only in the kept draft
    finding = re.search(r'id="approve-finding" name="finding" value="([^"]+)"', answer.text)
    answer = await site.post(
        skill_path("hello", "edit"),
        {**form, "finding": finding.group(1)},
        files={"unused": ("", b"")},
    )
    assert answer.status_code == 303
    assert (await site.registry.skill_status(SCOPE, "hello")).head == 3


async def test_controls_and_their_refusals(site):
    await _two_versions(site)
    await site.signin("owner")
    path = skill_path("hello", "control")
    for action, check in (
        ("pause", lambda s: s.learning_paused),
        ("resume", lambda s: not s.learning_paused),
        ("stop_using", lambda s: s.use_paused),
        ("resume_use", lambda s: not s.use_paused),
        # the second version, a person's write, turned automatic improvements off
        ("auto_improve_on", lambda s: s.auto_improve),
        ("auto_improve_off", lambda s: not s.auto_improve),
    ):
        answer = await site.post(path, {"action": action, "reason": "testing"})
        assert answer.status_code == 303, action
        assert check(await site.registry.skill_status(SCOPE, "hello")), action
    answer = await site.post(path, {"action": "resume"})
    assert answer.status_code == 409
    assert "Resume learning" not in answer.text or "Pause learning" in answer.text
    assert (await site.post(path, {"action": "delete"})).status_code == 400


async def test_delete_needs_the_name_and_the_head_it_saw(site):
    await _two_versions(site)
    await site.signin("owner")
    path = skill_path("hello", "delete")
    assert (await site.post(path, {"confirm": "nope", "expected_head": "2"})).status_code == 422
    assert (await site.post(path, {"confirm": "hello", "expected_head": "1"})).status_code == 409
    assert (await site.registry.skill_status(SCOPE, "hello")).head == 2
    answer = await site.post(path, {"confirm": "hello", "expected_head": "2"})
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/console/{WS}/?notice=deleted"
    assert (await site.client.get(skill_path("hello"))).status_code == 404


async def _proposal(site, slug: str, agent: str = "personal") -> int:
    scope = Scope(WS, agent)
    await site.registry.pause_learning(scope, slug, actor="owner")
    head = (await site.registry.skill_status(scope, slug)).head
    published = await site.registry.write_package(
        scope,
        slug,
        {"SKILL.md": skill_md(slug, "Learned.")},
        expected_head=head,
        origin=Origin.LEARNING,
        actor="learner",
    )
    return published.proposal


async def test_deciding_a_proposal_apply_alternative_keep(site):
    for slug in ("one", "two", "three"):
        await publish(site.registry, slug, {"SKILL.md": skill_md(slug)})
    ids = {slug: await _proposal(site, slug) for slug in ("one", "two", "three")}
    await site.signin("owner")
    base = f"/console/{WS}/agents/personal/proposals"
    page = await site.client.get(f"{base}/{ids['one']}")
    assert "+description: Learned." in page.text
    assert (await site.post(f"{base}/{ids['one']}", {"decision": "apply"})).status_code == 303
    alternative = skill_md("two", "My way.").decode()
    answer = await site.post(
        f"{base}/{ids['two']}",
        {"decision": "alternative", "path": "SKILL.md", "content": alternative},
        files={"unused": ("", b"")},
    )
    assert answer.status_code == 303
    assert (
        await site.post(f"{base}/{ids['three']}", {"decision": "keep_current"})
    ).status_code == 303
    reg = site.registry
    assert (await reg.read_package(SCOPE, "one")).files["SKILL.md"].data == skill_md(
        "one", "Learned."
    )
    assert (await reg.read_package(SCOPE, "two")).files["SKILL.md"].data == alternative.encode()
    assert (await reg.read_package(SCOPE, "three")).version == 1
    answer = await site.post(f"{base}/{ids['one']}", {"decision": "apply"})
    assert answer.status_code == 409  # decided already: the page says so


async def test_one_decision_list_across_agents_and_a_batch_where_one_fails(site):
    await publish(site.registry, "one", {"SKILL.md": skill_md("one")})
    await publish(site.registry, "two", {"SKILL.md": skill_md("two")}, agent="bot")
    first = await _proposal(site, "one")
    second = await _proposal(site, "two", agent="bot")
    await site.signin("owner")
    page = await site.client.get(f"/console/{WS}/decisions")
    assert f'value="personal:{first}"' in page.text
    assert f'value="bot:{second}"' in page.text
    overview = await site.client.get(f"/console/{WS}/")
    assert "1 open decision<" in overview.text.replace("</a>", "<")
    # The head of `two` moves: its proposal is stale and cannot be applied; `one` goes through.
    await publish(
        site.registry, "two", {"SKILL.md": skill_md("two", "Moved.")}, agent="bot", head=1
    )
    answer = await site.post(
        f"/console/{WS}/decisions",
        {"decision": "apply", "pick": [f"personal:{first}", f"bot:{second}"]},
    )
    assert answer.status_code == 200
    assert "applied, now v2" in answer.text
    assert "refused" in answer.text
    assert (await site.registry.read_package(SCOPE, "one")).version == 2


async def test_install_update_and_the_update_status(make_registry):
    registry = await make_registry(settings=Settings(update_policy="propose"))
    app = create_app(registry)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://c.test"
    ) as client:
        site = await make_site(registry, client)
        market = registry.marketplace
        await market.publish_listing(
            "greeter", {"SKILL.md": skill_md("greeter", "Greets.")}, actor="pub"
        )
        await site.signin("write")
        answer = await site.post(
            f"/console/{WS}/marketplace", {"listing": "greeter", "agent": "personal"}
        )
        assert answer.status_code == 303
        job = answer.headers["location"]
        assert "queued" in (await client.get(job)).text
        await market.run_jobs(drain=True)
        assert "succeeded" in (await client.get(job)).text
        assert (await registry.read_package(SCOPE, "greeter")).origin == "marketplace_install"
        await market.publish_listing(
            "greeter", {"SKILL.md": skill_md("greeter", "Greets v2.")}, actor="pub"
        )
        page = (await client.get(f"/console/{WS}/marketplace")).text
        assert "update available" in page
        assert "Update greeter to v2" in page
        status = await market.copy_status(SCOPE, "greeter")
        assert (status.baseline, status.latest, status.edited) == (1, 2, False)
        # An edited copy with the `propose` policy: the update becomes a proposal.
        await publish(registry, "greeter", {"SKILL.md": skill_md("greeter", "Mine.")}, head=1)
        answer = await site.post(skill_path("greeter", "update"))
        await market.run_jobs(drain=True)
        job_page = (await client.get(answer.headers["location"])).text
        assert "succeeded" in job_page
        assert "proposal #" in job_page
        page = (await client.get(f"/console/{WS}/marketplace")).text
        assert "waits" in page


async def test_numbers_that_are_no_numbers_are_refused_not_a_server_error(site):
    await _two_versions(site)
    await site.signin("owner")
    # A digit of another script (`str.isdigit` says yes, `int` says no), more digits than
    # `int` converts, and a number past any version.
    bad = ("\u00b2", "9" * 5000, str(2**31))
    for value in bad:
        proposal = str(2**63) if value == str(2**31) else value  # proposal ids are 64-bit
        for query in ({"from": value}, {"to": value}, {"from": f"p{proposal}"}):
            answer = await site.client.get(skill_path("hello", "diff"), params=query)
            assert answer.status_code == 400, (query, answer.text[:200])
        for form in (
            {"version": value, "expected_head": "2"},
            {"version": "1", "expected_head": value},
        ):
            answer = await site.post(skill_path("hello", "restore"), form)
            assert answer.status_code == 400, (form, answer.text[:200])
        answer = await site.post(
            skill_path("hello", "approve"), {"version": "2", "finding": f"{value}:SKILL.md"}
        )
        assert answer.status_code == 400, answer.text[:200]
        answer = await site.post(
            f"/console/{WS}/decisions", {"decision": "apply", "pick": [f"personal:{proposal}"]}
        )
        assert answer.status_code == 422, answer.text[:200]
    history = await site.registry.history(SCOPE, "hello")
    assert [v.number for v in history.items] == [2, 1]
    # Nothing given is the default, as before: the head against its parent.
    answer = await site.client.get(skill_path("hello", "diff"))
    assert answer.status_code == 200
