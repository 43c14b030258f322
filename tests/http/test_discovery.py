"""The discovery index over HTTP: where clients look, what they get, and who may look.

Every artifact URL of an index is resolved as a client resolves it (RFC 3986, against the
index's own URL) and fetched: its bytes hash to the entry's digest, a zip's files are the
package (the registry's archive reader says so), a `SKILL.md` is the stored file.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urljoin

import pytest

from registry.domain.archive import read_archive
from registry.domain.discovery import SCHEMA
from registry.domain.model import PackageFile
from registry.http.preconditions import entity_tag
from registry.settings import Settings
from tests.support.packages import package, publish, skill_md
from tests.support.scopes import ACME, GLOBEX

ROOT_INDEX = "/.well-known/agent-skills/index.json"
INDEX = "/discovery/acme/personal/.well-known/agent-skills/index.json"
SINGLE = {"SKILL.md": skill_md("single", "One file only.")}
MULTI = {**package("multi"), "references/caf\u00e9.md": "d\u00e9j\u00e0\n".encode()}


@pytest.fixture
async def served(serve):
    return await serve(settings=Settings(discovery_root=ACME.workspace))


async def _setup(served, *, public: bool = True) -> None:
    await publish(served.registry, "single", SINGLE)
    await publish(served.registry, "multi", MULTI)
    await served.registry.discovery.update(ACME, actor="owner", everything=True, public=public)


async def _fetch_all(served, index_path: str, headers=None) -> dict[str, bytes]:
    """Every artifact of the index, fetched as a client would, checked against its digest."""
    index_url = served.url + index_path
    response = await served.client.get(index_url, headers=headers)
    assert response.status_code == 200, response.text
    document = response.json()
    assert document["$schema"] == SCHEMA
    fetched = {}
    for entry in document["skills"]:
        url = urljoin(index_url, entry["url"])
        artifact = await served.client.get(url, headers=headers)
        assert artifact.status_code == 200, (url, artifact.text)
        assert entry["digest"] == f"sha256:{hashlib.sha256(artifact.content).hexdigest()}"
        assert "immutable" in artifact.headers["cache-control"]
        fetched[entry["name"]] = artifact.content
    return fetched


def _files(files) -> dict[str, PackageFile]:
    return {p: v if isinstance(v, PackageFile) else PackageFile(v) for p, v in files.items()}


async def test_the_host_root_and_the_scope_prefix_serve_the_same_artifacts(served):
    await _setup(served)
    from_root = await _fetch_all(served, ROOT_INDEX)
    assert from_root == await _fetch_all(served, INDEX)
    assert from_root["single"] == SINGLE["SKILL.md"]
    assert read_archive(from_root["multi"]).files == _files(MULTI)


async def test_entries_follow_the_schema_and_name_a_version(served):
    await _setup(served)
    document = (await served.client.get(INDEX)).json()
    info = await served.registry.package_info(ACME, "multi")
    tag = entity_tag(info.skill_id, 1, info.manifest_hash).strip('"')
    assert document["skills"][0] == {
        "name": "multi",
        "version": "1.0.0",
        "type": "archive",
        "description": "Does a useful thing for tests.",
        "url": f"multi/{tag}.zip",
        "digest": document["skills"][0]["digest"],
    }
    assert document["skills"][1]["type"] == "skill-md"
    assert document["skills"][1]["url"].endswith("/SKILL.md")
    root = (await served.client.get(ROOT_INDEX)).json()
    assert (
        root["skills"][0]["url"]
        == f"../../discovery/acme/personal/.well-known/agent-skills/multi/{tag}.zip"
    )


async def test_the_index_revalidates_and_changes_with_a_new_head(served):
    await _setup(served)
    first = await served.client.get(INDEX)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, no-cache"
    again = await served.client.get(INDEX, headers={"If-None-Match": etag})
    assert again.status_code == 304
    head = await served.client.head(INDEX)
    assert (head.status_code, head.headers["etag"], head.content) == (200, etag, b"")
    assert head.headers["content-length"] == str(len(first.content))
    await publish(served.registry, "multi", package("multi", tag="v2"), 1)
    changed = await served.client.get(INDEX, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag
    # The old version's URL still answers its own bytes.
    old = urljoin(served.url + INDEX, first.json()["skills"][0]["url"])
    assert read_archive((await served.client.get(old)).content).files == _files(MULTI)


async def test_artifacts_are_immutable_and_answer_conditional_requests(served):
    await _setup(served)
    document = (await served.client.get(INDEX)).json()
    url = urljoin(served.url + INDEX, document["skills"][0]["url"])
    response = await served.client.get(url)
    etag = response.headers["etag"]
    assert etag == f'"{document["skills"][0]["digest"]}"'
    assert response.headers["content-type"] == "application/zip"
    # A day by default: a cache may keep an unpublished artifact that long, no longer.
    assert response.headers["cache-control"] == "public, max-age=86400, immutable"
    assert response.headers["repr-digest"].startswith("sha-256=:")
    assert (await served.client.get(url, headers={"If-None-Match": etag})).status_code == 304
    head = await served.client.head(url)
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == str(len(response.content))
    skill_url = urljoin(served.url + INDEX, document["skills"][1]["url"])
    markdown = await served.client.get(skill_url)
    assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
    assert markdown.headers["x-content-type-options"] == "nosniff"


async def test_how_long_a_cache_keeps_an_artifact_is_a_setting(serve):
    served = await serve(settings=Settings(discovery_max_age=600))
    await _setup(served)
    document = (await served.client.get(INDEX)).json()
    for entry in document["skills"]:
        artifact = await served.client.get(urljoin(served.url + INDEX, entry["url"]))
        assert artifact.headers["cache-control"] == "public, max-age=600, immutable"


async def test_any_file_of_a_published_version_by_its_path(served):
    await _setup(served)
    info = await served.registry.package_info(ACME, "multi")
    tag = entity_tag(info.skill_id, 1, info.manifest_hash).strip('"')
    base = f"/discovery/acme/personal/.well-known/agent-skills/multi/{tag}"
    script = await served.client.get(f"{base}/scripts/run.py")
    assert script.content == MULTI["scripts/run.py"].data
    assert script.headers["content-type"] == "application/octet-stream"
    notes = await served.client.get(f"{base}/references/caf%C3%A9.md")
    assert notes.content == MULTI["references/caf\u00e9.md"]
    assert (await served.client.get(f"{base}/references/none.md")).status_code == 404


async def test_a_url_names_one_skill_forever(served):
    await _setup(served)
    document = (await served.client.get(INDEX)).json()
    url = urljoin(served.url + INDEX, document["skills"][1]["url"])
    await served.registry.delete(ACME, "single", actor="owner")
    assert (await served.client.get(url)).status_code == 404
    # Created again, version 1 again: another skill, other URLs; the old one stays 404.
    await publish(served.registry, "single", {"SKILL.md": skill_md("single", "Other text.")})
    assert (await served.client.get(url)).status_code == 404
    # The scope publishes everything: the new skill is listed, under a URL of its own.
    entry = (await served.client.get(INDEX)).json()["skills"][1]
    fresh = urljoin(served.url + INDEX, entry["url"])
    assert fresh != url
    assert (await served.client.get(fresh)).content == skill_md("single", "Other text.")


async def test_unpublished_and_unknown_paths_are_404(served):
    await _setup(served)
    await publish(served.registry, "hidden", package("hidden"))
    await served.registry.discovery.update(ACME, actor="owner", everything=False, skills=["single"])
    info = await served.registry.package_info(ACME, "hidden")
    tag = entity_tag(info.skill_id, 1, info.manifest_hash).strip('"')
    base = "/discovery/acme/personal/.well-known/agent-skills"
    for path in (
        f"{base}/hidden/{tag}.zip",
        f"{base}/hidden/{tag}/SKILL.md",
        f"{base}/single/{tag}.zip",
        "/.well-known/skills/hidden/SKILL.md",
        f"{base}/v9.0.0/index.json",
        f"{base}/v1.2.0/index.json",
        "/discovery/acme/helper/.well-known/agent-skills/index.json",
    ):
        response = await served.client.get(path, headers=served.auth("read"))
        assert response.status_code == 404, path


async def test_the_root_serves_nothing_unless_configured(serve):
    plain = await serve()
    await _setup(plain)
    assert (await plain.client.get(ROOT_INDEX)).status_code == 404
    assert (await plain.client.get(INDEX)).status_code == 200


async def test_a_private_scope_needs_a_token_of_its_workspace(served):
    await _setup(served, public=False)
    for path in (ROOT_INDEX, INDEX):
        anonymous = await served.client.get(path)
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"].startswith("Bearer")
        other = await served.client.get(path, headers=served.auth("read", other=True))
        assert (other.status_code, other.json()["code"]) == (404, "not_found")
    fetched = await _fetch_all(served, INDEX, headers=served.auth("read"))
    assert set(fetched) == {"multi", "single"}
    response = await served.client.get(INDEX, headers=served.auth("read"))
    assert response.headers["cache-control"] == "private, no-cache"
    assert response.headers["vary"] == "Authorization"
    document = response.json()
    url = urljoin(served.url + INDEX, document["skills"][0]["url"])
    assert (await served.client.get(url)).status_code == 401
    assert (
        await served.client.get(url, headers=served.auth("read", other=True))
    ).status_code == 404


async def test_without_a_token_a_missing_scope_looks_like_a_private_one(served):
    assert (await served.client.get(INDEX)).status_code == 401
    assert (await served.client.get(INDEX, headers=served.auth("read"))).status_code == 404


async def test_a_public_scope_serves_anyone_but_only_itself(served):
    await _setup(served)
    await publish(served.registry, "theirs", package("theirs"), scope=GLOBEX)
    other = "/discovery/globex/personal/.well-known/agent-skills/index.json"
    assert (await served.client.get(other)).status_code == 401
    await served.registry.discovery.update(GLOBEX, actor="owner", everything=True, public=True)
    theirs = (await served.client.get(other)).json()
    assert [e["name"] for e in theirs["skills"]] == ["theirs"]


SETTINGS = "/v1/workspaces/acme/discovery"


async def test_settings_are_read_and_replaced_conditionally(served):
    await publish(served.registry, "single", SINGLE)
    owner = served.auth("owner")
    read = await served.client.get(SETTINGS, headers=owner)
    assert (read.json()["enabled"], read.headers["etag"]) == (False, '"0"')
    body = {"skills": ["single"], "public": True}
    assert (await served.client.put(SETTINGS, json=body, headers=owner)).status_code == 428
    created = await served.client.put(SETTINGS, json=body, headers={**owner, "If-None-Match": "*"})
    assert created.status_code == 200, created.text
    assert created.headers["etag"] == '"1"'
    view = created.json()
    assert (view["skills"], view["public"], view["everything"]) == (["single"], True, False)
    assert view["index"] == INDEX
    again = await served.client.put(SETTINGS, json=body, headers={**owner, "If-None-Match": "*"})
    assert again.status_code == 412
    stale = await served.client.put(SETTINGS, json={}, headers={**owner, "If-Match": '"7"'})
    assert (stale.status_code, stale.headers["etag"]) == (412, '"1"')
    cleared = await served.client.put(SETTINGS, json={}, headers={**owner, "If-Match": '"1"'})
    assert (cleared.status_code, cleared.json()["skills"], cleared.headers["etag"]) == (
        200,
        [],
        '"2"',
    )
    unknown = await served.client.put(
        SETTINGS, json={"skills": ["nope"]}, headers={**owner, "If-Match": "*"}
    )
    assert (unknown.status_code, unknown.json()["code"]) == (404, "skill_not_found")


async def test_the_advertised_etag_of_unconfigured_settings_is_an_if_match(served):
    await publish(served.registry, "single", SINGLE)
    owner = served.auth("owner")
    read = await served.client.get(SETTINGS, headers=owner)
    assert read.headers["etag"] == '"0"'
    body = {"skills": ["single"]}
    # What a client read before anyone configured the scope is a compare-and-swap on "never
    # configured": it creates the settings once, and is stale after.
    created = await served.client.put(SETTINGS, json=body, headers={**owner, "If-Match": '"0"'})
    assert (created.status_code, created.headers["etag"]) == (200, '"1"'), created.text
    again = await served.client.put(SETTINGS, json=body, headers={**owner, "If-Match": '"0"'})
    assert (again.status_code, again.headers["etag"]) == (412, '"1"')


async def test_if_match_tags_that_are_no_revision_fail_cleanly(served):
    owner = served.auth("owner")
    done = await served.client.put(SETTINGS, json={}, headers={**owner, "If-None-Match": "*"})
    assert done.status_code == 200, done.text
    # A digit of another script (`str.isdigit` says yes, `int` says no), more digits than
    # `int` converts, a number no revision column holds, and no number at all.
    for tag in ('"\u00b2"', f'"{"9" * 5000}"', f'"{2**63}"', '"x1"', '"1.5"'):
        r = await served.client.put(
            SETTINGS, json={}, headers={**owner, "If-Match": tag.encode("latin-1")}
        )
        assert (r.status_code, r.json()["code"], r.headers["etag"]) == (
            412,
            "precondition_failed",
            '"1"',
        ), tag
