"""The console under test in-process: the HTTP app over a registry, an httpx client with a
cookie jar, and an access token of every role in `acme` (and in `globex`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import httpx

from registry.api import Registry
from registry.domain.access import Role
from registry.domain.model import Scope
from tests.support.packages import LEARNED_SECTIONS
from tests.support.scopes import ACME, GLOBEX

WS = ACME.workspace
OTHER = GLOBEX.workspace
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')

# With the Steps and Verification a learning write's SKILL.md must carry (docs/history.md).
SKILL_MD = b"---\nname: %s\ndescription: %s\n---\n\n# %s\n\n" + LEARNED_SECTIONS.encode()


def skill_md(slug: str, description: str = "Does a thing.", body: str = "") -> bytes:
    return SKILL_MD % (slug.encode(), description.encode(), slug.encode()) + body.encode()


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "the page has a form with a CSRF token"
    return found.group(1)


@dataclass
class Site:
    registry: Registry
    client: httpx.AsyncClient
    tokens: dict[str, str] = field(default_factory=dict)
    other_tokens: dict[str, str] = field(default_factory=dict)

    async def signin(self, role: str = "owner", *, other: bool = False) -> httpx.Response:
        page = await self.client.get("/console/signin")
        token = (self.other_tokens if other else self.tokens)[role]
        return await self.client.post(
            "/console/signin", data={"csrf": csrf_of(page.text), "token": token}
        )

    async def csrf(self) -> str:
        return csrf_of((await self.client.get("/console/signin")).text)

    async def post(self, path: str, data: dict | None = None, **kwargs) -> httpx.Response:
        """POST a console form with this session's CSRF token."""
        return await self.client.post(
            path, data={"csrf": await self.csrf(), **(data or {})}, **kwargs
        )


async def make_site(registry: Registry, client: httpx.AsyncClient) -> Site:
    site = Site(registry, client)
    for role in Role:
        issued = await registry.tokens.create(WS, role.value, name=f"{role}", actor="test")
        site.tokens[role.value] = issued.token
        issued = await registry.tokens.create(OTHER, role.value, name=f"{role}", actor="test")
        site.other_tokens[role.value] = issued.token
    return site


async def publish(
    registry: Registry, slug: str, files: dict, *, agent: str = "personal", head=None, **kw
):
    return await registry.write_package(
        Scope(WS, agent), slug, files, expected_head=head, actor="tester", **kw
    )


def skill_path(slug: str, *rest: str, agent: str = "personal") -> str:
    return "/".join([f"/console/{WS}/agents/{agent}/skills/{slug}", *rest])
