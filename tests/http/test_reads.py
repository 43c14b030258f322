"""Reads over HTTP: listings, head and pinned manifests, archives (both databases)."""

from __future__ import annotations

import io
import tarfile

import pytest

from registry.domain.model import PackageFile
from tests.http.helpers import SKILLS, form, publish, raw
from tests.support.packages import package


async def test_the_listing_pages_by_slug_and_tags_every_item(served):
    for slug in ("alpha", "bravo", "charlie"):
        assert (await publish(served, slug, package(slug))).status_code == 201
    seen, after = [], None
    while True:
        params = {"limit": 2, **({"after": after} if after else {})}
        r = await served.client.get(SKILLS, params=params, headers=served.auth("read"))
        assert r.status_code == 200
        page = r.json()
        seen += page["items"]
        after = page["next_after"]
        if after is None:
            break
    assert [i["slug"] for i in seen] == ["alpha", "bravo", "charlie"]
    for item in seen:
        r = await served.client.get(f"{SKILLS}/{item['slug']}", headers=served.auth("read"))
        assert r.headers["etag"] == item["etag"]


async def test_agents_are_separate_scopes(served):
    files = package("agented")
    parts_headers = {"If-None-Match": "*", **served.auth("write")}

    parts, data = form(files)
    r = await served.client.put(
        f"{SKILLS}/agented",
        params={"agent": "bot-1"},
        files=parts,
        data=data,
        headers=parts_headers,
    )
    assert r.status_code == 201
    assert r.headers["location"].endswith("?agent=bot-1")
    assert (
        await served.client.get(f"{SKILLS}/agented", headers=served.auth("read"))
    ).status_code == 404
    r = await served.client.get(
        f"{SKILLS}/agented", params={"agent": "bot-1"}, headers=served.auth("read")
    )
    assert r.status_code == 200
    assert r.json()["agent"] == "bot-1"


@pytest.mark.both_databases
async def test_pinned_versions_and_the_head(served):
    v1, v2 = package("pinned", tag="1"), package("pinned", tag="2")
    assert (await publish(served, "pinned", v1)).status_code == 201
    tag1 = (await served.client.get(f"{SKILLS}/pinned", headers=served.auth("read"))).headers[
        "etag"
    ]
    assert (await publish(served, "pinned", v2, headers={"If-Match": tag1})).status_code == 200
    r = await served.client.get(f"{SKILLS}/pinned/versions/1", headers=served.auth("read"))
    assert r.status_code == 200
    assert r.json()["version"] == 1
    assert r.json()["head"] == 2
    assert r.headers["etag"] == tag1  # the version's own tag (it was the head's)
    r = await served.client.get(f"{SKILLS}/pinned/versions/3", headers=served.auth("read"))
    assert r.status_code == 404
    assert r.json()["code"] == "version_not_found"
    r = await served.client.get(f"{SKILLS}/nothing-here", headers=served.auth("read"))
    assert r.status_code == 404
    assert r.json()["code"] == "skill_not_found"


@pytest.mark.both_databases
async def test_the_archive_is_the_package_byte_for_byte_and_reproducible(served):
    files = package("archived", files=4, size=70_000)
    files["deep/er/still/file.txt"] = PackageFile(b"deep\n", executable=False)
    assert (await publish(served, "archived", files)).status_code == 201
    first = await served.client.get(f"{SKILLS}/archived/archive", headers=served.auth("read"))
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/gzip"
    second = await served.client.get(
        f"{SKILLS}/archived/archive", params={"version": 1}, headers=served.auth("read")
    )
    assert second.content == first.content
    with tarfile.open(fileobj=io.BytesIO(first.content), mode="r:gz") as tar:
        members = tar.getmembers()
        got = {m.name: (tar.extractfile(m).read(), bool(m.mode & 0o100)) for m in members}
    want = {
        f"archived/{p}": (raw(v), isinstance(v, PackageFile) and v.executable)
        for p, v in files.items()
    }
    assert got == want
    assert all(m.isreg() and m.uid == 0 for m in members)


async def test_bad_names_are_400_and_bad_versions_422(served):
    r = await served.client.get(
        f"{SKILLS}/x", params={"agent": "-bad"}, headers=served.auth("read")
    )
    assert r.status_code == 422  # the agent parameter fails its pattern
    r = await served.client.get(f"{SKILLS}/x/versions/0", headers=served.auth("read"))
    assert r.status_code == 422
    assert r.json()["code"] == "request_invalid"
