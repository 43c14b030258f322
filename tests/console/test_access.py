"""Who may do what in the console: the API's rules, route by route, role by role.

Every console route x every role x own and another workspace, plus no session at all. The
requests that change things are made so that the action itself would refuse them
(a stale head, no confirmation, an unknown action): what is checked is the access rule
that runs first, and nothing changes whatever the role.
"""

from __future__ import annotations

from fastapi.routing import APIRoute

from registry.console import ROUTERS
from registry.console.access import ROLES
from registry.console.routing import ConsoleRoute
from registry.domain.access import Role
from registry.domain.model import Origin, Scope
from registry.http.app import create_app
from tests.console.site import WS, publish, skill_md, skill_path
from tests.support.scopes import GLOBEX

SKILL = skill_path("hello")
PROPOSALS = f"/console/{WS}/agents/personal/proposals"

# route name -> (method, path in acme, form fields)
REQUESTS = {
    "console_home": ("GET", "/console/", {}),
    "console_signin_form": ("GET", "/console/signin", {}),
    "console_signin": ("POST", "/console/signin", {"token": "nope"}),
    "console_signout": ("POST", "/console/signout", {}),
    "console_overview": ("GET", f"/console/{WS}/", {}),
    "console_search": ("GET", f"/console/{WS}/search?q=x", {}),
    "console_skill": ("GET", SKILL, {}),
    "console_file": ("GET", f"{SKILL}/file?path=SKILL.md", {}),
    "console_history": ("GET", f"{SKILL}/history", {}),
    "console_archived": ("GET", f"{SKILL}/archived/999", {}),
    "console_diff": ("GET", f"{SKILL}/diff", {}),
    "console_edit_form": ("GET", f"{SKILL}/edit?path=SKILL.md", {}),
    "console_delete_form": ("GET", f"{SKILL}/delete", {}),
    "console_decisions": ("GET", f"/console/{WS}/decisions", {}),
    "console_proposal": ("GET", f"{PROPOSALS}/1", {}),
    "console_marketplace": ("GET", f"/console/{WS}/marketplace", {}),
    "console_job": ("GET", f"/console/{WS}/jobs/999", {}),
    "console_edit": ("POST", f"{SKILL}/edit", {"path": "SKILL.md", "base": "x"}),
    "console_install": ("POST", f"/console/{WS}/marketplace", {"listing": "x", "agent": "-"}),
    "console_update": ("POST", f"{SKILL}/update", {}),
    "console_restore": ("POST", f"{SKILL}/restore", {"version": "1", "expected_head": "1"}),
    "console_yank": ("POST", f"{SKILL}/yank", {"version": "x"}),
    "console_unyank": ("POST", f"{SKILL}/unyank", {"version": "x"}),
    "console_revive": (
        "POST",
        f"{SKILL}/archived/999/restore",
        {"version": "1", "expected_head": "1"},
    ),
    "console_control": ("POST", f"{SKILL}/control", {"action": "nothing"}),
    "console_delete": ("POST", f"{SKILL}/delete", {"confirm": "no", "expected_head": "2"}),
    "console_approve": ("POST", f"{SKILL}/approve", {"version": "2"}),
    "console_decide": ("POST", f"{PROPOSALS}/1", {"decision": "nothing"}),
    "console_decide_many": ("POST", f"/console/{WS}/decisions", {"decision": "apply"}),
    "console_operator": ("GET", f"/console/{WS}/operator", {}),
}


async def _seed(site):
    reg = site.registry
    await publish(reg, "hello", {"SKILL.md": skill_md("hello")})
    await publish(reg, "hello", {"SKILL.md": skill_md("hello", "Twice.")}, head=1)
    scope = Scope(WS)
    await reg.pause_learning(scope, "hello", actor="owner")
    await reg.write_package(
        scope,
        "hello",
        {"SKILL.md": skill_md("hello", "Learned.")},
        expected_head=2,
        origin=Origin.LEARNING,
        actor="learner",
    )
    await reg.write_package(
        GLOBEX, "hello", {"SKILL.md": skill_md("hello")}, expected_head=None, actor="other"
    )


async def _snapshot(site):
    reg = site.registry
    status = await reg.skill_status(Scope(WS), "hello")
    other = await reg.skill_status(GLOBEX, "hello")
    return status, other


async def _call(site, method, path, data):
    if method == "GET":
        return await site.client.get(path)
    return await site.post(path, data)


async def test_every_console_route_has_a_role_and_every_role_entry_a_route(registry):
    routes = [r for router in ROUTERS for r in router.routes]
    assert all(isinstance(r, ConsoleRoute) and not r.include_in_schema for r in routes)
    assert {r.name for r in routes} == set(ROLES) == set(REQUESTS)
    document = create_app(registry).openapi()
    assert not [p for p in document["paths"] if p.startswith("/console")]


async def test_without_a_session_every_page_sends_to_the_sign_in(site):
    await _seed(site)
    for name, (method, path, data) in REQUESTS.items():
        if ROLES[name] is None:
            continue
        answer = await _call(site, method, path, data)
        assert answer.status_code == 303, name
        assert answer.headers["location"].startswith("/console/signin"), name


async def test_each_role_in_its_workspace_and_any_role_in_another(site):
    await _seed(site)
    before = await _snapshot(site)
    for role in Role:
        site.client.cookies.clear()
        assert (await site.signin(role.value)).status_code == 303
        for name, (method, path, data) in REQUESTS.items():
            needed = ROLES[name]
            if needed is None or name == "console_signout":
                continue
            answer = await _call(site, method, path, data)
            if role.allows(needed):
                assert answer.status_code not in (401, 403), (role, name, answer.status_code)
                assert not answer.headers.get("location", "").startswith("/console/signin")
            else:
                assert answer.status_code == 403, (role, name, answer.status_code)
            if "{workspace}" in _template(name):
                elsewhere = path.replace(f"/console/{WS}/", "/console/globex/", 1)
                answer = await _call(site, method, elsewhere, data)
                assert answer.status_code == 404, (role, name, "other workspace")
    assert await _snapshot(site) == before


def _template(name: str) -> str:
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.name == name:
                return route.path
    raise AssertionError(name)


async def test_a_read_token_sees_no_action(site):
    await _seed(site)
    await site.signin("read")
    for path in (
        f"/console/{WS}/",
        SKILL,
        f"{SKILL}/history",
        f"{SKILL}/file?path=SKILL.md",
        f"/console/{WS}/decisions",
        f"{PROPOSALS}/1",
        f"/console/{WS}/marketplace",
    ):
        html = (await site.client.get(path)).text
        assert html.count("<button") == 2, path  # searching (a GET form) and signing out
        assert 'method="post"' in html, path
        assert html.count('method="post"') == 1, path
        assert "/edit" not in html, path
        assert "/delete" not in html, path


async def test_an_owner_sees_the_actions(site):
    await _seed(site)
    await site.signin("owner")
    html = (await site.client.get(SKILL)).text
    for label in (
        "Edit SKILL.md",
        "Pause learning" if False else "Resume learning",
        "Stop using",
        "Delete",
    ):
        assert label in html
    assert "Restore" in (await site.client.get(f"{SKILL}/history")).text


async def test_a_revoked_token_is_signed_out_at_once(site):
    await _seed(site)
    await site.signin("owner")
    assert (await site.client.get(SKILL)).status_code == 200
    token_id = site.tokens["owner"].split("_")[1]
    await site.registry.tokens.revoke(token_id, actor="admin")
    answer = await site.client.get(SKILL)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/signin")


async def test_a_wrong_token_does_not_sign_in(site):
    page = await site.client.post(
        "/console/signin", data={"csrf": await site.csrf(), "token": "skr_nope"}
    )
    assert page.status_code == 401
    assert "not accepted" in page.text
    assert (await site.client.get(f"/console/{WS}/")).status_code == 303


async def test_the_sign_in_follows_next_only_inside_the_console(site):
    for target, expected in (
        (f"/console/{WS}/decisions", f"/console/{WS}/decisions"),
        ("https://evil.example/", f"/console/{WS}/"),
        ("//evil.example/console/", f"/console/{WS}/"),
    ):
        answer = await site.client.post(
            "/console/signin",
            data={"csrf": await site.csrf(), "token": site.tokens["read"], "next": target},
        )
        assert answer.headers["location"] == expected
