"""CSRF, the session cookie, security headers, and escaping of hostile content."""

from __future__ import annotations

import re

import httpx
import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from registry.console.routing import Console
from registry.db.tables import Version
from registry.domain.model import Scope
from registry.http.app import create_app
from tests.console.site import WS, make_site, publish, skill_md, skill_path

HOSTILE = '<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">'
BIDI = "access\u202e) txt.exe\u2066 \u200b"
HOSTILE_PATH = 'references/"><svg onload=alert(1)>.md'


async def test_a_post_without_or_with_a_wrong_csrf_token_changes_nothing(site):
    await publish(site.registry, "hello", {"SKILL.md": skill_md("hello")})
    await site.signin("owner")
    path = skill_path("hello", "control")
    for data in ({"action": "stop_using"}, {"action": "stop_using", "csrf": "forged"}):
        answer = await site.client.post(path, data=data)
        assert answer.status_code == 403
        assert "Form expired" in answer.text
    status = await site.registry.skill_status(Scope(WS), "hello")
    assert not status.use_paused
    assert (await site.post(path, {"action": "stop_using"})).status_code == 303
    assert (await site.registry.skill_status(Scope(WS), "hello")).use_paused


async def test_the_csrf_token_of_one_session_is_refused_in_another(site, make_registry):
    await publish(site.registry, "hello", {"SKILL.md": skill_md("hello")})
    await site.signin("owner")
    stolen = await site.csrf()
    app = create_app(site.registry)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://c.test"
    ) as other:
        victim = await make_site(site.registry, other)
        await victim.signin("owner")
        answer = await other.post(
            skill_path("hello", "control"), data={"csrf": stolen, "action": "pause"}
        )
        assert answer.status_code == 403


async def test_the_sign_in_form_needs_its_csrf_token_too(site):
    answer = await site.client.post("/console/signin", data={"token": site.tokens["owner"]})
    assert answer.status_code == 403
    assert (await site.client.get(f"/console/{WS}/")).status_code == 303


def _cookie(response: httpx.Response) -> str:
    return response.headers["set-cookie"]


async def test_the_session_cookie_is_httponly_strict_and_scoped(site):
    cookie = _cookie(await site.signin("owner"))
    assert "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert "Path=/console" in cookie
    assert "Secure" not in cookie  # plain HTTP here: a Secure cookie would never come back
    # The secret is base64url, which has `_` in its alphabet: split off the prefix and id only.
    secret = site.tokens["owner"].split("_", 2)[2]
    assert secret
    assert secret not in cookie


async def test_the_session_cookie_is_secure_over_https(registry):
    app = create_app(registry)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="https://c.test"
    ) as client:
        site = await make_site(registry, client)
        assert "Secure" in _cookie(await site.signin("owner"))


async def test_a_rotated_key_keeps_sessions_until_it_is_dropped(registry):
    old, new = "o" * 32, "n" * 32

    def console(secret: str, *previous: str) -> Console:
        keys = {
            "console_secret": SecretStr(secret),
            "console_previous_secrets": [SecretStr(key) for key in previous],
        }
        return Console(registry, registry.settings.model_copy(update=keys))

    app = create_app(registry)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://c.test"
    ) as client:
        site = await make_site(registry, client)
        app.state.console = console(old)
        await site.signin("owner")
        signed_by_old = client.cookies.get("skillreg_console")
        overview = f"/console/{WS}/"
        # The new key signs, the old one still verifies: still signed in, forms still work.
        app.state.console = console(new, old)
        assert (await client.get(overview)).status_code == 200
        answer = await site.post("/console/signout")
        assert answer.status_code == 303
        # Once the old key is dropped, what it signed is no session.
        app.state.console = console(new)
        client.cookies.set("skillreg_console", signed_by_old, path="/console")
        assert (await client.get(overview)).status_code == 303


@pytest.mark.both_databases
async def test_signing_in_draws_a_new_session_and_signing_out_ends_it(site):
    await publish(site.registry, "hello", {"SKILL.md": skill_md("hello")})
    await site.client.get("/console/signin")
    before = site.client.cookies.get("skillreg_console")
    await site.signin("owner")
    after = site.client.cookies.get("skillreg_console")
    # The signed payload (the session id among it) changed, not only the signing time.
    assert before.split(".")[0] != after.split(".")[0]
    csrf = await site.csrf()
    assert (await site.post("/console/signout")).status_code == 303
    assert site.client.cookies.get("skillreg_console") != after

    # The captured cookie still carries a valid signature, but its session has ended on the
    # server: a replayed page and a replayed form (with that session's CSRF token) are
    # sent to the sign-in page, and nothing changes.
    site.client.cookies.set("skillreg_console", after, path="/console")
    page = await site.client.get(f"/console/{WS}/")
    assert (page.status_code, page.headers["location"]) == (
        303,
        f"/console/signin?next=%2Fconsole%2F{WS}%2F",
    )
    site.client.cookies.set("skillreg_console", after, path="/console")
    form = await site.client.post(
        skill_path("hello", "control"), data={"csrf": csrf, "action": "stop_using"}
    )
    assert (form.status_code, form.headers["location"]) == (303, "/console/signin")
    assert not (await site.registry.skill_status(Scope(WS), "hello")).use_paused


async def test_pages_carry_a_strict_content_security_policy(site):
    await site.signin("read")
    answer = await site.client.get(f"/console/{WS}/")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"


def _no_markup_escaped(html: str) -> None:
    assert "<script>window" not in html
    assert "<img src=x" not in html
    assert "<svg onload" not in html
    assert not re.search(r"<[^>]+\son\w+=", html), "an event handler attribute slipped through"


async def test_hostile_names_descriptions_files_and_contents_are_shown_not_run(site):
    # Paths with bidi controls are refused by the path rules, and messages and sources by
    # the rule for text a client sets (a version written before that rule may still hold
    # one: the second message is set in the database); descriptions and contents may hold
    # anything.
    reg = site.registry
    description = f"{HOSTILE} {BIDI}"
    files = {
        "SKILL.md": skill_md("hello", "Harmless.", body=HOSTILE + "\n" + BIDI + "\n"),
        HOSTILE_PATH: (HOSTILE + "\n").encode(),
    }
    await publish(reg, "hello", files, message=HOSTILE, sources=[HOSTILE])
    await publish(
        reg,
        "hello",
        {**files, "SKILL.md": skill_md("hello", description.replace('"', "'").replace(":", " "))},
        head=1,
    )
    async with reg.engine.begin() as conn:
        await conn.execute(sa.update(Version).where(Version.number == 2).values(message=BIDI))
    await site.signin("owner")
    pages = [
        f"/console/{WS}/",
        skill_path("hello"),
        skill_path("hello") + "?version=1",
        skill_path("hello", "history"),
        skill_path("hello", "diff") + "?from=1&to=2&full=true",
        skill_path("hello", "file") + "?path=SKILL.md",
        skill_path("hello", "file") + "?" + httpx.QueryParams({"path": HOSTILE_PATH}).__str__(),
        skill_path("hello", "edit") + "?path=SKILL.md",
    ]
    for path in pages:
        answer = await site.client.get(path)
        assert answer.status_code == 200, path
        _no_markup_escaped(answer.text)
    skill = (await site.client.get(skill_path("hello"))).text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in skill
    history = (await site.client.get(skill_path("hello", "history"))).text
    assert "<span class=ctl>U+202E</span>" in history
    assert "\u202e" not in history
    assert "U+202E" in skill
    assert "\u202e" not in skill
    viewer = (await site.client.get(skill_path("hello", "file") + "?path=SKILL.md")).text
    assert "hidden or reordering characters" in viewer
    assert "<span class=ctl>U+2066</span>" in viewer
    editor = (await site.client.get(skill_path("hello", "edit") + "?path=SKILL.md")).text
    # The editor keeps every character (escaped), so saving does not change the file.
    assert "\u202e" in editor
    assert "&lt;script&gt;" in editor


@pytest.mark.both_databases
async def test_a_nul_or_control_in_a_form_or_a_cursor_is_refused_not_a_server_error(site):
    # Before: on PostgreSQL both answered 503 ("database unavailable"); on SQLite the
    # reason was stored with its NUL.
    await publish(site.registry, "hello", {"SKILL.md": skill_md("hello")})
    await site.signin("owner")
    cursor = await site.client.get(f"/console/{WS}/marketplace", params={"after": "\x00"})
    assert cursor.status_code == 422
    assert "nul_byte" in cursor.text
    for reason in ("a\x00b", "\x1b[2J", "why\u202e"):
        answer = await site.post(
            skill_path("hello", "control"), {"action": "pause", "reason": reason}
        )
        assert answer.status_code == 422, reason
    status = await site.registry.skill_status(Scope(WS), "hello")
    assert (status.learning_paused, status.pause_reason) == (False, None)
