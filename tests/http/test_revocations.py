"""Yank over HTTP (docs/revocation.md): the owner's routes, 410 for the revoked version's
discovery URLs, and `GET .../revocations`.
"""

from __future__ import annotations

from urllib.parse import urljoin

from tests.support.packages import publish, skill_md
from tests.support.scopes import ACME

INDEX = "/discovery/acme/personal/.well-known/agent-skills/index.json"
YANK = "/v1/workspaces/acme/skills/single/versions/{}/yank"


async def _urls(served) -> dict[str, str]:
    document = (await served.client.get(INDEX)).json()
    return {e["name"]: urljoin(served.url + INDEX, e["url"]) for e in document["skills"]}


async def test_a_yank_over_http_moves_the_head_and_its_discovery_url_answers_410(served):
    await publish(served.registry, "single", {"SKILL.md": skill_md("single", "One.")})
    await publish(served.registry, "single", {"SKILL.md": skill_md("single", "Two.")}, 1)
    await served.registry.discovery.update(ACME, actor="owner", everything=True, public=True)
    old = (await _urls(served))["single"]
    body = {"kind": "security", "reason": "leaks a token"}

    refused = await served.client.post(YANK.format(2), json=body, headers=served.auth("write"))
    assert refused.status_code == 403
    answer = await served.client.post(YANK.format(2), json=body, headers=served.auth("owner"))
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert (report["moved_to"], report["restored_from"]) == (3, 1)
    assert report["revocation"]["principal"].startswith("token:")

    gone = await served.client.get(old)
    assert gone.status_code == 410
    assert gone.json()["code"] == "version_revoked"
    assert "leaks a token" in gone.json()["detail"]
    assert (await _urls(served))["single"] != old  # the index names the new head

    listed = await served.client.get("/v1/workspaces/acme/revocations", headers=served.auth("read"))
    assert [(r["slug"], r["version"], r["kind"]) for r in listed.json()] == [
        ("single", 2, "security")
    ]
    history = await served.client.get(
        "/v1/workspaces/acme/skills/single/history", headers=served.auth("read")
    )
    marks = [(v["number"], v["origin"], v["revoked"]) for v in history.json()["items"]]
    assert marks == [(3, "revocation", False), (2, "edit", True), (1, "edit", False)]

    back = await served.client.post(
        "/v1/workspaces/acme/skills/single/versions/2/unyank", json={}, headers=served.auth("owner")
    )
    assert back.status_code == 200, back.text
    assert back.json()["unyanked_at"] is not None
    assert (await served.client.get(old)).status_code == 200  # immutable, served again
