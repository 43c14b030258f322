"""Versioned discovery and the older layout over HTTP, as clients resolve and fetch them.

`versions.json` lists the snapshots; `v{N}.0.0/index.json` serves one, byte for byte the
same after the scope moved on, its URLs resolved against its own URL (RFC 3986) to the
artifacts it named. The older layout (`/.well-known/skills/`) lists each skill's files
and serves them where the npm `skills` client asks for them. Access is the index's.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urljoin

import pytest

from registry.settings import Settings
from tests.support.packages import package, publish, skill_md
from tests.support.scopes import ACME

PREFIX = "/discovery/acme/personal/.well-known"
SINGLE = {"SKILL.md": skill_md("single", "One file only.")}


@pytest.fixture
async def served(serve):
    return await serve(settings=Settings(discovery_root=ACME.workspace))


async def _setup(served, *, public: bool = True) -> None:
    await publish(served.registry, "single", SINGLE)
    await publish(served.registry, "multi", package("multi"))
    await served.registry.discovery.update(ACME, actor="owner", everything=True, public=public)


async def _resolved(served, document_url: str, headers=None) -> dict[str, str]:
    """Every entry's artifact, resolved against `document_url` and checked: name -> digest."""
    response = await served.client.get(document_url, headers=headers)
    assert response.status_code == 200, response.text
    digests = {}
    for entry in response.json()["skills"]:
        artifact = await served.client.get(urljoin(document_url, entry["url"]), headers=headers)
        assert artifact.status_code == 200, entry
        assert entry["digest"] == f"sha256:{hashlib.sha256(artifact.content).hexdigest()}"
        digests[entry["name"]] = entry["digest"]
    return digests


@pytest.mark.parametrize("base", ["/.well-known", PREFIX], ids=["root", "prefix"])
async def test_a_snapshot_stays_byte_for_byte_and_resolves_to_what_it_named(served, base):
    await _setup(served)
    index = await served.client.get(f"{served.url}{base}/agent-skills/index.json")
    assert [e["version"] for e in index.json()["skills"]] == ["1.0.0", "1.0.0"]
    versions = (await served.client.get(f"{base}/agent-skills/versions.json")).json()
    assert versions == {"latest": "1.0.0", "versions": ["1.0.0"]}
    first_url = f"{served.url}{base}/agent-skills/v1.0.0/index.json"
    first = await served.client.get(first_url)
    assert first.headers["cache-control"] == "public, max-age=86400, immutable"
    assert [e["digest"] for e in first.json()["skills"]] == [
        e["digest"] for e in index.json()["skills"]
    ]
    digests = await _resolved(served, first_url)

    await publish(served.registry, "multi", package("multi", tag="v2"), 1)
    moved = (await served.client.get(f"{base}/agent-skills/index.json")).json()
    assert {e["name"]: e["version"] for e in moved["skills"]} == {
        "multi": "2.0.0",
        "single": "1.0.0",
    }
    versions = (await served.client.get(f"{base}/agent-skills/versions.json")).json()
    assert versions == {"latest": "2.0.0", "versions": ["1.0.0", "2.0.0"]}
    again = await served.client.get(first_url)
    assert again.content == first.content
    assert await _resolved(served, first_url) == digests
    assert (
        await served.client.get(first_url, headers={"If-None-Match": first.headers["etag"]})
    ).status_code == 304
    second = await _resolved(served, f"{served.url}{base}/agent-skills/v2.0.0/index.json")
    assert second["multi"] != digests["multi"]
    assert second["single"] == digests["single"]


async def test_a_private_scope_serves_its_versions_and_older_layout_to_its_tokens(served):
    await _setup(served, public=False)
    token = served.auth("read")
    await served.client.get(f"{PREFIX}/agent-skills/index.json", headers=token)
    for path in (
        f"{PREFIX}/agent-skills/versions.json",
        f"{PREFIX}/agent-skills/v1.0.0/index.json",
        "/.well-known/agent-skills/v1.0.0/index.json",
        f"{PREFIX}/skills/index.json",
        f"{PREFIX}/skills/single/SKILL.md",
        "/.well-known/skills/single/SKILL.md",
    ):
        assert (await served.client.get(path)).status_code == 401, path
        other = await served.client.get(path, headers=served.auth("read", other=True))
        assert other.status_code == 404, path
        mine = await served.client.get(path, headers=token)
        assert mine.status_code == 200, path
        assert mine.headers["cache-control"].startswith("private")
        assert mine.headers["vary"] == "Authorization"


@pytest.mark.parametrize("base", ["/.well-known", PREFIX], ids=["root", "prefix"])
async def test_the_older_layout_lists_each_file_where_the_client_fetches_it(served, base):
    await _setup(served)
    unsafe = {"SKILL.md": skill_md("odd", "A file name a client refuses."), "a..b.md": b"x\n"}
    await publish(served.registry, "odd", unsafe)
    document = (await served.client.get(f"{base}/skills/index.json")).json()
    assert "$schema" not in document
    multi = package("multi")
    assert document["skills"] == [
        {"name": "multi", "description": "Does a useful thing for tests.", "files": sorted(multi)},
        {"name": "single", "description": "One file only.", "files": ["SKILL.md"]},
    ]
    for path, data in multi.items():
        # The client's URL: the index's base, `/.well-known/skills/<name>/<path>`.
        response = await served.client.get(f"{base}/skills/multi/{path}")
        assert response.status_code == 200, path
        assert response.content == getattr(data, "data", data)
        assert response.headers["cache-control"] == "public, no-cache"
    await publish(served.registry, "multi", package("multi", tag="v2"), 1)
    response = await served.client.get(f"{base}/skills/multi/SKILL.md")
    assert response.content == package("multi", tag="v2")["SKILL.md"]
    assert (await served.client.get(f"{base}/skills/odd/SKILL.md")).status_code == 200
    assert (await served.client.get(f"{base}/skills/multi/missing.md")).status_code == 404
