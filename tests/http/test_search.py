"""`GET /v1/workspaces/{w}/search`: ranked hits of the token's workspace, over HTTP."""

from __future__ import annotations

from tests.support.packages import publish, skill_md
from tests.support.scopes import ACME, GLOBEX

SEARCH = "/v1/workspaces/acme/search"


async def test_hits_with_snippets_and_highlights(served):
    body = "Render each spreadsheet as a landscape page."
    await publish(
        served.registry, "pdf-report", {"SKILL.md": skill_md("pdf-report", "PDFs.", body)}
    )
    await publish(served.registry, "other", {"SKILL.md": skill_md("other", "Unrelated.")})
    response = await served.client.get(
        SEARCH, params={"q": "landscape"}, headers=served.auth("read")
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["workspace"], answer["agent"], answer["terms"]) == (
        "acme",
        "personal",
        ["landscape"],
    )
    [hit] = answer["hits"]
    assert (hit["slug"], hit["version"], hit["state"], hit["use_paused"]) == (
        "pdf-report",
        1,
        "active",
        False,
    )
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["landscape"]


async def test_options_reach_the_search(served):
    for slug in ("kept", "paused", "gone"):
        await publish(served.registry, slug, {"SKILL.md": skill_md(slug, "About walruses.")})
    await served.registry.stop_using(ACME, "paused", actor="owner")
    await served.registry.delete(ACME, "gone", actor="owner")

    async def found(**params):
        response = await served.client.get(
            SEARCH, params={"q": "walruses", **params}, headers=served.auth("read")
        )
        return sorted(h["slug"] for h in response.json()["hits"])

    assert await found() == ["kept"]
    assert await found(include_paused="true") == ["kept", "paused"]
    assert await found(include_deleted="true", include_paused="true") == ["gone", "kept", "paused"]
    assert len(await found(limit=1, include_deleted="true", include_paused="true")) == 1


async def test_a_search_never_crosses_workspaces(served):
    await publish(
        served.registry, "theirs", {"SKILL.md": skill_md("theirs", "About walruses.")}, scope=GLOBEX
    )
    mine = await served.client.get(SEARCH, params={"q": "walrus"}, headers=served.auth("read"))
    assert mine.json()["hits"] == []
    theirs = await served.client.get(
        SEARCH, params={"q": "walrus"}, headers=served.auth("read", other=True)
    )
    assert (theirs.status_code, theirs.json()["code"]) == (404, "not_found")


async def test_a_query_is_required(served):
    response = await served.client.get(SEARCH, headers=served.auth("read"))
    assert (response.status_code, response.json()["code"]) == (422, "request_invalid")
    empty = await served.client.get(SEARCH, params={"q": "the"}, headers=served.auth("read"))
    assert (empty.status_code, empty.json()["hits"], empty.json()["terms"]) == (200, [], [])
